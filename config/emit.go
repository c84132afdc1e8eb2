package config

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	"go.yaml.in/yaml/v3"

	"github.com/flow-run/flow/internal/notify"
)

// Emitting is the inverse of loading: Emit writes a loaded workflow as a
// flow file, YAML or HCL, that loads back to an equal model (positions,
// file name and bytes aside). Each block is first gathered into a
// document of keys and values, ordered by the tables of keys.go, and
// then written by one writer per format; so the order of the keys and
// which of them are HCL blocks are declared once, there.
//
// What the loader filled in is written only where leaving it out would
// load differently: a step's needs when the file wrote them or when the
// file-order rule would give others, a step's agent when it is not
// defaults.agent, and no default (feedback: append, max_parallel: 1,
// the signal words, notify.on) that the loader gives anyway. A
// prompt_file is written as its path, relative to the workflow file as
// it was loaded, and not as the prompt read from it. The model keeps
// defaults.notify merged into the workflow's notify, so both are
// written as the workflow's; agents and env are maps, written in the
// order the agents were declared and by name.

// EmitOptions are what Emit writes besides the workflow.
type EmitOptions struct {
	// Header lines are written as comments at the top of the file.
	Header []string
	// StepNotes maps a step id to comment lines written just above that step.
	// The notes of "" are the workflow's own, written after Header, as
	// Workflow.Notes holds them.
	StepNotes map[string][]string
}

// Emit writes w as a flow file in format, "yaml" or "hcl". It fails
// when a note names no step of w, or when for_each's list holds a
// number no file can write (NaN or infinity).
func Emit(w *Workflow, format string, o EmitOptions) ([]byte, error) {
	if format != "yaml" && format != "hcl" {
		return nil, fmt.Errorf("emit workflow %s: unknown format %q (want yaml or hcl)", w.Name, format)
	}
	e := &emitter{w: w, notes: o.StepNotes}
	doc := e.workflow()
	header := slices.Concat(o.Header, o.StepNotes[""])
	for _, id := range slices.Sorted(maps.Keys(o.StepNotes)) {
		if id != "" && w.Step(id) == nil {
			return nil, fmt.Errorf("emit workflow %s: a note names step %q, which the workflow does not have", w.Name, id)
		}
	}
	if format == "yaml" {
		return emitYAML(doc, header)
	}
	return emitHCL(doc, header)
}

// The document is a block of entries, each a key of the block's table
// and its value, one of:
//
//	string       a string (a template's or an expression's source)
//	number       a number, as written
//	bool         true or false
//	[]string     a list of strings
//	[]pair       a mapping of names to strings, in order (vars, env)
//	anyValue     a value of any JSON-compatible shape (for_each's list)
//	*block       a nested block
//	[]*block     named blocks (kindEntries) or a list of blocks (kindItems)
type (
	number   string
	anyValue struct{ v any }
	pair     struct{ k, v string }
	entry    struct {
		key string
		val any
	}
	block struct {
		ks *keySet
		// label is the name of an entry (an agent) or the value of the
		// table's label key (a step's id): an HCL block's label.
		label   string
		entries []entry
		// notes are comment lines written above the block.
		notes []string
	}
)

// add appends an entry; nil, "" and empty lists are left out by the
// callers, which know which zero values are defaults.
func (b *block) add(key string, val any) { b.entries = append(b.entries, entry{key, val}) }

// text adds a string when it is not "".
func (b *block) text(key, v string) {
	if v != "" {
		b.add(key, v)
	}
}

func (b *block) template(key string, t *Template) {
	if t != nil {
		b.add(key, t.Src)
	}
}

func (b *block) expr(key string, x *Expr) {
	if x != nil {
		b.add(key, x.Src)
	}
}

func (b *block) limit(key string, l *Limit) {
	switch {
	case l == nil:
	case l.Expr != nil:
		b.add(key, l.Expr.Src)
	default:
		b.add(key, number(strconv.Itoa(l.N)))
	}
}

