package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// The spec types are the canonical JSON form of a workflow: the sources
// of its expressions and templates, its resolved needs and its constant
// values, without positions or compiled programs. A YAML workflow and its
// HCL twin have the same spec.

type specWorkflow struct {
	Name        string                `json:"name"`
	Description string                `json:"description,omitempty"`
	Vars        map[string]string     `json:"vars"`
	Defaults    specDefaults          `json:"defaults"`
	Agents      map[string]*specAgent `json:"agents"`
	Steps       []*specStep           `json:"steps"`
	MaxParallel int                   `json:"max_parallel"`
	Cleanup     *specCleanup          `json:"cleanup,omitempty"`
	Signals     specSignals           `json:"signals"`
	Secrets     []string              `json:"secrets,omitempty"`
	Budget      *specBudget           `json:"budget,omitempty"`
	Notify      *specNotify           `json:"notify,omitempty"`
	Workspace   *specWorkspace        `json:"workspace,omitempty"`
}

// specWorkspace is a workspace of its own; a shared one is left out,
// so that the digests of workflows without workspaces are what they
// always were.
type specWorkspace struct {
	Mode  string   `json:"mode"`
	Base  string   `json:"base,omitempty"`
	Root  string   `json:"root,omitempty"`
	Keep  string   `json:"keep"`
	Setup string   `json:"setup,omitempty"`
	Copy  []string `json:"copy,omitempty"`
}

// specMerge is a loop's merge block, as written.
type specMerge struct {
	Mode          string `json:"mode"`
	LoopBackTo    string `json:"loop_back_to,omitempty"`
	MaxIterations any    `json:"max_iterations,omitempty"`
}

// specNotify is the notify block after the defaults' are merged in.
type specNotify struct {
	On      []string `json:"on"`
	Command string   `json:"command,omitempty"`
	Webhook string   `json:"webhook,omitempty"`
	Timeout string   `json:"timeout"`
}

type specDefaults struct {
	MaxAttempts   any        `json:"max_attempts,omitempty"`
	MaxIterations any        `json:"max_iterations,omitempty"`
	Timeout       string     `json:"timeout,omitempty"`
	IdleTimeout   string     `json:"idle_timeout,omitempty"`
	Sandbox       string     `json:"sandbox,omitempty"`
	Agent         string     `json:"agent,omitempty"`
	Retry         *specRetry `json:"retry,omitempty"`
	// The sizes are in bytes; they are left out when not set, so that
	// the digest of a workflow that sets none is what it always was.
	PromptLimit  int64 `json:"prompt_limit,omitempty"`
	CommandLimit int64 `json:"command_limit,omitempty"`
	ReportLimit  int64 `json:"report_limit,omitempty"`
	LogLimit     int64 `json:"log_limit,omitempty"`
	MaxItems     int   `json:"max_items,omitempty"`
	// Retention is left out when not set, so that the digest of a
	// workflow that sets none is what it always was.
	Retention *specRetention `json:"retention,omitempty"`
}

// specRetention is defaults.retention; older_than is in Go's syntax.
type specRetention struct {
	Keep      int    `json:"keep,omitempty"`
	OlderThan string `json:"older_than,omitempty"`
}

