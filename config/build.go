package config

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flow-run/flow/gates"
	"github.com/flow-run/flow/internal/confine"
	"github.com/spf13/afero"
)

// namePattern is what workflow names, step ids and agent names look like.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// inputName is what the names of a human step's inputs look like: they
// are read as steps.<id>.input.<name> in expressions.
// gateName is what the name of a gate of the gate-state file looks like.
var gateName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

var inputName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// envName is what the names of environment variables look like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// builder turns a raw workflow into the model, compiling and checking
// every value and collecting every problem.
type builder struct {
	raw   *rawWorkflow
	fs    afero.Fs
	dir   string // the directory of the workflow file
	repo  string // the repository, or ""
	d     *diags
	scope gates.Scope
	// comp compiles every expression and template of the workflow
	// against scope, which is complete before the first compile.
	comp *gates.Compiler
	// templates holds each template compiled so far, by its source: a
	// compiled template is immutable and knows nothing of where it was
	// written, so the steps of a workflow that repeat a command share
	// one.
	templates map[string]*gates.Template
	w         *Workflow
	// rawNeeds holds the needs each step wrote, and rawReviewers the
	// reviewers each consensus step's gate wrote, until they are
	// resolved.
	rawNeeds     map[*Step][]str
	rawReviewers map[*Step][]str
	// loops lists the loop steps in file order, and bodyIDs the ids of
	// the steps of every body, by the id of their loop step.
	loops   []*Step
	bodyIDs map[string]string
}

func build(raw *rawWorkflow, fs afero.Fs, path string, o Options, d *diags) *Workflow {
	b := &builder{raw: raw, fs: fs, dir: filepath.Dir(path), repo: o.Repo, d: d, rawNeeds: map[*Step][]str{}, rawReviewers: map[*Step][]str{}, bodyIDs: map[string]string{}}
	w := &Workflow{
		File:        path,
		Name:        raw.name.val,
		Description: raw.description.val,
		Vars:        map[string]string{},
		VarOrder:    []string{},
		Agents:      map[string]*Agent{},
		MaxParallel: DefaultMaxParallel,
		Pos:         raw.name.pos(),
	}
	b.w = w
	switch {
	case raw.name.bad:
	case !raw.name.set:
		d.errorf(Pos{File: path, Line: 1, Col: 1}, "name is required")
	case !namePattern.MatchString(raw.name.val):
		d.errorf(raw.name.pos(), "name %q: want lowercase letters, digits, _ and -, starting with a letter or digit", raw.name.val)
	}
	for _, v := range raw.vars {
		w.Vars[v.key] = v.val.val
		w.VarOrder = append(w.VarOrder, v.key)
		b.scope.Vars = append(b.scope.Vars, v.key)
	}
	ids := map[string]bool{}
	for _, s := range raw.steps {
		if s.id.set && !ids[s.id.val] {
			ids[s.id.val] = true
			b.scope.Steps = append(b.scope.Steps, s.id.val)
		}
	}
	b.scope.Elsewhere = b.bodyScopes(ids)
	b.scope.Inputs = declaredInputs(raw.steps)
	b.comp = gates.NewCompiler(b.scope)
	if raw.maxParallel.ok() {
		if n, ok := b.count("max_parallel", raw.maxParallel); ok {
			w.MaxParallel = n
		}
	}
	if c := raw.compat; c.ok() {
		if c.val == CompatOrchestrator {
			w.Compat = c.val
		} else {
			d.errorf(c.pos(), "compat: want %s, got %q", CompatOrchestrator, c.val)
		}
	}
	b.agents()
	b.defaults()
	b.secrets()
	b.notify()
	w.Budget = b.budget(raw.budget)
	w.Workspace = b.workspace(raw.workspace)
	if o.Workspace != nil {
		w.Workspace = o.Workspace
	}
	seen := map[string]bool{}
	w.Steps = make([]*Step, 0, len(raw.steps))
	for i, rs := range raw.steps {
		if s := b.step(rs, seen, nil); s != nil {
			w.Steps = append(w.Steps, s)
			if rs.forEachSet {
				b.loop(s, rs, raw.steps[:i], seen)
			}
		}
	}
	if len(raw.steps) == 0 && raw.name.ok() {
		d.errorf(raw.name.pos(), "workflow %q has no steps", raw.name.val)
	}
	b.cleanup()
	b.signals()
	w.index = make(map[string]int, len(w.Steps))
	for i, s := range w.Steps {
		if _, dup := w.index[s.ID]; !dup {
			w.index[s.ID] = i
		}
	}
	// byID holds only what index does not answer: the ids of the steps
	// of loops' bodies, each to the first step with the id in the order
	// of AllSteps.
	for i, s := range w.Steps {
		if s.ForEach == nil {
			continue
		}
		for _, body := range s.ForEach.Body {
			if j, top := w.index[body.ID]; top && j <= i {
				continue
			}
			if _, dup := w.byID[body.ID]; !dup {
				if w.byID == nil {
					w.byID = map[string]*Step{}
				}
				w.byID[body.ID] = body
			}
		}
	}
	b.reviewers()
	b.needs()
	if !b.cycles() {
		b.loopBacks()
	}
	if raw.orchestrator != nil {
		b.finishOrchestrator()
	}
	return w
}