func (b *block) duration(key string, d *Duration) {
	switch {
	case d == nil:
	case d.Expr != nil:
		b.add(key, d.Text())
	default:
		b.add(key, durationText(d.D))
	}
}

// sorted orders the entries of b as its table declares its keys; a key
// the table does not declare is a mistake of the emitter.
func (b *block) sorted() *block {
	for _, en := range b.entries {
		if _, ok := b.ks.yIndex[en.key]; !ok {
			panic(fmt.Sprintf("config: emit: the %s table has no key %q", b.ks.what, en.key))
		}
	}
	slices.SortStableFunc(b.entries, func(x, y entry) int { return cmp.Compare(b.ks.yIndex[x.key], b.ks.yIndex[y.key]) })
	return b
}

// emitter gathers the document of a workflow.
type emitter struct {
	w     *Workflow
	notes map[string][]string
}

func (e *emitter) workflow() *block {
	w := e.w
	b := &block{ks: &workflowTable.keySet, label: w.Name}
	b.text("name", w.Name)
	b.text("description", w.Description)
	b.text("compat", w.Compat)
	if len(w.VarOrder) > 0 {
		vars := make([]pair, 0, len(w.VarOrder))
		for _, k := range w.VarOrder {
			vars = append(vars, pair{k, w.Vars[k]})
		}
		b.add("vars", vars)
	}
	if d := e.defaults(); len(d.entries) > 0 {
		b.add("defaults", d)
	}
	if len(w.Agents) > 0 {
		b.add("agents", e.agents())
	}
	b.add("steps", e.steps(w.Steps))
	if w.MaxParallel != DefaultMaxParallel {
		b.add("max_parallel", number(strconv.Itoa(w.MaxParallel)))
	}
	if c := w.Cleanup; c != nil {
		cb := &block{ks: &cleanupTable.keySet}
		cb.template("run", c.Run)
		cb.template("prompt", c.Prompt)
		if c.Agent != w.Defaults.Agent {
			cb.text("agent", c.Agent)
		}
		b.add("cleanup", cb.sorted())
	}
	if s := e.signals(); len(s.entries) > 0 {
		b.add("signals", s)
	}
	if s := e.secrets(); len(s) > 0 {
		b.add("secrets", s)
	}
	if w.Budget != nil {
		b.add("budget", budgetBlock(w.Budget))
	}
	if w.Notify != nil {
		b.add("notify", notifyBlock(w.Notify))
	}
	if ws := workspaceValue(w.Workspace); ws != nil {
		b.add("workspace", ws)
	}
	return b.sorted()
}

// workspaceValue writes a workspace as the word worktree when it gives
// nothing else, else as a block; nil for a shared one.
func workspaceValue(w *Workspace) any {
	if !w.Worktree() {
		return nil
	}
	b := &block{ks: &workspaceTable.keySet}
	b.text("base", w.Base)
	b.text("root", w.Root)
	if w.Keep != KeepOnFailure {
		b.text("keep", w.Keep)
	}
	b.template("setup", w.Setup)
	if len(w.Copy) > 0 {
		b.add("copy", append([]string{}, w.Copy...))
	}
	if len(b.entries) == 0 {
		return w.Mode
	}
	return b.sorted()
}

func mergeBlock(m *Merge) *block {
	b := &block{ks: &mergeTable.keySet}
	if m.Mode != MergeAuto {
		b.text("mode", m.Mode)
	}
	b.text("loop_back_to", m.LoopBackTo)
	b.limit("max_iterations", m.MaxIterations)
	return b.sorted()
}