// specAgent is an agent. The keys of a preset are left out when not
// set, so that the digest of a workflow of run: agents is what it
// always was.
type specAgent struct {
	Run    string            `json:"run"`
	Preset string            `json:"preset,omitempty"`
	Model  string            `json:"model,omitempty"`
	Args   []string          `json:"args,omitempty"`
	Resume bool              `json:"resume,omitempty"`
	Price  *specPrice        `json:"price,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
}

type specPrice struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
	CachedPerMTok float64 `json:"cached_per_mtok"`
}

// specBudget is a budget; its unset limits are left out.
type specBudget struct {
	CostUSD  float64 `json:"cost_usd,omitempty"`
	Tokens   int64   `json:"tokens,omitempty"`
	Sessions int     `json:"sessions,omitempty"`
}

type specStep struct {
	ID            string            `json:"id"`
	Description   string            `json:"description,omitempty"`
	Feedback      string            `json:"feedback,omitempty"`
	Kind          StepKind          `json:"kind"`
	Run           string            `json:"run,omitempty"`
	Prompt        string            `json:"prompt,omitempty"`
	PromptFile    string            `json:"prompt_file,omitempty"`
	Agent         string            `json:"agent,omitempty"`
	Human         *specHuman        `json:"human,omitempty"`
	Needs         []string          `json:"needs"`
	When          string            `json:"when,omitempty"`
	Gate          *specGate         `json:"gate,omitempty"`
	LoopBackTo    string            `json:"loop_back_to,omitempty"`
	MaxAttempts   any               `json:"max_attempts,omitempty"`
	MaxIterations any               `json:"max_iterations,omitempty"`
	Retry         *specRetry        `json:"retry,omitempty"`
	RetryIf       string            `json:"retry_if,omitempty"`
	Timeout       string            `json:"timeout,omitempty"`
	IdleTimeout   string            `json:"idle_timeout,omitempty"`
	Sandbox       string            `json:"sandbox,omitempty"`
	Artifacts     []string          `json:"artifacts,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	ForEach       *specForEach      `json:"for_each,omitempty"`
	Budget        *specBudget       `json:"budget,omitempty"`
	Workspace     *specWorkspace    `json:"workspace,omitempty"`
}

// specForEach is a loop: its list (the expression's source, or the
// list written in the file), its names, its key and its body.
type specForEach struct {
	Items           string      `json:"items,omitempty"`
	List            []any       `json:"list,omitempty"`
	As              string      `json:"as"`
	IndexAs         string      `json:"index_as"`
	Key             string      `json:"key,omitempty"`
	MaxParallel     int         `json:"max_parallel"`
	ContinueOnError bool        `json:"continue_on_error,omitempty"`
	Merge           *specMerge  `json:"merge,omitempty"`
	Steps           []*specStep `json:"steps"`
}

type specGate struct {
	Pass          string `json:"pass,omitempty"`
	Fail          string `json:"fail,omitempty"`
	Check         string `json:"check,omitempty"`
	LoopBackTo    string `json:"loop_back_to,omitempty"`
	MaxIterations any    `json:"max_iterations,omitempty"`
	// Reviewers and Consensus are left out without a pair review, so
	// that the digests of other gates are what they always were.
	Reviewers []string `json:"reviewers,omitempty"`
	Consensus string   `json:"consensus,omitempty"`
}

type specHuman struct {
	Message     string  `json:"message,omitempty"`
	Timeout     string  `json:"timeout,omitempty"`
	AutoApprove string  `json:"auto_approve,omitempty"`
	Inputs      []Input `json:"inputs,omitempty"`
}

type specRetry struct {
	Backoff    string `json:"backoff,omitempty"`
	MaxBackoff string `json:"max_backoff,omitempty"`
	Jitter     bool   `json:"jitter,omitempty"`
}

type specCleanup struct {
	Run    string `json:"run,omitempty"`
	Prompt string `json:"prompt,omitempty"`
	Agent  string `json:"agent,omitempty"`
}

type specSignals struct {
	Done string `json:"done"`
	Pass string `json:"pass"`
	Fail string `json:"fail"`
}

