package config

import (
	"fmt"
	"slices"
	"time"

	"github.com/flow-run/flow/gates"
)

// The dialects a workflow file is read in.
const (
	DialectFlow         = "flow"
	DialectOrchestrator = "orchestrator"
)

// CompatOrchestrator is the value of compat: for agent_orchestrator's
// session contract.
const CompatOrchestrator = "agent_orchestrator"

// The default attempt and iteration budgets, agent_orchestrator's.
const (
	DefaultMaxAttempts   = 2
	DefaultMaxIterations = 4
	DefaultMaxParallel   = 1
)

// Workflow is a validated workflow, decoded from YAML or HCL. Every
// expression and template in it has been compiled; positions point into
// the file it was loaded from.
type Workflow struct {
	// File is the path the workflow was loaded from, as given to Load.
	File string
	// Format is "yaml" or "hcl".
	Format string
	// Dialect is DialectFlow, or DialectOrchestrator for a file read in
	// agent_orchestrator's format (docs/agent-orchestrator.md, "Which format a file is in").
	Dialect string
	// DialectReason says why a file was read in agent_orchestrator's
	// format, for a notice; "" when it was told to.
	DialectReason string `cmp:"-"`
	// Compat is CompatOrchestrator when sessions follow
	// agent_orchestrator's contract (its environment and report rules),
	// as those of a file in its format do; "" for flow's own.
	Compat string
	// Warnings are problems that do not stop the workflow from loading:
	// keys read and ignored, as their format does. Each is a Diagnostic
	// of SeverityWarning.
	Warnings Diagnostics `cmp:"-"`
	// Notes say, step by step, how a file in another format was mapped
	// onto this model, for `flow convert`; "" is the workflow's own.
	Notes map[string][]string `cmp:"-"`

	Name        string
	Description string
	// Vars holds the declared variables; VarOrder lists their names in
	// file order.
	Vars     map[string]string
	VarOrder []string
	Defaults Defaults
	// Agents maps an agent name to how its sessions are started.
	Agents map[string]*Agent
	// Steps lists the steps in file order.
	Steps       []*Step
	MaxParallel int
	// Cleanup is the session that run_cleanup starts, or nil.
	Cleanup *Cleanup
	Signals Signals
	// Secrets lists the environment variables the workflow declares
	// secret, in file order; see IsSecretName for the names that are
	// secret without being declared.
	Secrets []string
	// Budget bounds what all the run's sessions consume together, or is
	// nil.
	Budget *Budget
	// Notify says whom to tell when the run needs a human or ends, or
	// is nil: the workflow's notify over the defaults', key by key.
	Notify *Notify
	// Workspace is where the run's sessions work; nil is shared.
	Workspace *Workspace

	// Pos is where the workflow's name is declared.
	Pos Pos

	// index maps the id of a step of the top level to its place in
	// Steps (the first, when ids repeat); Load builds it, and the graph
	// methods fall back to a search without it. byID maps the ids of the
	// steps of loops' bodies to them (Step reads it before index); nil
	// when there are no loops.
	index map[string]int
	byID  map[string]*Step
	// reviewerOf maps the id of each reviewer to its consensus step;
	// Load builds it, and ReviewerOf falls back to a search without it.
	reviewerOf map[string]*Step
}

// Defaults are the values a step takes when it does not set its own.
type Defaults struct {
	MaxAttempts   *Limit
	MaxIterations *Limit
	Timeout       *Duration
	IdleTimeout   *Duration
	// Sandbox is the sandbox mode of every step that sets none: "on",
	// "required" or "off"; "" is on.
	Sandbox string
	// Agent is the agent of prompt steps and a prompt cleanup that name
	// none. Load has already applied it: Step.Agent and Cleanup.Agent
	// hold the agent each runs, so nothing else need read it.
	Agent    string
	AgentPos Pos
	Retry    *Retry
	// Limits holds the sizes the workflow sets; a zero field is not set.
	// Workflow.Limits fills in the defaults.
	Limits Limits
	// Retention says which finished runs of the workflow are removed
	// when one of its runs ends; nil removes none.
	Retention *Retention
}