func (e *emitter) defaults() *block {
	d := &e.w.Defaults
	b := &block{ks: &defaultsTable.keySet}
	b.limit("max_attempts", d.MaxAttempts)
	b.limit("max_iterations", d.MaxIterations)
	b.duration("timeout", d.Timeout)
	b.duration("idle_timeout", d.IdleTimeout)
	b.text("sandbox", d.Sandbox)
	b.text("agent", d.Agent)
	if d.Retry != nil {
		b.add("retry", retryBlock(d.Retry))
	}
	for _, s := range []struct {
		key string
		n   int64
	}{{"prompt_limit", d.Limits.Prompt}, {"command_limit", d.Limits.Command}, {"report_limit", d.Limits.Report}, {"log_limit", d.Limits.Log}} {
		if s.n > 0 {
			b.add(s.key, sizeOf(s.n))
		}
	}
	if d.Limits.MaxItems > 0 {
		b.add("max_items", number(strconv.Itoa(d.Limits.MaxItems)))
	}
	if r := d.Retention; r != nil {
		rb := &block{ks: &retentionTable.keySet}
		if r.Keep > 0 {
			rb.add("keep", number(strconv.Itoa(r.Keep)))
		}
		if r.OlderThan > 0 {
			rb.add("older_than", durationText(r.OlderThan))
		}
		b.add("retention", rb.sorted())
	}
	return b.sorted()
}

// agents writes the agents in the order they were declared (by their
// positions), then by name.
func (e *emitter) agents() []*block {
	list := slices.SortedFunc(maps.Values(e.w.Agents), func(x, y *Agent) int {
		return cmp.Or(cmp.Compare(x.Pos.Line, y.Pos.Line), cmp.Compare(x.Pos.Col, y.Pos.Col), cmp.Compare(x.Name, y.Name))
	})
	out := make([]*block, 0, len(list))
	for _, a := range list {
		b := &block{ks: &agentTable.keySet, label: a.Name}
		b.template("run", a.Run)
		b.text("preset", a.Preset)
		b.text("model", a.Model)
		if len(a.Args) > 0 {
			b.add("args", a.Args)
		}
		if a.Preset != "" && !a.Resume {
			b.add("resume", false)
		}
		if p := a.Price; p != nil {
			pb := &block{ks: &priceTable.keySet}
			for _, f := range []struct {
				key string
				v   float64
			}{{"input_per_mtok", p.InputPerMTok}, {"output_per_mtok", p.OutputPerMTok}, {"cached_per_mtok", p.CachedPerMTok}} {
				if f.v != 0 {
					pb.add(f.key, floatText(f.v))
				}
			}
			if len(pb.entries) == 0 {
				pb.add("input_per_mtok", number("0"))
			}
			b.add("price", pb)
		}
		if env := envPairs(a.Env); len(env) > 0 {
			b.add("env", env)
		}
		out = append(out, b.sorted())
	}
	return out
}

// steps writes the steps of the top level or of a loop's body.
func (e *emitter) steps(list []*Step) []*block {
	out := make([]*block, 0, len(list))
	for i, s := range list {
		var before *Step
		if i > 0 {
			before = list[i-1]
		}
		out = append(out, e.step(s, before))
	}
	return out
}

