package gates

// This file fixes the API of the gates package; the implementation
// lives beside it.

import (
	"time"

	"github.com/spf13/afero"
)

// Kind is the type an expression must produce.
type Kind int

// The kinds of expression results.
const (
	// Any accepts any value.
	Any Kind = iota
	// Bool requires a boolean (when, gate.pass, gate.fail, retry_if,
	// human.auto_approve).
	Bool
)

// Scope lists the names an expression may reference, so that unknown
// steps and vars are rejected at compile time.
type Scope struct {
	// Steps are the ids of the workflow's steps.
	Steps []string
	// Vars are the names of the workflow's vars.
	Vars []string
	// Item and Index, set for the expressions of a loop's body (and its
	// key:), are the names the item and its position go by there (the
	// loop's as: and index_as:); "" elsewhere, where neither name
	// exists.
	Item, Index string
	// Elsewhere maps the ids of steps the workflow has but that are not
	// in Steps (the steps of a loop's body, seen from outside it) to why
	// they cannot be read here; a reference to one is an error with
	// that reason as its message.
	Elsewhere map[string]string
	// Inputs, when not nil, maps each human step (of the top level and
	// of loop bodies) to the names of the inputs it declares: an empty
	// list takes any input. A step not in it takes none: it has no
	// human block. steps.X.input.NAME is checked against it.
	Inputs map[string][]string
}

// Error is a compile error, positioned inside the expression or
// template source: Line and Col are 1-based and count runes of the
// source text as given (for a template, of the whole template string).
type Error struct {
	Line, Col int
	// Offset is the 0-based byte offset of the error in the source.
	Offset int
	Msg    string
	// Suggestion is the name that the did-you-mean hint of Msg
	// suggests, or "" when Msg has none.
	Suggestion string
}

func (e *Error) Error() string { return e.Msg }

// RunInfo is `run` in the expression environment.
type RunInfo struct {
	ID        string    `expr:"id"`
	Workflow  string    `expr:"workflow"`
	StartedAt time.Time `expr:"started_at"`
	Iteration int       `expr:"iteration"`
	// Usage is what every session of the run has consumed so far.
	Usage Usage `expr:"usage"`
}

// Usage is `usage` of steps.<id> and of run: what sessions consumed, as
// their agents report it (zero for a session that reports nothing, such
// as a command).
type Usage struct {
	TokensIn     int64   `expr:"tokens_in"`
	TokensOut    int64   `expr:"tokens_out"`
	TokensCached int64   `expr:"tokens_cached"`
	CostUSD      float64 `expr:"cost_usd"`
	Turns        int     `expr:"turns"`
	Sessions     int     `expr:"sessions"`
}

// Map returns the usage under its expression names ("tokens_in",
// "cost_usd", ...).
func (u Usage) Map() map[string]any {
	return map[string]any{
		"tokens_in":     u.TokensIn,
		"tokens_out":    u.TokensOut,
		"tokens_cached": u.TokensCached,
		"cost_usd":      u.CostUSD,
		"turns":         u.Turns,
		"sessions":      u.Sessions,
	}
}

// StepInfo is `steps.<id>` in the expression environment.
type StepInfo struct {
	Status    string            `expr:"status"`
	Attempts  int               `expr:"attempts"`
	Iteration int               `expr:"iteration"`
	ExitCode  int               `expr:"exit_code"`
	Output    string            `expr:"output"`
	Signals   map[string]bool   `expr:"signals"`
	Verdict   string            `expr:"verdict"`
	Metrics   map[string]string `expr:"metrics"`
	Artifacts []string          `expr:"artifacts"`
	Report    map[string]any    `expr:"report"`
	Input     map[string]any    `expr:"input"`
	Error     string            `expr:"error"`
	Duration  time.Duration     `expr:"duration"`
	// Usage is what the step's sessions consumed, all its attempts and
	// iterations together.
	Usage Usage `expr:"usage"`
	// Metadata is the step's metadata as written in the workflow.
	Metadata map[string]any `expr:"metadata"`
	// Items are a for_each step's items, in item order: each a map of
	// "key", "index", "item", "status" and, under each body step's id,
	// that step's facts for the item (the fields of StepInfo by their
	// expr names; see StepInfo.Map).
	Items []map[string]any `expr:"items"`
}

// Feedback is `feedback`: why a loop-back re-entered the current step.
type Feedback struct {
	Step   string         `expr:"step"`
	Reason string         `expr:"reason"`
	Report map[string]any `expr:"report"`
	// Output is the evidence: the tail of the failing gate.check's or
	// session's output.
	Output string `expr:"output"`
}

// CheckInfo is `check`: the result of a gate's check command.
type CheckInfo struct {
	ExitCode int    `expr:"exit_code"`
	Output   string `expr:"output"`
}

// Env is the data an expression is evaluated against. The zero value
// of every field is valid. File functions (file_exists, read_file,
// read_json, glob) read FS relative to Dir; now() returns Now.
type Env struct {
	Vars  map[string]string
	Env   map[string]string
	Run   RunInfo
	Steps map[string]StepInfo

	// The step being decided.
	ExitCode  int
	Output    string
	Signals   map[string]bool
	Verdict   string
	Metrics   map[string]string
	Report    map[string]any
	Attempt   int
	Iteration int
	Error     string
	Feedback  Feedback
	Check     CheckInfo
	// Item and Index are the loop item and its position, for a step of
	// a loop's body (the names Scope.Item and Scope.Index refer to).
	Item  any
	Index int

	FS  afero.Fs
	Dir string
	Now time.Time
}

// Compile compiles an expression once, checking it against the typed
// environment and scope. Errors are *Error.
//   func Compile(src string, scope Scope, kind Kind) (*Program, error)
// Program evaluation:
//   func (p *Program) Eval(env *Env) (any, error)
//   func (p *Program) EvalBool(env *Env) (bool, error)
// Templates ({{ expr }} parts in a string):
//   func CompileTemplate(src string, scope Scope) (*Template, error)
//   func (t *Template) Render(env *Env) (string, error) // RenderLimit with DefaultRenderLimit
//   func (t *Template) RenderLimit(env *Env, limit int) (string, error) // *TooLargeError over limit
//   func (t *Template) Static() (string, bool) // the text when it has no {{ }}
// Many expressions against one scope, each compiled as above:
//   func NewCompiler(scope Scope) *Compiler
//   func (c *Compiler) Compile(src string, kind Kind) (*Program, error)
//   func (c *Compiler) CompileTemplate(src string) (*Template, error)