// Retention is defaults.retention: which completed runs of the workflow
// the local driver removes when one of its runs ends (package
// runner/retention). A loaded Retention sets Keep, OlderThan or both.
type Retention struct {
	// Keep is how many of the newest completed runs stay whatever their
	// age; 0 is no limit by number.
	Keep int
	// OlderThan is how long ago a completed run must have ended to go;
	// 0 is no limit by age.
	OlderThan time.Duration
	// Pos is where retention is written.
	Pos Pos
}

// Agent says how a session of an agent is started: Run is a shell
// command that reads the prompt from $FLOW_PROMPT or $FLOW_PROMPT_FILE,
// or Preset names a tool that flow starts itself (docs/agents.md). Exactly
// one of the two is set in a loaded agent.
type Agent struct {
	Name string
	// Run is the command of a run: agent; nil for a preset agent.
	Run *Template
	// Preset is "claude", "codex" or "gemini", or "" for a run: agent.
	// Model, Args, Resume and Price are a preset agent's only.
	Preset string
	// Model is the model the tool is asked for; "" leaves it the tool's
	// own default.
	Model string
	// Args are more arguments for the tool, passed as written.
	Args []string
	// Resume continues the conversation when a step is re-entered; true
	// by default for a preset agent, always false for a run: agent.
	Resume bool
	// Price, when set, prices the tokens of sessions whose tool reports
	// no cost.
	Price *Price
	Env   map[string]*Template
	Pos   Pos
}

// Price is what an agent's tokens cost, in USD per million tokens.
type Price struct {
	InputPerMTok, OutputPerMTok, CachedPerMTok float64
}

// Budget bounds what sessions may consume, for a whole run
// (Workflow.Budget) or for a step (Step.Budget). The runner stops
// before starting a session once a limit is reached. A zero field is
// no limit; a loaded Budget has at least one field set.
type Budget struct {
	CostUSD  float64 // 0: no limit
	Tokens   int64   // input and output tokens together; 0: no limit
	Sessions int     // 0: no limit
	// DailyCostUSD is, in the workflow's budget only, the most every
	// run of the repository may spend in a UTC day; 0: no limit.
	DailyCostUSD float64
	// Pos is where budget is written.
	Pos Pos
}

// Notify tells people of a run's events without their watching it: a
// command run with the notification on its stdin, a webhook POSTed to,
// or both (at least one is set in a loaded Notify). Package
// internal/notify sends; the runner decides when.
type Notify struct {
	// On lists the events to tell of, in the order of NotifyEvents;
	// DefaultNotifyOn when the workflow gives none.
	On []string
	// Command is a shell command (sh -c), or "".
	Command string
	// Webhook is a URL, or "", as written: $NAME and ${NAME} in it are
	// read from the environment when a notification is sent (their
	// names are among Workflow.Secrets).
	Webhook string
	// Timeout bounds each notifier (DefaultNotifyTimeout when not set).
	Timeout time.Duration
	// Pos is where notify is written (the workflow's, else the
	// defaults').
	Pos Pos
}

// Notifies reports whether n tells of event (nil tells of none).
func (n *Notify) Notifies(event string) bool {
	return n != nil && slices.Contains(n.On, event)
}

// The events a notify block may tell of. The runner tells of the first
// four as a run reaches them; dead is seen by whoever reads a run whose
// runner is gone.
const (
	NotifyWaitingOnHuman = "waiting_on_human"
	NotifyFailed         = "failed"
	NotifyBudgetExceeded = "budget_exceeded"
	NotifyCompleted      = "completed"
	NotifyDead           = "dead"
)

// NotifyEvents lists the events a notify block may tell of, in order.
var NotifyEvents = []string{NotifyWaitingOnHuman, NotifyFailed, NotifyBudgetExceeded, NotifyCompleted, NotifyDead}

// DefaultNotifyOn are the events told of when notify gives no on: those
// that want a person.
var DefaultNotifyOn = []string{NotifyWaitingOnHuman, NotifyFailed, NotifyBudgetExceeded}