func (e *emitter) step(s *Step, before *Step) *block {
	b := &block{ks: &stepTable.keySet, label: s.ID, notes: e.notes[s.ID]}
	b.add("id", s.ID)
	b.text("description", s.Description())
	if s.Feedback != "" && s.Feedback != "append" {
		b.add("feedback", s.Feedback)
	}
	b.template("run", s.Run)
	if s.PromptFile() != "" {
		b.add("prompt_file", s.PromptFile())
	} else {
		b.template("prompt", s.Prompt)
	}
	if s.Agent != e.w.Defaults.Agent {
		b.text("agent", s.Agent)
	}
	e.extra(b, s)
	if h := s.Human; h != nil {
		b.add("human", humanBlock(h))
	}
	if s.NeedsSet() || !slices.Equal(s.Needs, impliedNeeds(s, before)) {
		b.add("needs", append([]string{}, s.Needs...))
	}
	b.expr("when", s.When)
	if g := s.Gate; g != nil {
		b.add("gate", gateBlock(g))
	}
	b.text("loop_back_to", s.LoopBackTo())
	b.limit("max_attempts", s.MaxAttempts)
	b.limit("max_iterations", s.MaxIterations)
	if s.Retry != nil {
		b.add("retry", retryBlock(s.Retry))
	}
	b.expr("retry_if", s.RetryIf)
	b.duration("timeout", s.Timeout)
	b.duration("idle_timeout", s.IdleTimeout)
	b.text("sandbox", s.Sandbox)
	if len(s.Artifacts) > 0 {
		arts := make([]string, 0, len(s.Artifacts))
		for _, a := range s.Artifacts {
			arts = append(arts, a.Src)
		}
		b.add("artifacts", arts)
	}
	if env := envPairs(s.Env); len(env) > 0 {
		b.add("env", env)
	}
	if fe := s.ForEach; fe != nil {
		if fe.Items != nil {
			b.add("for_each", fe.Items.Src)
		} else {
			b.add("for_each", anyValue{fe.List})
		}
		if fe.As != "item" {
			b.text("as", fe.As)
		}
		if fe.IndexAs != "index" {
			b.text("index_as", fe.IndexAs)
		}
		b.expr("key", fe.Key)
		if fe.MaxParallel != 1 {
			b.add("max_parallel", number(strconv.Itoa(fe.MaxParallel)))
		}
		if fe.MaxItems > 0 {
			b.add("max_items", number(strconv.Itoa(fe.MaxItems)))
		}
		if fe.ContinueOnError {
			b.add("continue_on_error", true)
		}
		if fe.Merge != nil {
			b.add("merge", mergeBlock(fe.Merge))
		}
		b.add("steps", e.steps(fe.Body))
	}
	if s.Budget != nil {
		b.add("budget", budgetBlock(s.Budget))
	}
	if ws := workspaceValue(s.Workspace); ws != nil {
		b.add("workspace", ws)
	}
	return b.sorted()
}

// extra writes the keys of a step given to an agent: where to find its
// prompt when it starts, its model, its metadata and the gates of the
// gate-state file it waits on.
func (e *emitter) extra(b *block, s *Step) {
	b.text("prompt_path", s.PromptPath)
	b.text("model", s.Model)
	if s.Metadata() != nil {
		b.add("metadata", anyValue{s.Metadata()})
	}
	if len(s.Gates()) > 0 {
		b.add("external_gates", append([]string{}, s.Gates()...))
	}
}

// impliedNeeds is what a step without needs depends on: its reviewers
// for a pair review, else the step before it in its list.
func impliedNeeds(s, before *Step) []string {
	switch {
	case s.Kind == KindConsensus && s.Gate != nil:
		return append([]string{}, s.Gate.Reviewers...)
	case before != nil:
		return []string{before.ID}
	}
	return []string{}
}

func humanBlock(h *Human) *block {
	b := &block{ks: &humanTable.keySet}
	b.template("message", h.Message)
	if len(h.Inputs) > 0 {
		inputs := make([]*block, 0, len(h.Inputs))
		for _, in := range h.Inputs {
			ib := &block{ks: &inputTable.keySet, label: in.Name}
			ib.add("name", in.Name)
			ib.text("description", in.Description)
			if in.Required {
				ib.add("required", true)
			}
			ib.text("default", in.Default)
			inputs = append(inputs, ib.sorted())
		}
		b.add("inputs", inputs)
	}
	b.duration("timeout", h.Timeout)
	b.expr("auto_approve", h.AutoApprove)
	if h.AnyFile {
		b.add("any_file", true)
	}
	return b.sorted()
}

func gateBlock(g *Gate) *block {
	b := &block{ks: &gateTable.keySet}
	b.expr("pass", g.Pass)
	b.expr("fail", g.Fail)
	b.template("check", g.Check)
	b.text("loop_back_to", g.LoopBackTo)
	b.limit("max_iterations", g.MaxIterations)
	if len(g.Reviewers) > 0 {
		b.add("reviewers", append([]string{}, g.Reviewers...))
		if g.Consensus != ConsensusAll {
			b.text("consensus", g.Consensus)
		}
	}
	return b.sorted()
}