func (b *builder) defaults() {
	rd, def := &b.raw.defaults, &b.w.Defaults
	def.MaxAttempts = b.limit("max_attempts", rd.maxAttempts)
	def.MaxIterations = b.limit("max_iterations", rd.maxIterations)
	def.Timeout = b.duration("timeout", rd.timeout)
	def.IdleTimeout = b.duration("idle_timeout", rd.idleTimeout)
	def.Sandbox = b.sandboxMode("defaults.sandbox", rd.sandbox)
	def.Retry = b.retry(rd.retry)
	if rd.agent.set {
		def.Agent, def.AgentPos = rd.agent.val, rd.agent.pos()
		b.agentRef("defaults.agent", rd.agent)
	}
	def.Limits = Limits{
		Prompt:  b.size("prompt_limit", rd.promptLimit, maxTextLimit),
		Command: b.size("command_limit", rd.commandLimit, maxTextLimit),
		Report:  b.size("report_limit", rd.reportLimit, maxTextLimit),
		Log:     b.size("log_limit", rd.logLimit, maxLogLimit),
	}
	if rd.maxItems.ok() {
		def.Limits.MaxItems, _ = b.count("max_items", rd.maxItems)
	}
	def.Retention = b.retention(rd.retention)
}

// secrets checks the names of the declared secrets.
func (b *builder) secrets() {
	seen := map[string]bool{}
	for _, s := range b.raw.secrets {
		switch {
		case !envName.MatchString(s.val):
			b.d.errorf(s.pos(), "secrets: %q is not a valid variable name (want letters, digits and _, not starting with a digit)", s.val)
		case seen[s.val]:
			b.d.errorf(s.pos(), "secrets: %q is declared twice", s.val)
		default:
			seen[s.val] = true
			b.w.Secrets = append(b.w.Secrets, s.val)
		}
	}
}