// DefaultNotifyTimeout bounds a notifier when notify gives no timeout;
// MaxNotifyTimeout is the longest a workflow may give, since a run that
// ends waits for its notifications.
const (
	DefaultNotifyTimeout = 10 * time.Second
	MaxNotifyTimeout     = 5 * time.Minute
)

// StepKind is what a step does: run a command, prompt an agent or wait
// for a human.
type StepKind string

// The step kinds.
const (
	KindCommand StepKind = "command"
	KindAgent   StepKind = "agent"
	KindHuman   StepKind = "human"
	// KindLoop is a for_each step: it runs its body once per item.
	KindLoop StepKind = "loop"
	// KindConsensus is a step whose gate has reviewers: it runs no
	// session, and decides from its reviewers' verdicts (docs/concepts.md, "Pair review").
	KindConsensus StepKind = "consensus"
)

// Step is one node of the workflow. What few steps write (a
// description, a prompt file, metadata, gates of the gate-state file,
// needs written out, a step-level loop_back_to) is in Extra, read
// through the methods of the same names; the rest of what a command
// does not need (its prompt and agent, human, gate, limits, retries,
// timeouts, artifacts, env, budget, loop) is in StepOptions, which
// every step loaded has.
type Step struct {
	ID   string
	Pos  Pos
	Kind StepKind

	// Run is the command of a command step.
	Run *Template

	// Needs lists the dependencies after applying the file-order rule:
	// a step without needs depends on the step before it.
	Needs []string

	// Loop is, for a step of a loop's body, the id of its loop step;
	// "" for a step of the workflow's top level.
	Loop string

	// Extra holds what few steps write, or is nil when the step writes
	// none of it.
	Extra *StepExtra

	// StepOptions is never nil in a loaded workflow's step. It is
	// read-only once the workflow is loaded, as all of the model is.
	*StepOptions
}

// StepOptions is the part of a Step that a plain command step leaves
// at its defaults.
type StepOptions struct {
	// Feedback is "append" (the default) when a re-entered agent step's
	// prompt ends with why its work was sent back, "none" when not.
	Feedback string

	// Prompt is the prompt of an agent step given inline, or read from
	// its prompt file (see PromptFile).
	Prompt *Template
	// PromptPath is the prompt of an agent step given as the path of a
	// file found when the step starts, not when the workflow loads (an
	// earlier step may write it): see the runner's prompt lookup. Set
	// only in place of Prompt and PromptFile.
	PromptPath string
	// Agent is the agent of an agent step, after defaults.agent: the
	// one to start, never "" in a loaded agent step.
	Agent string
	// Model is the model asked of the agent for this step, given to the
	// session as $STEP_MODEL; "" for none.
	Model string
	Human *Human

	When *Expr
	Gate *Gate

	MaxAttempts   *Limit
	MaxIterations *Limit
	Retry         *Retry
	RetryIf       *Expr
	Timeout       *Duration
	IdleTimeout   *Duration
	// Sandbox is the step's own sandbox mode ("on", "required", "off"),
	// or "" for the defaults' (StepSandbox).
	Sandbox   string
	Artifacts []*Template
	Env       map[string]*Template
	// Budget bounds what the step's sessions consume, all attempts and
	// iterations together (for a step of a loop's body, all its items
	// together), or is nil. Never set on a human or a loop step.
	Budget *Budget

	// ForEach makes the step a loop over items (docs/loops.md, "Keys"): its body
	// runs once per item. It is set exactly for KindLoop steps.
	ForEach *ForEach

	// Workspace is where the step's sessions work (for a loop, each of
	// its items'); nil is the run's workspace.
	Workspace *Workspace
}

// defaultOptions are the options of a step that sets none.
func defaultOptions() *StepOptions { return &StepOptions{Feedback: "append"} }