func retryBlock(r *Retry) *block {
	b := &block{ks: &retryTable.keySet}
	if r.Backoff > 0 {
		b.add("backoff", durationText(r.Backoff))
	}
	if r.MaxBackoff > 0 {
		b.add("max_backoff", durationText(r.MaxBackoff))
	}
	if r.Jitter {
		b.add("jitter", true)
	}
	return b.sorted()
}

func budgetBlock(bu *Budget) *block {
	b := &block{ks: &budgetTable.keySet}
	if bu.CostUSD > 0 {
		b.add("cost_usd", floatText(bu.CostUSD))
	}
	if bu.Tokens > 0 {
		b.add("tokens", number(strconv.FormatInt(bu.Tokens, 10)))
	}
	if bu.Sessions > 0 {
		b.add("sessions", number(strconv.Itoa(bu.Sessions)))
	}
	if bu.DailyCostUSD > 0 {
		b.add("daily_cost_usd", floatText(bu.DailyCostUSD))
	}
	return b.sorted()
}

// notifyBlock writes the workflow's notify: the model holds the
// defaults' and the workflow's merged, which the workflow's alone says.
func notifyBlock(n *Notify) *block {
	b := &block{ks: &notifyTable.keySet}
	if !slices.Equal(n.On, DefaultNotifyOn) {
		b.add("on", append([]string{}, n.On...))
	}
	b.text("command", n.Command)
	b.text("webhook", n.Webhook)
	if n.Timeout != DefaultNotifyTimeout && n.Timeout > 0 {
		b.add("timeout", durationText(n.Timeout))
	}
	return b.sorted()
}

// signals writes the words that are not the defaults.
func (e *emitter) signals() *block {
	s := e.w.Signals
	b := &block{ks: &signalsTable.keySet}
	for _, f := range []struct{ key, v, def string }{{"done", s.Done, "DONE"}, {"pass", s.Pass, "PASS"}, {"fail", s.Fail, "FAIL"}} {
		if f.v != f.def {
			b.text(f.key, f.v)
		}
	}
	return b.sorted()
}

// secrets returns the secrets to declare: Workflow.Secrets less those
// the loader adds after them anyway, the variables a webhook reads.
func (e *emitter) secrets() []string {
	all := e.w.Secrets
	var hooked []string
	if e.w.Notify != nil {
		hooked, _ = notify.WebhookVars(e.w.Notify.Webhook)
	}
	for k := 0; k < len(all); k++ {
		declared := slices.Clone(all[:k])
		got := declared
		for _, v := range hooked {
			if !IsSecretName(v, got) {
				got = append(got, v)
			}
		}
		if slices.Equal(got, all) {
			return declared
		}
	}
	return slices.Clone(all)
}

// envPairs orders a map of environment variables by name.
func envPairs(env map[string]*Template) []pair {
	out := make([]pair, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, pair{k, env[k].Src})
	}
	return out
}

// durationText writes a constant duration in Go's notation without the
// zero units it ends with: 30m, not 30m0s.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// sizeOf writes a size in the largest binary unit that divides it, or
// as a number of bytes.
func sizeOf(n int64) any {
	for _, u := range []struct {
		name string
		n    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.name
		}
	}
	return number(strconv.FormatInt(n, 10))
}

func floatText(f float64) number { return number(strconv.FormatFloat(f, 'f', -1, 64)) }

// The YAML writer builds the document as YAML nodes and lets the yaml
// package quote each string as it needs.

func emitYAML(doc *block, header []string) ([]byte, error) {
	root, err := yamlBlock(doc)
	if err != nil {
		return nil, err
	}
	d := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
	d.HeadComment = commentText(header)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("emit workflow %s as YAML: %w", doc.label, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("emit workflow %s as YAML: %w", doc.label, err)
	}
	return buf.Bytes(), nil
}