// step builds a step of the top level, or of the body of loop when
// loop is not nil. The body of a loop step is built by loop.
func (b *builder) step(rs *rawStep, seen map[string]bool, loop *Step) *Step {
	rs.more()
	s := &Step{ID: rs.id.val, Pos: rs.pos, StepOptions: defaultOptions()}
	if rs.description.val != "" {
		s.extra().Description = rs.description.val
	}
	if rs.needsSet {
		s.extra().NeedsSet, s.Extra.NeedsPos = true, rs.needsPos
	}
	if loop != nil {
		s.Loop = loop.ID
	}
	if f := rs.feedback; f.ok() {
		switch f.val {
		case "append", "none":
			s.Feedback = f.val
		default:
			b.d.errorf(f.pos(), "feedback: want append or none, got %q", f.val)
		}
	}
	switch {
	case rs.id.bad:
	case !rs.id.set:
		b.d.errorf(rs.pos, "step: id is required")
	case !namePattern.MatchString(rs.id.val):
		b.d.errorf(rs.id.pos(), "step id %q: want lowercase letters, digits, _ and -, starting with a letter or digit", rs.id.val)
	case len(rs.id.val) > MaxStepIDLen:
		b.d.errorf(rs.id.pos(), "step id %q is %d characters long: a step id has at most %d, so that the file names made from it stay under 255 bytes", rs.id.val, len(rs.id.val), MaxStepIDLen)
	case seen[rs.id.val]:
		b.d.errorf(rs.id.pos(), "duplicate step id %q", rs.id.val)
	}
	seen[rs.id.val] = true
	if rs.metadata != nil {
		s.extra().Metadata = rs.metadata
	}
	if gs := b.gates(rs); gs != nil {
		s.extra().Gates = gs
	}
	if rs.forEachSet {
		return b.loopStep(s, rs, loop)
	}
	b.notLoop(s, rs)
	consensus := rs.gate != nil && rs.gate.reviewersSet
	if consensus {
		b.consensusStep(s, rs)
	} else {
		b.session(s, rs)
	}
	if rs.when.set {
		s.When = b.expr("when", rs.when, gates.Bool)
	}
	if rg := rs.gate; rg != nil {
		g := &Gate{Pos: rg.pos, LoopBackTo: rg.loopBackTo.val, LoopPos: rg.loopBackTo.pos()}
		if rg.pass.set {
			g.Pass = b.expr("gate.pass", rg.pass, gates.Bool)
		}
		if rg.fail.set {
			g.Fail = b.expr("gate.fail", rg.fail, gates.Bool)
		}
		if rg.check.set {
			g.Check = b.template("gate.check", rg.check)
		}
		g.MaxIterations = b.limit("gate.max_iterations", rg.maxIterations)
		b.consensus(s, g, rg)
		s.Gate = g
		if rg.loopBackTo.set && rs.loopBackTo.set {
			b.d.errorf(rs.loopBackTo.pos(), "loop_back_to is given both on step %q and on its gate; keep one", s.ID)
		}
	}
	if rs.loopBackTo.set {
		s.extra().LoopBackTo, s.Extra.LoopPos = rs.loopBackTo.val, rs.loopBackTo.pos()
	}
	s.MaxAttempts = b.limit("max_attempts", rs.maxAttempts)
	s.MaxIterations = b.limit("max_iterations", rs.maxIterations)
	s.Retry = b.retry(rs.retry)
	if rs.retryIf.set {
		s.RetryIf = b.expr("retry_if", rs.retryIf, gates.Bool)
	}
	s.Timeout = b.duration("timeout", rs.timeout)
	s.IdleTimeout = b.duration("idle_timeout", rs.idleTimeout)
	s.Sandbox = b.sandboxMode("sandbox", rs.sandbox)
	for _, a := range rs.artifacts {
		if t := b.template("artifacts", a); t != nil {
			s.Artifacts = append(s.Artifacts, t)
		}
	}
	s.Env = b.env(rs.env)
	if rs.budget != nil && !consensus {
		if s.Kind == KindHuman {
			b.d.errorf(rs.budget.pos, "step %q is a human step: budget belongs on a step that runs sessions", s.ID)
		} else {
			s.Budget = b.budget(rs.budget)
			if rb := rs.budget; rb != nil && rb.daily.ok() {
				b.d.errorf(rb.daily.pos(), "budget.daily_cost_usd is the workflow's budget, not a step's: a day's spending is the repository's")
			}
		}
	}
	b.stepWorkspace(s, rs, loop)
	b.rawNeeds[s] = rs.needs
	return s
}

// declaredInputs maps every human step of steps and of their loops'
// bodies to the names of the inputs it declares (empty: it takes any),
// for the expressions' scope (gates.Scope.Inputs).
func declaredInputs(steps []*rawStep) map[string][]string {
	inputs := map[string][]string{}
	var add func(steps []*rawStep)
	add = func(steps []*rawStep) {
		for _, rs := range steps {
			if rs.id.ok() && rs.human != nil {
				if _, dup := inputs[rs.id.val]; !dup {
					names := []string{}
					for _, in := range rs.human.inputs {
						if in.name.ok() {
							names = append(names, in.name.val)
						}
					}
					inputs[rs.id.val] = names
				}
			}
			add(rs.body)
		}
	}
	add(steps)
	return inputs
}