// StepExtra is the part of a Step that most steps leave out.
type StepExtra struct {
	// Description says what the step does, for people.
	Description string
	// PromptFile is the path of the prompt file, relative to the
	// workflow file (already read and compiled into Step.Prompt).
	PromptFile string
	// Metadata is data about the step for people and tools, as written;
	// expressions read it as steps.<id>.metadata.
	Metadata map[string]any
	// Gates names the gates of the gate-state file that must be open
	// before the step starts (docs/concepts.md, "Gates of a gate-state file").
	Gates []string
	// NeedsSet is true when the file wrote needs explicitly, and
	// NeedsPos is where.
	NeedsSet bool
	NeedsPos Pos
	// LoopBackTo is the step-level loop_back_to as written, and LoopPos
	// where.
	LoopBackTo string
	LoopPos    Pos
}

// extra returns the step's Extra, allocating it the first time.
func (s *Step) extra() *StepExtra {
	if s.Extra == nil {
		s.Extra = &StepExtra{}
	}
	return s.Extra
}

// Description says what the step does, for people; "" when the file
// gives no description.
func (s *Step) Description() string {
	if s.Extra == nil {
		return ""
	}
	return s.Extra.Description
}

// PromptFile is the path of an agent step's prompt file relative to the
// workflow file, already read and compiled into Prompt; "" for none.
func (s *Step) PromptFile() string {
	if s.Extra == nil {
		return ""
	}
	return s.Extra.PromptFile
}

// Metadata is data about the step for people and tools, as written
// (nil for none); expressions read it as steps.<id>.metadata.
func (s *Step) Metadata() map[string]any {
	if s.Extra == nil {
		return nil
	}
	return s.Extra.Metadata
}

// Gates names the gates of the gate-state file that must be open before
// the step starts (docs/concepts.md, "Gates of a gate-state file"); nil for none.
func (s *Step) Gates() []string {
	if s.Extra == nil {
		return nil
	}
	return s.Extra.Gates
}

// NeedsSet reports whether the file wrote needs explicitly.
func (s *Step) NeedsSet() bool { return s.Extra != nil && s.Extra.NeedsSet }

// NeedsPos is where needs was written, or the step's position.
func (s *Step) NeedsPos() Pos {
	if s.NeedsSet() {
		return s.Extra.NeedsPos
	}
	return s.Pos
}

// LoopBackTo is the step-level loop_back_to as written, "" for none;
// LoopBack resolves it with the gate's, and HasGate says whether the
// step has a gate at all.
func (s *Step) LoopBackTo() string {
	if s.Extra == nil {
		return ""
	}
	return s.Extra.LoopBackTo
}

// LoopPos is where the step-level loop_back_to is written.
func (s *Step) LoopPos() Pos {
	if s.Extra == nil {
		return Pos{}
	}
	return s.Extra.LoopPos
}

// DefaultMaxItems is the most items a loop may have unless
// defaults.max_items says otherwise (docs/loops.md, "Keys").
const DefaultMaxItems = 10000

// ForEach is what a for_each step loops over and what it runs per item.
type ForEach struct {
	// Items is the expression that gives the list of items, evaluated
	// when the loop step becomes ready; nil when the file wrote the
	// list itself (List).
	Items *Expr
	// List is a literal list written in the file, as JSON-compatible
	// values (string, float64, bool, nil, []any, map[string]any).
	List []any
	// As names the item in the body's expressions and templates
	// (default "item"); IndexAs names its position (default "index").
	As      string
	IndexAs string
	// Key is the expression giving an item's stable key (evaluated
	// with the item in scope); nil keys items by their index.
	Key *Expr
	// MaxParallel is how many items run at once (default 1).
	MaxParallel int
	// MaxItems is the most items this loop may have; 0 leaves it to
	// defaults.max_items.
	MaxItems int
	// ContinueOnError runs every item even when one fails; the loop
	// step still fails at the end, naming the failed items.
	ContinueOnError bool
	// Merge is how the items' work comes back when they have
	// worktrees, as written; nil when the loop gives none (see
	// Step.ItemMerge).
	Merge *Merge
	// Body lists the steps run per item, in file order. Their Loop is
	// the loop step's id; their Needs name body steps or steps of the
	// top level before the loop.
	Body []*Step
	// Pos is where for_each is written.
	Pos Pos
}