// commentText gives comment lines as the yaml package writes them.
func commentText(lines []string) string {
	var out []string
	for _, l := range lines {
		l = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(l)
		for _, l := range strings.Split(l, "\n") {
			l = strings.TrimRight(strings.Map(commentRune, l), " \t")
			if l == "" {
				out = append(out, "#")
				continue
			}
			out = append(out, "# "+l)
		}
	}
	return strings.Join(out, "\n")
}

// commentRune keeps a character of a comment, or replaces one that no
// comment may hold.
func commentRune(r rune) rune {
	if r < 0x20 && r != '\t' || r == 0x7f || r == 0xfeff {
		return '\ufffd'
	}
	return r
}

func yamlKey(k string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: k} }

func yamlString(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.Contains(s, "\n") {
		n.Style = yaml.LiteralStyle
	}
	return n
}

func yamlNumber(s string) *yaml.Node {
	tag := "!!float"
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		tag = "!!int"
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s}
}

func yamlBlock(b *block) (*yaml.Node, error) {
	m := &yaml.Node{Kind: yaml.MappingNode, HeadComment: commentText(b.notes)}
	for _, en := range b.entries {
		v, err := yamlValueOf(en.val)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", en.key, err)
		}
		m.Content = append(m.Content, yamlKey(en.key), v)
	}
	return m, nil
}

func yamlValueOf(val any) (*yaml.Node, error) {
	switch v := val.(type) {
	case string:
		return yamlString(v), nil
	case number:
		return yamlNumber(string(v)), nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}, nil
	case []string:
		l := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, s := range v {
			l.Content = append(l.Content, yamlString(s))
		}
		return l, nil
	case []pair:
		m := &yaml.Node{Kind: yaml.MappingNode}
		for _, p := range v {
			m.Content = append(m.Content, yamlString(p.k), yamlString(p.v))
		}
		return m, nil
	case anyValue:
		return yamlLiteral(v.v)
	case *block:
		return yamlBlock(v)
	case []*block:
		if len(v) > 0 && v[0].ks.label < 0 {
			// Named blocks (agents): a mapping of names to blocks.
			m := &yaml.Node{Kind: yaml.MappingNode}
			for _, b := range v {
				bn, err := yamlBlock(b)
				if err != nil {
					return nil, err
				}
				m.Content = append(m.Content, yamlString(b.label), bn)
			}
			return m, nil
		}
		l := &yaml.Node{Kind: yaml.SequenceNode}
		for _, b := range v {
			bn, err := yamlBlock(b)
			if err != nil {
				return nil, err
			}
			l.Content = append(l.Content, bn)
		}
		return l, nil
	}
	return nil, fmt.Errorf("cannot write a %T", val)
}

// yamlLiteral writes a JSON-compatible value; a list of scalars is
// written on one line, anything else in blocks.
func yamlLiteral(v any) (*yaml.Node, error) {
	switch x := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	case string:
		return yamlString(x), nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("cannot write the number %v", x)
		}
		return yamlNumber(strconv.FormatFloat(x, 'g', -1, 64)), nil
	case []any:
		l := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, item := range x {
			n, err := yamlLiteral(item)
			if err != nil {
				return nil, err
			}
			if n.Kind != yaml.ScalarNode || n.Style == yaml.LiteralStyle {
				l.Style = 0
			}
			l.Content = append(l.Content, n)
		}
		return l, nil
	case map[string]any:
		m := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			n, err := yamlLiteral(x[k])
			if err != nil {
				return nil, err
			}
			m.Content = append(m.Content, yamlString(k), n)
		}
		return m, nil
	}
	return nil, fmt.Errorf("cannot write a %T", v)
}

// The HCL writer writes each block's attributes and then its blocks,
// each in the order of its table, and lets hclwrite align the result.