// session builds what a step that runs a session, or waits for a
// human, has of its own: its kind, exactly one of run, prompt or
// prompt_file, or else human; its command, prompt and agent; its human
// block (on a session step, the approval asked once the session and
// its gate passed).
func (b *builder) session(s *Step, rs *rawStep) {
	type kindOf struct {
		kind StepKind
		key  string
		pos  Pos
	}
	var kinds []kindOf
	if rs.run.set {
		kinds = append(kinds, kindOf{KindCommand, "run", rs.run.pos()})
	}
	if rs.prompt.set {
		kinds = append(kinds, kindOf{KindAgent, "prompt", rs.prompt.pos()})
	}
	if rs.promptFile.set {
		kinds = append(kinds, kindOf{KindAgent, "prompt_file", rs.promptFile.pos()})
	}
	if rs.promptPath.set {
		kinds = append(kinds, kindOf{KindAgent, b.promptPathKey(), rs.promptPath.pos()})
	}
	// human: beside a session is an approval after it (the step keeps
	// the session's kind); alone it makes a human step.
	if rs.human != nil && len(kinds) == 0 {
		kinds = append(kinds, kindOf{KindHuman, "human", rs.human.pos})
	}
	switch len(kinds) {
	case 0:
		b.d.errorf(rs.pos, "step %q does nothing: give it one of run, prompt, prompt_file or human", s.ID)
	case 1:
		s.Kind = kinds[0].kind
	default:
		s.Kind = kinds[0].kind
		for _, k := range kinds[1:] {
			b.d.errorf(k.pos, "step %q has both %s and %s; a step is exactly one of run, prompt, prompt_file or human", s.ID, kinds[0].key, k.key)
		}
	}

	if rs.run.set {
		s.Run = b.template("run", rs.run)
	}
	if rs.prompt.set {
		s.Prompt = b.template("prompt", rs.prompt)
	}
	if rs.promptFile.ok() {
		s.extra().PromptFile = rs.promptFile.val
		if !rs.prompt.set {
			s.Prompt = b.promptFile(rs.promptFile)
		}
	}
	if rs.promptPath.ok() {
		s.PromptPath = rs.promptPath.val
		if s.PromptPath == "" {
			b.d.errorf(rs.promptPath.pos(), "%s: want the path of a prompt file", b.promptPathKey())
		}
	}
	hasPrompt := rs.prompt.set || rs.promptFile.set || rs.promptPath.set
	if rs.model.ok() {
		if hasPrompt {
			s.Model = rs.model.val
		} else {
			b.d.errorf(rs.model.pos(), "model: only a prompt step runs an agent")
		}
	}
	if rs.agent.set {
		if hasPrompt {
			s.Agent = rs.agent.val
			b.agentRef("agent", rs.agent)
		} else {
			b.d.errorf(rs.agent.pos(), "agent: only a prompt step runs an agent")
		}
	}
	if hasPrompt && s.Agent == "" && !rs.agent.bad {
		s.Agent = b.w.Defaults.Agent
		if s.Agent == "" {
			b.d.errorf(rs.pos, "step %q has a prompt but no agent: set agent here or defaults.agent", s.ID)
		}
	}
	if rh := rs.human; rh != nil {
		h := &Human{}
		if rh.message.set {
			h.Message = b.template("human.message", rh.message)
		}
		h.Timeout = b.duration("human.timeout", rh.timeout)
		h.AnyFile = b.boolean("human.any_file", rh.anyFile, false)
		if rh.autoApprove.set {
			h.AutoApprove = b.expr("human.auto_approve", rh.autoApprove, gates.Bool)
		}
		h.Inputs = b.inputs(rh.inputs)
		s.Human = h
	}
}

// promptPathKey is what the file calls a prompt given as a path.
func (b *builder) promptPathKey() string {
	if b.raw.orchestrator != nil {
		return "prompt"
	}
	return "prompt_path"
}

// gates checks the names of the gates of the gate-state file a step
// waits on.
func (b *builder) gates(rs *rawStep) []string {
	var out []string
	for _, g := range rs.gates {
		if !g.ok() {
			continue
		}
		// agent_orchestrator names a gate with any string.
		if !gateName.MatchString(g.val) && b.raw.compat.val != CompatOrchestrator {
			b.d.errorf(g.pos(), "gate %q: want letters, digits, _, - and ., starting with a letter or digit", g.val)
			continue
		}
		if slices.Contains(out, g.val) {
			b.d.errorf(g.pos(), "gate %q is listed twice", g.val)
			continue
		}
		out = append(out, g.val)
	}
	return out
}