// Gate decides, after a step's session succeeded, whether its work passes.
type Gate struct {
	Pass  *Expr
	Fail  *Expr
	Check *Template
	// LoopBackTo is gate.loop_back_to as written; Step.LoopBack resolves
	// it with the step's own.
	LoopBackTo    string
	LoopPos       Pos
	MaxIterations *Limit
	Pos           Pos

	// Reviewers are the steps of a pair review, in file order: set
	// exactly on a KindConsensus step, at least two steps of its scope,
	// none the reviewer of another gate. Pass, Fail and Check, when
	// given, are evaluated once the consensus passes.
	Reviewers    []string
	ReviewersPos Pos
	// Consensus is how the reviewers' verdicts decide, one of
	// Consensuses; "" when there are no reviewers, ConsensusAll when
	// the file gives none.
	Consensus string
}

// The consensus rules of a pair review (docs/concepts.md, "Pair review"). A MIXED verdict
// counts as FAIL.
const (
	// ConsensusAll passes when every reviewer passes; a missing verdict
	// fails the gate.
	ConsensusAll = "all"
	// ConsensusAny passes on one PASS and no FAIL.
	ConsensusAny = "any"
	// ConsensusMajority passes when more reviewers pass than fail; a
	// tie fails.
	ConsensusMajority = "majority"
)

// Consensuses lists the consensus rules, the default first.
var Consensuses = []string{ConsensusAll, ConsensusAny, ConsensusMajority}

// Human is the definition of a human step.
type Human struct {
	Message     *Template
	Timeout     *Duration
	AutoApprove *Expr
	// Inputs are the inputs an approval gives later steps, in file
	// order; none means an approval may give any.
	Inputs []Input
	// AnyFile makes a manual-input file that exists a decision even when
	// written by hand (agent_orchestrator's human_in_the_loop): a JSON
	// object with a boolean approved is honoured, any other content
	// approves, kept as the input.
	AnyFile bool
}

// Input is an input a human gives when approving a step; later steps
// read it as steps.<id>.input.<name>. Its JSON is its form in a run's
// workflow.json.
type Input struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Required inputs must be given by an approval; the others take
	// Default ("" when the workflow gives none) when not given, so that
	// every declared input has a value after an approval.
	Required bool   `json:"required,omitempty"`
	Default  string `json:"default,omitempty"`
	Pos      Pos    `json:"-"`
}

// Retry spaces out the attempts of a step.
type Retry struct {
	Backoff    time.Duration
	MaxBackoff time.Duration
	Jitter     bool
}

// Cleanup is the session started by the run_cleanup control state.
type Cleanup struct {
	Run    *Template
	Prompt *Template
	// Agent is the agent of a prompt, after defaults.agent; "" for a
	// command.
	Agent string
}

// Signals holds the words that, alone on an output line, set signals.
type Signals struct {
	Done string
	Pass string
	Fail string
}

// Pos is a position in a workflow file; Line and Col are 1-based.
type Pos struct {
	File string
	Line int
	Col  int
}

// String formats the position as file:line:col.
func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

// Expr is an expression written in a workflow, compiled at load.
type Expr struct {
	Src  string
	Pos  Pos
	prog *gates.Program
}

// Program returns the compiled expression.
func (e *Expr) Program() *gates.Program { return e.prog }

// Template is a string written in a workflow with {{ expr }} parts,
// compiled at load.
type Template struct {
	Src  string
	Pos  Pos
	tmpl *gates.Template
}

// Compiled returns the compiled template.
func (t *Template) Compiled() *gates.Template { return t.tmpl }

// Limit is a budget (max_attempts, max_iterations): a constant, or an
// expression evaluated when the budget is needed.
type Limit struct {
	N    int
	Expr *Expr
	Pos  Pos
}

// Duration is a duration: a constant, or an expression evaluated when
// it is needed (its value a duration string or a number of seconds).
type Duration struct {
	D    time.Duration
	Expr *Expr
	Pos  Pos
}

// Text writes the duration in Go's notation, or its expression's
// source; "" for nil.
func (d *Duration) Text() string {
	switch {
	case d == nil:
		return ""
	case d.Expr != nil:
		return d.Expr.Src
	}
	return d.D.String()
}