func emitHCL(doc *block, header []string) ([]byte, error) {
	h := &hclWriter{}
	for _, l := range strings.Split(commentText(header), "\n") {
		if l != "" {
			h.line(l)
		}
	}
	if len(header) > 0 {
		h.buf.WriteByte('\n')
	}
	if err := h.body(doc, true); err != nil {
		return nil, fmt.Errorf("emit workflow %s as HCL: %w", doc.label, err)
	}
	return hclwrite.Format(h.buf.Bytes()), nil
}

type hclWriter struct {
	buf    bytes.Buffer
	indent int
}

func (h *hclWriter) line(s string) {
	h.buf.WriteString(strings.Repeat("  ", h.indent))
	h.buf.WriteString(s)
	h.buf.WriteByte('\n')
}

// hclName is the HCL name of the key of a table, and whether the key is
// an HCL block label.
func hclName(ks *keySet, key string) (string, bool) {
	i := ks.yIndex[key]
	if i == ks.label {
		return "", true
	}
	for h, j := range ks.hIndex {
		if j == i {
			return h, false
		}
	}
	return key, false
}

// body writes the entries of b; top separates the top level's blocks
// with blank lines.
func (h *hclWriter) body(b *block, top bool) error {
	var blocks []entry
	for _, en := range b.entries {
		if _, sub := en.val.(*block); sub || b.ks.kinds[b.ks.yIndex[en.key]].isBlock() {
			blocks = append(blocks, en)
			continue
		}
		name, label := hclName(b.ks, en.key)
		if label {
			continue
		}
		v, err := h.value(en.val)
		if err != nil {
			return fmt.Errorf("%s: %w", en.key, err)
		}
		if top && strings.Contains(v, "\n") && h.buf.Len() > 0 && !bytes.HasSuffix(h.buf.Bytes(), []byte("\n\n")) {
			h.buf.WriteByte('\n')
		}
		h.line(name + " = " + v)
		if top && strings.Contains(v, "\n") {
			h.buf.WriteByte('\n')
		}
	}
	for _, en := range blocks {
		name, _ := hclName(b.ks, en.key)
		var list []*block
		switch v := en.val.(type) {
		case *block:
			list = []*block{v}
		case []*block:
			list = v
		default:
			return fmt.Errorf("%s: cannot write a %T as a block", en.key, en.val)
		}
		for _, sub := range list {
			if top && h.buf.Len() > 0 && !bytes.HasSuffix(h.buf.Bytes(), []byte("\n\n")) {
				h.buf.WriteByte('\n')
			}
			if !top && sub.ks == &stepTable.keySet {
				// The steps of a loop's body stand apart, as at the top.
				h.buf.WriteByte('\n')
			}
			for _, l := range strings.Split(commentText(sub.notes), "\n") {
				if l != "" {
					h.line(l)
				}
			}
			open := name + " {"
			if _, ok := en.val.([]*block); ok {
				open = name + " " + hclQuoted(sub.label) + " {"
			}
			if len(sub.entries) == 0 {
				h.line(open + "}")
				continue
			}
			h.line(open)
			h.indent++
			if err := h.body(sub, false); err != nil {
				return fmt.Errorf("%s: %w", en.key, err)
			}
			h.indent--
			h.line("}")
		}
	}
	return nil
}