// inputs checks the inputs of a human step: each has a name of
// lowercase letters, digits and _ (not starting with a digit), no two
// the same, and is either required or has a default, not both.
func (b *builder) inputs(raw []*rawInput) []Input {
	var out []Input
	seen := map[string]bool{}
	for _, ri := range raw {
		in := Input{Name: ri.name.val, Description: ri.description.val, Default: ri.def.val, Pos: ri.pos}
		switch {
		case ri.name.bad:
			continue
		case !ri.name.set:
			b.d.errorf(ri.pos, "human.inputs: name is required")
			continue
		case !inputName.MatchString(in.Name):
			b.d.errorf(ri.name.pos(), "human.inputs: input name %q: want lowercase letters, digits and _, not starting with a digit", in.Name)
			continue
		case seen[in.Name]:
			b.d.errorf(ri.name.pos(), "human.inputs: duplicate input %q", in.Name)
			continue
		}
		seen[in.Name] = true
		in.Required = b.boolean("human.inputs.required", ri.required, false)
		if in.Required && ri.def.set {
			b.d.errorf(ri.def.pos(), "human.inputs: input %q is required and has a default; a default applies only to an input that may be left out", in.Name)
		}
		out = append(out, in)
	}
	return out
}

// promptFile reads and compiles a prompt file, relative to the
// workflow. Its real path must lie inside the workflow's directory tree
// or the repository; it must be a regular file no larger than the
// prompt limit.
func (b *builder) promptFile(pf str) *Template {
	path := pf.val
	if !filepath.IsAbs(path) {
		path = filepath.Join(b.dir, path)
	}
	roots := []string{b.dir}
	if b.repo != "" {
		roots = append(roots, b.repo)
	}
	limit := b.w.Limits().Prompt
	data, err := confine.ReadFile(b.fs, path, limit, roots...)
	var (
		esc *confine.EscapeError
		nr  *confine.NotRegularError
		tl  *confine.TooLargeError
	)
	switch {
	case errors.As(err, &esc):
		where := "the workflow's directory"
		if b.repo != "" {
			where += " and the repository"
		}
		resolved := ""
		if esc.Real != "" && esc.Real != filepath.Clean(pf.val) {
			resolved = fmt.Sprintf(" (it resolves to %s)", esc.Real)
		}
		b.d.errorf(pf.pos(), "prompt_file: %s is outside %s%s; a prompt file must lie inside", pf.val, where, resolved)
		return nil
	case errors.As(err, &nr):
		b.d.errorf(pf.pos(), "prompt_file: %s", nr)
		return nil
	case errors.As(err, &tl):
		b.d.errorf(pf.pos(), "prompt_file: %s is larger than %s, the prompt limit", path, confine.Size(limit))
		return nil
	case err != nil:
		b.d.errorf(pf.pos(), "prompt_file: read %s: %v", path, unwrapPathError(err))
		return nil
	}
	src := newSource(path, data)
	return b.template("prompt_file", str{val: string(data), set: true, sp: span{src: src, style: styleRaw}})
}

