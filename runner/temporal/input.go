package temporal

import (
	"encoding/json"
	"fmt"
	"path"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// WorkflowName is the Temporal workflow type of a flow run; its
// workflow id is the run id.
const WorkflowName = "flow.run"

// The Updates and queries of a run.
const (
	// UpdateDecide decides a human step (DecideRequest → Decided).
	UpdateDecide = "decide"
	// UpdateControl changes the desired control state (ControlRequest).
	UpdateControl = "control"
	// QueryStatus returns the run's status (StatusReply).
	QueryStatus = "status"
	// QueryEvents returns the run's events after a seq (EventsPage).
	QueryEvents = "events"
	// QueryLaunch returns what the run was started with and the worker
	// it runs on (LaunchReply).
	QueryLaunch = "launch"
	// QueryLogs returns the tails of the logs of the run's sessions
	// that ended (LogsReply).
	QueryLogs = "logs"
)

// MaxPayload is the most a run's input, or the state it carries into
// a continued run, may weigh: Temporal refuses payloads above 2 MiB,
// and flow keeps room for the envelope.
const MaxPayload = 2<<20 - 128<<10

// DefaultHistoryLimit is the history length past which a run continues
// as new (about 7 events a step; the server warns at 10,240).
const DefaultHistoryLimit = 8000

// DefaultGatePoll is how often a run on Temporal reads its gate-state
// file while a step waits for gates. Each read is a timer and an
// activity in the run's history, so it is slower than the local
// driver's poll.
const DefaultGatePoll = 10 * time.Second

// Source is a workflow file as the run reads it: its bytes and those of
// its prompt files, by paths relative to the repository (slash
// separated), so that a worker finds them under its own checkout.
type Source struct {
	Path    string            `json:"path"`
	Data    []byte            `json:"data"`
	Prompts map[string][]byte `json:"prompts,omitempty"`
}

// Input is a run's workflow input.
type Input struct {
	RunID      string            `json:"run_id"`
	Source     Source            `json:"source"`
	Invocation record.Invocation `json:"invocation"`
	Vars       map[string]string `json:"vars,omitempty"`
	Budgets    spec.Budgets      `json:"budgets"`
	// TaskQueue is where the run's first activity goes; later ones go
	// to the queue its worker names (Host.Queue).
	TaskQueue string `json:"task_queue"`
	// HistoryLimit is the history length past which the run continues
	// as new; 0 means DefaultHistoryLimit.
	HistoryLimit int `json:"history_limit,omitempty"`
	// StartAt is the step a new run starts at: the steps before it are
	// skipped (flow run --start-at-step with no run to restart).
	StartAt core.StepKey `json:"start_at,omitzero"`
	// SessionHeartbeat is how long a session's activity may go without
	// beating before Temporal runs it again; 0 means a minute.
	SessionHeartbeat time.Duration `json:"session_heartbeat,omitempty"`
	// GatePoll is how often the run reads its gate-state file while a
	// step waits for gates; 0 means DefaultGatePoll.
	GatePoll time.Duration `json:"gate_poll,omitempty"`
	// Carried is what a continued run takes over; nil for a new run.
	Carried *Carried `json:"carried,omitempty"`
	// Restart is what a run started again from its recorded state takes
	// over (flow resume, flow retry, --start-at-step); nil for a new run.
	Restart *Restart `json:"restart,omitempty"`
}

// Restart is a run started again, in a new workflow execution with the
// same workflow id, from the state its last execution ended with: the
// worker it ran on, that state, and what to reset first.
type Restart struct {
	Host  Host            `json:"host"`
	State json.RawMessage `json:"state"`
	// StartAt resets this step and what depends on it (--start-at-step).
	StartAt core.StepKey `json:"start_at,omitzero"`
	// Retry puts the failed steps, and what depends on them, back to
	// PENDING (flow retry).
	Retry bool `json:"retry,omitempty"`
	// Control is the desired control state the last execution ended
	// with: a paused run started again stays paused until flow
	// continue, as a local run reads control.json. "" is continuous.
	Control core.ControlState `json:"control,omitempty"`
	// Move moves the run off Host, whose worker is lost (flow resume
	// --move): the run goes on on whichever worker of the run's task
	// queue opens it, in that worker's repository, from State; the
	// steps that were running on Host run again there.
	Move bool `json:"move,omitempty"`
}

// Host is the worker a run's sessions run on: its name, its
// repository, and the task queue that reaches it (its own queue, or the
// shared one when the workers share the repository).
type Host struct {
	Name  string `json:"name"`
	Repo  string `json:"repo"`
	Queue string `json:"queue"`
}

// Carried is what a run carries into its continuation.
type Carried struct {
	Host    Host            `json:"host"`
	State   json.RawMessage `json:"state"`
	Core    core.Carry      `json:"core"`
	Inputs  []TaggedInput   `json:"inputs,omitempty"`
	Segment int             `json:"segment"`
}

// Result is how a run ended: the workflow's result.
type Result struct {
	RunID    string         `json:"run_id"`
	Status   core.RunStatus `json:"status"`
	ExitCode int            `json:"exit_code"`
	Reason   string         `json:"reason"`
	RunDir   string         `json:"run_dir"`
}

// DecideRequest decides a human step (flow approve, flow reject).
type DecideRequest struct {
	Step  core.StepKey    `json:"step"`
	Input core.HumanInput `json:"input"`
}

// Decided is the answer to a decision that won.
type Decided struct {
	RunID    string       `json:"run_id"`
	Step     core.StepKey `json:"step"`
	Approved bool         `json:"approved"`
	By       string       `json:"by,omitempty"`
}

// ControlRequest asks for a desired control state: pause, continuous
// (flow continue), run_once or run_cleanup.
type ControlRequest struct {
	Desired core.ControlState `json:"desired"`
}

// StatusReply is the answer to QueryStatus: the run's state and the
// liveness of its driver, which ops.Status writes as flow status --json
// does.
type StatusReply struct {
	State    *core.State     `json:"state"`
	Liveness record.Liveness `json:"liveness"`
	RunDir   string          `json:"run_dir"`
	Host     Host            `json:"host"`
	// Control is the desired control state the run acts on.
	Control core.ControlState `json:"control,omitempty"`
}

// EventsPage is the answer to QueryEvents: events after the seq asked
// for, at most maxPage of them, and whether the run has ended.
type EventsPage struct {
	Events []core.Event `json:"events"`
	Done   bool         `json:"done"`
	// Retries are the retries' waits after the first of Events.
	Retries []RetryNote `json:"retries,omitempty"`
}

// LaunchReply is the answer to QueryLaunch: the run's input, as its
// first execution was given it (without what a continued or restarted
// one carries), and the worker its sessions run on.
type LaunchReply struct {
	Input Input `json:"input"`
	Host  Host  `json:"host"`
}

// LogTail is the end of a session's log: what a session's activity
// beats with while it runs and returns when it ends, at most TailBytes.
type LogTail struct {
	Step      core.StepKey `json:"step"`
	Iteration int          `json:"iteration"`
	Attempt   int          `json:"attempt"`
	// Host is the worker the session ran on and Log its log's path
	// there; Size is the log's size, of which Tail is the end.
	Host string `json:"host"`
	Log  string `json:"log"`
	Size int64  `json:"size"`
	Tail string `json:"tail"`
	// PID is the session's process, in a running session's beats.
	PID int `json:"pid,omitempty"`
}

// TailBytes bounds the tail of a log that heartbeats, results and
// QueryLogs carry.
const TailBytes = 4 << 10

// LogsReply is the answer to QueryLogs: the tail of the last session of
// each step that ran in this execution of the run, in the run's order.
type LogsReply struct {
	Tails []LogTail `json:"tails"`
}

// RetryNote is a retry's wait, which no event records: the follower
// prints "STEP: retrying in DELAY" after the event of seq After, as the
// local driver prints it.
type RetryNote struct {
	After int64         `json:"after"`
	Step  core.StepKey  `json:"step"`
	Delay time.Duration `json:"delay"`
}

// TaggedInput is a core input in a continued run's input.
type TaggedInput struct {
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

// carried maps the kind of each core input a run carries across
// continue-as-new to its decoder; tag gives an input its kind.
var carried = map[string]func([]byte) (core.Input, error){
	"begin":          decodeInput[core.Begin],
	"when":           decodeInput[core.WhenResult],
	"items":          decodeInput[core.ItemsResult],
	"session_done":   decodeInput[core.SessionDone],
	"session_pid":    decodeInput[core.SessionPID],
	"human_ready":    decodeInput[core.HumanReady],
	"human_decision": decodeInput[core.HumanDecision],
	"timer_fired":    decodeInput[core.TimerFired],
	"control":        decodeInput[core.ControlChanged],
	"gates":          decodeInput[core.GatesChanged],
	"cleanup_done":   decodeInput[core.CleanupDone],
	"interrupt":      decodeInput[core.Interrupt],
}

// decodeInput decodes a carried input of type T.
func decodeInput[T core.Input](b []byte) (core.Input, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// tag encodes a core input.
func tag(in core.Input) (TaggedInput, error) {
	var kind string
	switch in.(type) {
	case core.Begin:
		kind = "begin"
	case core.WhenResult:
		kind = "when"
	case core.ItemsResult:
		kind = "items"
	case core.SessionDone:
		kind = "session_done"
	case core.SessionPID:
		kind = "session_pid"
	case core.HumanReady:
		kind = "human_ready"
	case core.HumanDecision:
		kind = "human_decision"
	case core.TimerFired:
		kind = "timer_fired"
	case core.ControlChanged:
		kind = "control"
	case core.GatesChanged:
		kind = "gates"
	case core.CleanupDone:
		kind = "cleanup_done"
	case core.Interrupt:
		kind = "interrupt"
	default:
		return TaggedInput{}, fmt.Errorf("cannot carry input %T", in)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return TaggedInput{}, err
	}
	return TaggedInput{Kind: kind, Data: b}, nil
}

// untag decodes a carried input.
func untag(t TaggedInput) (core.Input, error) {
	dec, ok := carried[t.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown carried input %q", t.Kind)
	}
	return dec(t.Data)
}

// ParseSource parses a run's workflow as a worker with repository repo
// sees it: the source and its prompt files on an in-memory file system
// at their places under repo, read as the invocation says. It reads
// nothing else, so that the workflow code and every worker get the same
// model from the same input.
func ParseSource(repo string, src Source, inv record.Invocation) (*config.Workflow, error) {
	fsys := afero.NewMemMapFs()
	file := path.Join(repo, src.Path)
	if err := afero.WriteFile(fsys, file, src.Data, 0o644); err != nil {
		return nil, err
	}
	for p, b := range src.Prompts {
		if err := afero.WriteFile(fsys, path.Join(repo, p), b, 0o644); err != nil {
			return nil, err
		}
	}
	return config.LoadWith(fsys, file, inv.LoadOptions(repo))
}

// checkSize refuses a payload over MaxPayload, saying what it is.
func checkSize(what string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	if len(b) > MaxPayload {
		return fmt.Errorf("%s is %d bytes, more than %d, the most a Temporal payload may carry (about 2 MB): run it with the local engine", what, len(b), MaxPayload)
	}
	return nil
}