// value writes the value of an attribute.
func (h *hclWriter) value(val any) (string, error) {
	switch v := val.(type) {
	case string:
		return h.text(v), nil
	case number:
		return string(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case []string:
		q := make([]string, 0, len(v))
		for _, s := range v {
			q = append(q, hclQuoted(s))
		}
		return "[" + strings.Join(q, ", ") + "]", nil
	case []pair:
		var sb strings.Builder
		sb.WriteString("{\n")
		in := strings.Repeat("  ", h.indent+1)
		for _, p := range v {
			sb.WriteString(in + hclKey(p.k) + " = ")
			h.indent++
			sb.WriteString(h.text(p.v))
			h.indent--
			sb.WriteString("\n")
		}
		sb.WriteString(strings.Repeat("  ", h.indent) + "}")
		return sb.String(), nil
	case anyValue:
		cv, err := ctyOf(v.v)
		if err != nil {
			return "", err
		}
		return string(hclwrite.TokensForValue(cv).Bytes()), nil
	}
	return "", fmt.Errorf("cannot write a %T as an attribute", val)
}

// text writes a string: a heredoc when it spans lines and a heredoc
// says it exactly, else a quoted string.
func (h *hclWriter) text(s string) string {
	if hd, ok := heredoc(s, strings.Repeat("  ", h.indent)); ok {
		return hd
	}
	return hclQuoted(s)
}

// heredoc writes s as an indented heredoc (<<-EOT) at the indentation
// in, and reports whether it reads back as s: s must end with a
// newline, and no line may depend on indentation the heredoc strips.
func heredoc(s, in string) (string, bool) {
	if !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") < 2 && len(s) < 80 || strings.ContainsAny(s, "\r") {
		return "", false
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	delim := "EOT"
	for i := 1; slices.ContainsFunc(lines, func(l string) bool { return strings.TrimSpace(l) == delim }); i++ {
		delim = "EOT" + strconv.Itoa(i)
	}
	var sb strings.Builder
	sb.WriteString("<<-" + delim + "\n")
	for _, l := range lines {
		if l != "" {
			sb.WriteString(in + "  " + escapeTemplate(l))
		}
		sb.WriteString("\n")
	}
	sb.WriteString(in + delim)
	out := sb.String()
	file, diags := hclsyntax.ParseConfig([]byte("x = "+out+"\n"), "heredoc", hcl.InitialPos)
	if diags.HasErrors() {
		return "", false
	}
	attr := file.Body.(*hclsyntax.Body).Attributes["x"]
	v, diags := attr.Expr.Value(nil)
	if diags.HasErrors() || v.Type() != cty.String || v.AsString() != s {
		return "", false
	}
	return out, true
}

// escapeTemplate doubles the introducers of HCL's own templates, ${
// and %{, which a flow template never means.
func escapeTemplate(s string) string {
	return strings.NewReplacer("${", "$${", "%{", "%%{").Replace(s)
}

// hclQuoted writes s as a quoted HCL string.
func hclQuoted(s string) string {
	return string(hclwrite.TokensForValue(cty.StringVal(s)).Bytes())
}

// hclKey writes the key of an object: a name as it is, anything else
// quoted.
func hclKey(k string) string {
	if hclsyntax.ValidIdentifier(k) && k != "true" && k != "false" && k != "null" {
		return k
	}
	return hclQuoted(k)
}

// ctyOf converts a JSON-compatible value for hclwrite.
func ctyOf(v any) (cty.Value, error) {
	switch x := v.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType), nil
	case string:
		return cty.StringVal(x), nil
	case bool:
		return cty.BoolVal(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return cty.NilVal, fmt.Errorf("cannot write the number %v", x)
		}
		return cty.NumberFloatVal(x), nil
	case []any:
		if len(x) == 0 {
			return cty.EmptyTupleVal, nil
		}
		vals := make([]cty.Value, 0, len(x))
		for _, item := range x {
			cv, err := ctyOf(item)
			if err != nil {
				return cty.NilVal, err
			}
			vals = append(vals, cv)
		}
		return cty.TupleVal(vals), nil
	case map[string]any:
		if len(x) == 0 {
			return cty.EmptyObjectVal, nil
		}
		vals := make(map[string]cty.Value, len(x))
		for k, item := range x {
			cv, err := ctyOf(item)
			if err != nil {
				return cty.NilVal, err
			}
			vals[k] = cv
		}
		return cty.ObjectVal(vals), nil
	}
	return cty.NilVal, fmt.Errorf("cannot write a %T", v)
}