// unwrapPathError drops the operation and path an fs.PathError repeats.
func unwrapPathError(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

func (b *builder) cleanup() {
	rc := b.raw.cleanup
	if rc == nil {
		return
	}
	c := &Cleanup{}
	switch {
	case rc.run.set && rc.prompt.set:
		b.d.errorf(rc.prompt.pos(), "cleanup has both run and prompt; give one")
	case !rc.run.set && !rc.prompt.set:
		b.d.errorf(rc.pos, "cleanup: give run or prompt")
	}
	if rc.run.set {
		c.Run = b.template("cleanup.run", rc.run)
		if rc.agent.set {
			b.d.errorf(rc.agent.pos(), "cleanup.agent: only a prompt runs an agent")
		}
	}
	if rc.prompt.set {
		c.Prompt = b.template("cleanup.prompt", rc.prompt)
		c.Agent = b.w.Defaults.Agent
		if rc.agent.set {
			c.Agent = rc.agent.val
			b.agentRef("cleanup.agent", rc.agent)
		} else if c.Agent == "" {
			b.d.errorf(rc.pos, "cleanup has a prompt but no agent: set cleanup.agent or defaults.agent")
		}
	}
	b.w.Cleanup = c
}

func (b *builder) signals() {
	rs := b.raw.signals
	sig := &b.w.Signals
	words := []struct {
		key string
		raw str
		out *string
		def string
	}{{"signals.done", rs.done, &sig.Done, "DONE"}, {"signals.pass", rs.pass, &sig.Pass, "PASS"}, {"signals.fail", rs.fail, &sig.Fail, "FAIL"}}
	used := map[string]string{}
	for _, wd := range words {
		*wd.out = wd.def
		if !wd.raw.ok() {
			used[wd.def] = wd.key
			continue
		}
		v := wd.raw.val
		if v == "" || strings.ContainsAny(v, " \t\r\n") {
			b.d.errorf(wd.raw.pos(), "%s: want one word, got %q", wd.key, v)
			continue
		}
		if other, dup := used[v]; dup {
			b.d.errorf(wd.raw.pos(), "%s: %q is already the word of %s", wd.key, v, other)
			continue
		}
		used[v] = wd.key
		*wd.out = v
	}
}

// agentRef checks that a named agent is declared.
func (b *builder) agentRef(field string, name str) {
	if _, ok := b.w.Agents[name.val]; ok || name.bad {
		return
	}
	if b.raw.orchestrator != nil && len(b.raw.agents) == 0 {
		// Its agents are names for a wrapper not yet given.
		return
	}
	names := make([]string, 0, len(b.raw.agents))
	for _, a := range b.raw.agents {
		names = append(names, a.name.val)
	}
	b.d.unknown(name.pos(), "agent", name.val, names)
	d := &b.d.list[len(b.d.list)-1]
	d.Message = field + ": " + d.Message
}

// boolean reads a key of kindBool: def when it is not given (or could
// not be read), else true or false, anything else reported.
func (b *builder) boolean(field string, s str, def bool) bool {
	if !s.ok() {
		return def
	}
	switch s.val {
	case "true":
		return true
	case "false":
		return false
	}
	b.d.errorf(s.pos(), "%s: want true or false, got %q", field, s.val)
	return def
}

// expr compiles an expression.
func (b *builder) expr(field string, s str, kind gates.Kind) *Expr {
	if !s.ok() {
		return nil
	}
	prog, err := b.comp.Compile(s.val, kind)
	if err != nil {
		b.compileError(field, s, err)
		return nil
	}
	return &Expr{Src: s.val, Pos: s.pos(), prog: prog}
}

// template compiles a template.
func (b *builder) template(field string, s str) *Template {
	if !s.ok() {
		return nil
	}
	t := b.templates[s.val]
	if t == nil {
		var err error
		if t, err = b.comp.CompileTemplate(s.val); err != nil {
			b.compileError(field, s, err)
			return nil
		}
		if b.templates == nil {
			b.templates = map[string]*gates.Template{}
		}
		b.templates[s.val] = t
	}
	return &Template{Src: s.val, Pos: s.pos(), tmpl: t}
}

// compileError reports an error of the gates package at the character of
// the file it points at.
func (b *builder) compileError(field string, s str, err error) {
	var ge *gates.Error
	if errors.As(err, &ge) {
		b.d.errorHint(s.sp.at(s.val, ge.Offset), field+": "+ge.Msg, ge.Suggestion)
		return
	}
	b.d.errorf(s.pos(), "%s: %v", field, err)
}

// env compiles a map of environment variables.
func (b *builder) env(kvs []kv) map[string]*Template {
	if len(kvs) == 0 {
		return nil
	}
	out := make(map[string]*Template, len(kvs))
	for _, e := range kvs {
		if !envName.MatchString(e.key) {
			b.d.errorf(e.keyPos, "env: %q is not a valid variable name", e.key)
			continue
		}
		if t := b.template("env."+e.key, e.val); t != nil {
			out[e.key] = t
		}
	}
	return out
}

// limit reads a budget: a positive integer, or an expression.
func (b *builder) limit(field string, s str) *Limit {
	if !s.ok() {
		return nil
	}
	if !looksNumeric(s.val) {
		if e := b.expr(field, s, gates.Any); e != nil {
			return &Limit{Expr: e, Pos: s.pos()}
		}
		return nil
	}
	n, ok := b.count(field, s)
	if !ok {
		return nil
	}
	return &Limit{N: n, Pos: s.pos()}
}

// count reads a positive integer that fits an int.
func (b *builder) count(field string, s str) (int, bool) {
	n, ok := b.count64(field, s)
	if ok && int64(int(n)) != n {
		b.d.errorf(s.pos(), "%s: %d is too large", field, n)
		return 0, false
	}
	return int(n), ok
}

// duration reads a duration: a positive constant, or an expression.
func (b *builder) duration(field string, s str) *Duration {
	if !s.ok() {
		return nil
	}
	if !looksNumeric(s.val) {
		if e := b.expr(field, s, gates.Any); e != nil {
			return &Duration{Expr: e, Pos: s.pos()}
		}
		return nil
	}
	d, ok := b.constDuration(field, s)
	if !ok {
		return nil
	}
	return &Duration{D: d, Pos: s.pos()}
}

func (b *builder) constDuration(field string, s str) (time.Duration, bool) {
	d, err := ParseDuration(s.val)
	switch {
	case err != nil:
		b.d.errorf(s.pos(), "%s: %v", field, err)
		return 0, false
	case d <= 0:
		b.d.errorf(s.pos(), "%s: must be positive, got %s", field, s.val)
		return 0, false
	}
	return d, true
}

func (b *builder) retry(rr *rawRetry) *Retry {
	if rr == nil {
		return nil
	}
	r := &Retry{}
	if rr.backoff.ok() {
		r.Backoff, _ = b.constDuration("retry.backoff", rr.backoff)
	}
	if rr.maxBackoff.ok() {
		r.MaxBackoff, _ = b.constDuration("retry.max_backoff", rr.maxBackoff)
	}
	if r.Backoff > 0 && r.MaxBackoff > 0 && r.MaxBackoff < r.Backoff {
		b.d.errorf(rr.maxBackoff.pos(), "retry.max_backoff %s is less than retry.backoff %s", r.MaxBackoff, r.Backoff)
	}
	r.Jitter = b.boolean("retry.jitter", rr.jitter, false)
	return r
}

// looksNumeric reports whether a value is meant as a number or a duration
// rather than an expression.
func looksNumeric(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return true
	}
	c := v[0]
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.'
}