// Spec returns the canonical JSON form of the workflow: the same bytes
// for the same workflow whichever format it was written in. The runner
// keeps it, with the Digest, in a run's workflow.json.
func (w *Workflow) Spec() ([]byte, error) {
	b, err := json.MarshalIndent(w.spec(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode workflow %s: %w", w.Name, err)
	}
	return b, nil
}

// WriteSpec writes the workflow's Spec to out.
func (w *Workflow) WriteSpec(out io.Writer) error {
	b, err := w.Spec()
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

// MarshalJSON encodes the workflow in its canonical form (see Spec).
func (w *Workflow) MarshalJSON() ([]byte, error) {
	return json.Marshal(w.spec())
}

// Digest returns "sha256:" and the hex SHA-256 of the workflow's Spec; it
// changes exactly when the workflow's meaning does.
func (w *Workflow) Digest() string {
	b, err := w.Spec()
	if err != nil {
		// The spec holds only strings, numbers and maps of strings: it
		// always encodes.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// spec returns the canonical form of the workflow.
func (w *Workflow) spec() *specWorkflow {
	sw := &specWorkflow{
		Name:        w.Name,
		Description: w.Description,
		Vars:        w.Vars,
		Defaults: specDefaults{
			MaxAttempts:   specLimit(w.Defaults.MaxAttempts),
			MaxIterations: specLimit(w.Defaults.MaxIterations),
			Timeout:       specDuration(w.Defaults.Timeout),
			IdleTimeout:   specDuration(w.Defaults.IdleTimeout),
			Sandbox:       w.Defaults.Sandbox,
			Agent:         w.Defaults.Agent,
			Retry:         specRetryOf(w.Defaults.Retry),
			PromptLimit:   w.Defaults.Limits.Prompt,
			CommandLimit:  w.Defaults.Limits.Command,
			ReportLimit:   w.Defaults.Limits.Report,
			LogLimit:      w.Defaults.Limits.Log,
			MaxItems:      w.Defaults.Limits.MaxItems,
			Retention:     specRetentionOf(w.Defaults.Retention),
		},
		Agents:      map[string]*specAgent{},
		MaxParallel: w.MaxParallel,
		Signals:     specSignals{w.Signals.Done, w.Signals.Pass, w.Signals.Fail},
		Secrets:     w.Secrets,
	}
	if sw.Vars == nil {
		sw.Vars = map[string]string{}
	}
	for name, a := range w.Agents {
		sa := &specAgent{Run: tsrc(a.Run), Preset: a.Preset, Model: a.Model, Args: a.Args, Resume: a.Resume, Env: specEnv(a.Env)}
		if p := a.Price; p != nil {
			sa.Price = &specPrice{p.InputPerMTok, p.OutputPerMTok, p.CachedPerMTok}
		}
		sw.Agents[name] = sa
	}
	sw.Budget = specBudgetOf(w.Budget)
	sw.Workspace = specWorkspaceOf(w.Workspace)
	if n := w.Notify; n != nil {
		sw.Notify = &specNotify{On: n.On, Command: n.Command, Webhook: n.Webhook, Timeout: n.Timeout.String()}
	}
	if c := w.Cleanup; c != nil {
		sw.Cleanup = &specCleanup{Run: tsrc(c.Run), Prompt: tsrc(c.Prompt), Agent: c.Agent}
	}
	sw.Steps = make([]*specStep, 0, len(w.Steps))
	for _, s := range w.Steps {
		sw.Steps = append(sw.Steps, specStepOf(s))
	}
	return sw
}

// specStepOf is the spec of a step, with its body when it is a loop.
func specStepOf(s *Step) *specStep {
	ss := &specStep{
		ID:            s.ID,
		Description:   s.Description(),
		Feedback:      specFeedback(s.Feedback),
		Kind:          s.Kind,
		Run:           tsrc(s.Run),
		Prompt:        tsrc(s.Prompt),
		PromptFile:    s.PromptFile(),
		Agent:         s.Agent,
		Needs:         s.Needs,
		When:          esrc(s.When),
		LoopBackTo:    s.LoopBackTo(),
		MaxAttempts:   specLimit(s.MaxAttempts),
		MaxIterations: specLimit(s.MaxIterations),
		Retry:         specRetryOf(s.Retry),
		RetryIf:       esrc(s.RetryIf),
		Timeout:       specDuration(s.Timeout),
		IdleTimeout:   specDuration(s.IdleTimeout),
		Sandbox:       s.Sandbox,
		Env:           specEnv(s.Env),
		Budget:        specBudgetOf(s.Budget),
		Workspace:     specWorkspaceOf(s.Workspace),
	}
	if ss.Needs == nil {
		ss.Needs = []string{}
	}
	if h := s.Human; h != nil {
		ss.Human = &specHuman{Message: tsrc(h.Message), Timeout: specDuration(h.Timeout), AutoApprove: esrc(h.AutoApprove), Inputs: h.Inputs}
	}
	if g := s.Gate; g != nil {
		ss.Gate = &specGate{Pass: esrc(g.Pass), Fail: esrc(g.Fail), Check: tsrc(g.Check), LoopBackTo: g.LoopBackTo, MaxIterations: specLimit(g.MaxIterations),
			Reviewers: g.Reviewers, Consensus: g.Consensus}
	}
	for _, a := range s.Artifacts {
		ss.Artifacts = append(ss.Artifacts, tsrc(a))
	}
	if fe := s.ForEach; fe != nil {
		sf := &specForEach{Items: esrc(fe.Items), List: fe.List, As: fe.As, IndexAs: fe.IndexAs, Key: esrc(fe.Key),
			MaxParallel: fe.MaxParallel, ContinueOnError: fe.ContinueOnError, Steps: []*specStep{}}
		if m := fe.Merge; m != nil {
			sf.Merge = &specMerge{Mode: m.Mode, LoopBackTo: m.LoopBackTo, MaxIterations: specLimit(m.MaxIterations)}
		}
		for _, b := range fe.Body {
			sf.Steps = append(sf.Steps, specStepOf(b))
		}
		ss.ForEach = sf
	}
	return ss
}

func tsrc(t *Template) string {
	if t == nil {
		return ""
	}
	return t.Src
}

func esrc(e *Expr) string {
	if e == nil {
		return ""
	}
	return e.Src
}

// specLimit is a limit's number, or its expression's source.
func specLimit(l *Limit) any {
	switch {
	case l == nil:
		return nil
	case l.Expr != nil:
		return l.Expr.Src
	}
	return l.N
}

// specDuration is a duration in Go's notation, or its expression's source.
func specDuration(d *Duration) string { return d.Text() }

func specRetryOf(r *Retry) *specRetry {
	if r == nil {
		return nil
	}
	sr := &specRetry{Jitter: r.Jitter}
	if r.Backoff > 0 {
		sr.Backoff = r.Backoff.String()
	}
	if r.MaxBackoff > 0 {
		sr.MaxBackoff = r.MaxBackoff.String()
	}
	return sr
}

func specBudgetOf(b *Budget) *specBudget {
	if b == nil {
		return nil
	}
	return &specBudget{CostUSD: b.CostUSD, Tokens: b.Tokens, Sessions: b.Sessions}
}

func specWorkspaceOf(w *Workspace) *specWorkspace {
	if !w.Worktree() {
		return nil
	}
	return &specWorkspace{Mode: w.Mode, Base: w.Base, Root: w.Root, Keep: w.Keep, Setup: tsrc(w.Setup), Copy: w.Copy}
}

func specEnv(env map[string]*Template) map[string]string {
	if len(env) == 0 {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, t := range env {
		out[k] = tsrc(t)
	}
	return out
}

// specFeedback leaves the default out of the spec, so that workflows
// that do not set feedback keep their digests.
func specFeedback(f string) string {
	if f == "append" {
		return ""
	}
	return f
}

func specRetentionOf(r *Retention) *specRetention {
	if r == nil {
		return nil
	}
	s := &specRetention{Keep: r.Keep}
	if r.OlderThan > 0 {
		s.OlderThan = r.OlderThan.String()
	}
	return s
}