// ParseDuration parses a duration in Go's syntax ("1h30m", "90s"), with
// d for days ("2d", "1d12h") and a bare number meaning seconds.
func ParseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("invalid duration %q (want e.g. 90s, 30m, 1h30m, 2d)", s)
	v := strings.TrimSpace(s)
	if v == "" {
		return 0, bad
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(n) || math.Abs(n) > maxSeconds {
			return 0, bad
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	neg := strings.HasPrefix(v, "-")
	v = strings.TrimPrefix(strings.TrimPrefix(v, "-"), "+")
	var total time.Duration
	if i := strings.IndexByte(v, 'd'); i >= 0 {
		n, err := strconv.ParseFloat(v[:i], 64)
		if err != nil || strings.ContainsAny(v[:i], "+-eEnNiIxXpP_") || n*86400 > maxSeconds {
			return 0, bad
		}
		total = time.Duration(n * 24 * float64(time.Hour))
		v = v[i+1:]
	}
	if v != "" {
		if v[0] == '-' || v[0] == '+' {
			return 0, bad
		}
		d, err := time.ParseDuration(v)
		if err != nil || total+d < total {
			return 0, bad
		}
		total += d
	}
	if neg {
		total = -total
	}
	return total, nil
}

// maxSeconds keeps durations well inside time.Duration's range.
const maxSeconds = 100 * 365 * 86400

// sandboxMode checks a sandbox mode: on, required or off.
func (b *builder) sandboxMode(what string, v str) string {
	if !v.ok() {
		return ""
	}
	switch v.val {
	case SandboxOn, SandboxRequired, SandboxOff:
		return v.val
	}
	b.d.errorf(v.pos(), "%s: want on, required or off, got %q", what, v.val)
	return ""
}
