package core

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/flow-run/flow/internal/event"
)

// Event is one line of events.jsonl.
type Event = event.Event

// The event types. Every change of a run is one of these; Apply folds
// them into the State.
const (
	EvRunCreated      = "run_created"
	EvRunnerStarted   = "runner_started"
	EvWorkflowChanged = "workflow_changed"
	EvStepAdded       = "step_added"
	EvStepRemoved     = "step_removed"
	EvStartAt         = "start_at"
	EvRetry           = "retry"
	EvCleanupStarted  = "cleanup_started"
	EvCleanupFinished = "cleanup_finished"
	EvReconciled      = "step_reconciled"
	EvStepStarted     = "step_started"
	EvSessionStarted  = "session_started"
	EvStepSkipped     = "step_skipped"
	EvStepWaiting     = "step_waiting"
	EvHumanInput      = "human_input"
	EvStepCompleted   = "step_completed"
	EvGateFailed      = "gate_failed"
	EvAttemptFailed   = "attempt_failed"
	EvStepFailed      = "step_failed"
	EvStepInterrupted = "step_interrupted"
	EvRunFinished     = "run_finished"
	EvRunInterrupted  = "interrupted"
	EvRunPaused       = "run_paused"
	EvRunWaiting      = "run_waiting"
	// EvRunnerExited records that the runner left a run it did not
	// finish (flow run --no-wait at a human step, or paused), with the
	// exit code its process exits with.
	EvRunnerExited = "runner_exited"
	EvControl      = "control"
	EvWarning      = "warning"
	// EvBudgetExceeded records that a cost, token or session budget ran
	// out: the run stops before its next session (exit 6).
	EvBudgetExceeded = "budget_exceeded"
	// EvBudgetRaised records budgets raised on the command line.
	EvBudgetRaised = "budget_raised"
	// EvLoopItems records a loop's items when the loop starts: resume
	// never evaluates the list again.
	EvLoopItems = "loop_items"
	// EvItemStarted and EvItemFinished record an item of a loop being
	// admitted and finishing.
	EvItemStarted  = "item_started"
	EvItemFinished = "item_finished"
	// EvGatesWaiting says a step that could start waits for gates of
	// the gate-state file to open.
	EvGatesWaiting = "gates_waiting"
)

// RunCreated is the data of EvRunCreated.
type RunCreated struct {
	RunID           string            `json:"run_id"`
	WorkflowName    string            `json:"workflow_name"`
	WorkflowFile    string            `json:"workflow_file"`
	WorkflowDigest  string            `json:"workflow_digest"`
	RepoDir         string            `json:"repo_dir"`
	ReportsDir      string            `json:"reports_dir"`
	ManualInputsDir string            `json:"manual_inputs_dir"`
	Vars            map[string]string `json:"vars"`
	VarOverrides    map[string]string `json:"var_overrides"`
	Steps           []StepKey         `json:"steps"`
	// StartAt names the step a new run starts at; earlier steps are
	// SKIPPED.
	StartAt StepKey   `json:"start_at,omitzero"`
	Skipped []StepKey `json:"skipped,omitempty"`
}

// RunnerStarted is the data of EvRunnerStarted: a runner took the run.
type RunnerStarted struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// By names who started the runner: flow run, resume or retry's
	// --by, else $USER; absent when neither says.
	By string `json:"by,omitempty"`
	// RepoDir, ReportsDir and ManualInputsDir re-root a run directory
	// copied to another checkout.
	RepoDir         string `json:"repo_dir,omitempty"`
	ReportsDir      string `json:"reports_dir,omitempty"`
	ManualInputsDir string `json:"manual_inputs_dir,omitempty"`
	// Generation, when set, is the run's new generation: a runner that
	// takes a run whose session was interrupted names its sessions in
	// a new generation, so that the re-run of the interrupted attempt
	// (which kept its number) does not overwrite its log.
	Generation int `json:"generation,omitempty"`
}

// WorkflowChanged is the data of EvWorkflowChanged.
type WorkflowChanged struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	Order []StepKey `json:"order"`
	// Vars are the run's vars after the change (the file's, with the
	// run's --var overrides winning), when they changed.
	Vars map[string]string `json:"vars,omitempty"`
}

// StartAt is the data of EvStartAt: the steps reset to PENDING.
type StartAt struct {
	Step  StepKey   `json:"step"`
	Reset []StepKey `json:"reset"`
	// Budgets are the loop-back targets of the loops the restart
	// reopens: their iteration budgets start afresh (ReopenedLoops).
	Budgets []StepKey `json:"budgets,omitempty"`
}

// Retry is the data of EvRetry: flow retry put the failed steps, and
// what depends on them, back to PENDING with fresh attempts, keeping
// their iterations.
type Retry struct {
	// Failed lists the steps that had failed; Reset every step put back.
	Failed []StepKey `json:"failed"`
	Reset  []StepKey `json:"reset"`
	// MaxIterations, when set, overrides the iteration budgets for this
	// retry (flow retry --max-iterations).
	MaxIterations int `json:"max_iterations,omitempty"`
	// Budgets are the loop-back targets of the loops the retry reopens:
	// their iteration budgets start afresh (ReopenedLoops).
	Budgets []StepKey `json:"budgets,omitempty"`
}

// CleanupFinished is the data of EvCleanupStarted and EvCleanupFinished:
// the N-th cleanup session of the run, and how it ended.
type CleanupFinished struct {
	N      int    `json:"n"`
	Failed bool   `json:"failed,omitempty"`
	Error  string `json:"error,omitempty"`
}

// StepStarted is the data of EvStepStarted.
type StepStarted struct {
	// Session is true when a session starts (a consensus decides
	// without one): every session counts against budget.sessions.
	Session    bool   `json:"session,omitempty"`
	Attempt    int    `json:"attempt"`
	Iteration  int    `json:"iteration"`
	LogPath    string `json:"log_path,omitempty"`
	ReportPath string `json:"report_path,omitempty"`
}

// SessionStarted is the data of EvSessionStarted: the process of a
// step's session, so that a runner taking over a dead run can kill
// what the session left behind.
type SessionStarted struct {
	PID int `json:"pid"`
	// Marker is the token every process of the session carries in its
	// environment, even one that left the process group.
	Marker string `json:"marker,omitempty"`
	// LogPath and ReportPath are where the driver keeps the session's
	// output and where the session may write its report.
	LogPath    string `json:"log_path,omitempty"`
	ReportPath string `json:"report_path,omitempty"`
}

// StepWaiting is the data of EvStepWaiting.
type StepWaiting struct {
	Attempt         int    `json:"attempt"`
	ManualInputPath string `json:"manual_input_path"`
	// Session is, for a session step with human: (an approval after
	// its session), what the session that succeeded produced: recorded
	// with the wait, so that no crash keeps one without the other.
	Session *Outcome `json:"session,omitempty"`
}

// Outcome is what a finished session (or human decision) produced: the
// data of EvStepCompleted, EvGateFailed, EvAttemptFailed and
// EvStepFailed.
type Outcome struct {
	Attempt    int               `json:"attempt"`
	ExitCode   *int              `json:"exit_code,omitempty"`
	Error      string            `json:"error,omitempty"`
	ReportPath string            `json:"report_path,omitempty"`
	Artifacts  []string          `json:"artifacts,omitempty"`
	Metrics    map[string]string `json:"metrics,omitempty"`
	Logs       []string          `json:"logs,omitempty"`
	Signals    map[string]bool   `json:"signals,omitempty"`
	Verdict    string            `json:"verdict,omitempty"`
	Report     json.RawMessage   `json:"report,omitempty"`
	Duration   string            `json:"duration,omitempty"`
	// Usage is what the session consumed, when its agent reports it
	// (a preset, docs/agents.md).
	Usage *AgentUsage `json:"usage,omitempty"`
	// AgentSession is the agent tool's own session (conversation) id,
	// which a re-entered step continues.
	AgentSession string `json:"agent_session,omitempty"`
	// Budget is true when the step failed because its iteration budget
	// ran out.
	Budget bool `json:"budget,omitempty"`
	// Evidence is, on step_failed, the tail of the output that failed
	// the step: its session's, or its gate.check's (at most 200 lines,
	// 16 KiB; secrets hidden).
	Evidence string `json:"evidence,omitempty"`
}

// GateFailure is the data of EvGateFailed: one event records the
// whole decision a failed gate leads to, so that no crash can keep the
// failure and lose the loop-back. The step is COMPLETED with
// "gate failed: <reason>"; then either Target and every step in Reset
// go back to PENDING one iteration on, or (Budget) the step is FAILED
// because the target's iterations are spent.
type GateFailure struct {
	Outcome
	Reason string `json:"reason"`
	// Target is the loop-back target; Reset the steps reset to PENDING.
	Target StepKey   `json:"target,omitzero"`
	Reset  []StepKey `json:"reset,omitempty"`
	// MaxIterations is the budget that ran out, with Budget.
	MaxIterations int `json:"max_iterations,omitempty"`
	// Output is the evidence of the failure: the tail of gate.check's
	// output, or of the failing session's.
	Output string `json:"output,omitempty"`
	// WaitingFor is set when Target is not upstream of the step: the
	// step, reset with the others, waits for Target (its waiting_for)
	// before it runs again.
	WaitingFor StepKey `json:"waiting_for,omitzero"`
	// Resume, when set, names the loops that go on at the failed item
	// rather than run all their items again (resume.go).
	Resume *ItemResume `json:"resume,omitempty"`
}

// Skip is the data of EvStepSkipped.
type Skip struct {
	Reason string `json:"reason"`
}

// RunFinished is the data of EvRunFinished.
type RunFinished struct {
	Status   RunStatus `json:"status"`
	ExitCode int       `json:"exit_code"`
	Reason   string    `json:"reason,omitempty"`
}

// RunnerExited is the data of EvRunnerExited.
type RunnerExited struct {
	ExitCode int    `json:"exit_code"`
	Reason   string `json:"reason,omitempty"`
}

// Note is the data of EvWarning, EvRunPaused, EvRunWaiting and others
// that carry a message.
type Note struct {
	Message string `json:"message"`
}

// BudgetExceeded is the data of a budget_exceeded event: which budget
// (the run's, or a step's), of what, its limit and what was used.
type BudgetExceeded struct {
	// Step is the step whose budget ran out, or "" for the run's.
	Step  StepKey `json:"step,omitzero"`
	What  string  `json:"what"`
	Limit float64 `json:"limit"`
	Used  float64 `json:"used"`
}

// LoopItems is the data of a loop_items event: the items of the loop
// step, in order, and the body each item runs.
type LoopItems struct {
	Items []LoopItem `json:"items"`
	Body  []string   `json:"body"`
}

// LoopItem is one item of a loop: its key (sanitised) and value.
type LoopItem struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// ItemEvent is the data of item_started and item_finished: which item
// (its place and key) and, when it finished, how.
type ItemEvent struct {
	Index  int    `json:"index"`
	Key    string `json:"key"`
	Status Status `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// NewEvent builds an event; the log assigns its seq. Its data is
// data's JSON.
func NewEvent(at time.Time, typ string, step StepKey, data any) Event {
	var raw json.RawMessage
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			panic(fmt.Sprintf("marshal %s event: %v", typ, err)) // data types are ours: a bug
		}
		raw = b
	}
	return Event{At: event.Time{Time: at.UTC()}, Type: typ, Step: step, Data: raw}
}

// Apply folds one event into the state. It is the only code that
// changes a State, so that a state rebuilt from events.jsonl equals the
// live one. Unknown event types are ignored (a newer flow may add some).
func Apply(s *State, e Event) error { return apply(s, e, nil) }

// apply is Apply, given data, the value NewEvent made e.Data of, or nil.
// An event is applied from its typed data, decoded once from e.Data
// unless data is certain to be what decoding e.Data gives (see
// eventData).
func apply(s *State, e Event, data any) error {
	s.Seq = e.Seq
	s.UpdatedAt = timep(e.At)
	if a, ok := appliers[e.Type]; ok {
		return a(s, e, data)
	}
	return nil
}

// applier folds one type of event into a state, given the value its
// data was made of, or nil (see apply).
type applier func(s *State, e Event, data any) error

// onRun returns the applier of an event about the run, whose data is a
// T (struct{} for none).
func onRun[T any](f func(s *State, d *T, at Time)) applier {
	return func(s *State, e Event, data any) error {
		d, err := eventData[T](e, data)
		if err != nil {
			return err
		}
		f(s, d, e.At)
		return nil
	}
}

// onStep returns the applier of an event about a step of the run (an
// unknown step is an error), whose data is a T.
func onStep[T any](f func(s *State, st *StepState, d *T, e Event, at Time)) applier {
	return func(s *State, e Event, data any) error {
		st := s.Steps[e.Step]
		if st == nil {
			return fmt.Errorf("event %d (%s): unknown step %q", e.Seq, e.Type, e.Step)
		}
		d, err := eventData[T](e, data)
		if err != nil {
			return err
		}
		f(s, st, d, e, e.At)
		return nil
	}
}

// eventData returns the data of e as a T: data itself when it is a T
// that decoding its own JSON gives back unchanged (see roundTrips),
// else e.Data decoded. The events of a run the core emits are thus
// applied without their JSON being decoded again, and the state is
// the same as the one replayed from events.jsonl; the appliers keep
// copies of what the data holds, never its memory.
func eventData[T any](e Event, data any) (*T, error) {
	if d, ok := data.(T); ok && roundTrips(&d) {
		return &d, nil
	}
	d := new(T)
	if len(e.Data) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(e.Data, d); err != nil {
		return nil, fmt.Errorf("event %d (%s): %w", e.Seq, e.Type, err)
	}
	return d, nil
}

// roundTrips reports whether decoding the JSON of d, the data of an
// event, gives d back exactly: its strings are valid UTF-8
// (encoding/json writes an invalid byte as U+FFFD), its slices and maps
// are nil or not empty (omitempty leaves an empty one out, and it
// decodes as nil), and it holds no raw JSON (which encoding/json
// compacts). It knows the data of the events every step records; the
// data of other events is decoded.
func roundTrips(d any) bool {
	switch d := d.(type) {
	case *StepStarted:
		return validUTF8(d.LogPath, d.ReportPath)
	case *SessionStarted:
		return validUTF8(d.Marker, d.LogPath, d.ReportPath)
	case *Outcome:
		return d.Report == nil && validUTF8(d.Error, d.ReportPath, d.Verdict, d.Duration, d.AgentSession, d.Evidence) &&
			listRoundTrips(d.Artifacts) && listRoundTrips(d.Logs) && mapRoundTrips(d.Metrics) && mapRoundTrips(d.Signals)
	}
	return false
}

func validUTF8(s ...string) bool {
	for _, x := range s {
		if !utf8.ValidString(x) {
			return false
		}
	}
	return true
}

// listRoundTrips is roundTrips for a list of strings left out when
// empty.
func listRoundTrips(l []string) bool {
	return l == nil || len(l) > 0 && validUTF8(l...)
}

// mapRoundTrips is roundTrips for a map left out when empty: its keys,
// and its values when they are strings.
func mapRoundTrips[V any](m map[string]V) bool {
	if m == nil {
		return true
	}
	if len(m) == 0 {
		return false
	}
	for k, v := range m {
		if s, ok := any(v).(string); !utf8.ValidString(k) || ok && !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// InterruptedNote is the last_error of a step whose session was cut
// short by an interruption: it is PENDING again, the attempt not
// counted.
const InterruptedNote = "interrupted; the attempt is not counted"

// none is the data of an event that carries none.
type none struct{}

// appliers says what each event type does to a state. It is built once
// and never changed.
var appliers = map[string]applier{
	EvRunCreated: onRun(func(s *State, d *RunCreated, at Time) {
		s.SchemaVersion = SchemaVersion
		s.RunID, s.WorkflowName, s.WorkflowFile, s.WorkflowDigest = d.RunID, d.WorkflowName, d.WorkflowFile, d.WorkflowDigest
		s.RepoDir, s.ReportsDir, s.ManualInputsDir = d.RepoDir, d.ReportsDir, d.ManualInputsDir
		s.Vars = d.Vars
		if s.Vars == nil {
			s.Vars = map[string]string{}
		}
		s.VarOverrides = d.VarOverrides
		s.CreatedAt = timep(at)
		s.Status = RunPending
		s.StepOrder = slices.Clone(d.Steps)
		s.Steps = make(map[StepKey]*StepState, len(d.Steps))
		for _, id := range d.Steps {
			s.Steps[id] = newStepState()
		}
		for _, id := range d.Skipped {
			st := s.Steps[id]
			st.Status = Skipped
			st.SkipReason = "skipped: run started at " + d.StartAt.String()
		}
	}),
	EvRunnerStarted: onRun(func(s *State, d *RunnerStarted, at Time) {
		s.Runner = &RunnerInfo{PID: d.PID, Host: d.Host, StartedAt: timep(at), HeartbeatAt: timep(at)}
		if d.RepoDir != "" {
			s.RepoDir, s.ReportsDir, s.ManualInputsDir = d.RepoDir, d.ReportsDir, d.ManualInputsDir
		}
		s.Generation = max(s.Generation, d.Generation)
		if !s.Status.Terminal() {
			// exit_code is the code the last runner's process exited
			// with; a runner at work has none yet.
			s.Status, s.ExitCode = RunRunning, 0
		}
	}),
	EvWorkflowChanged: onRun(func(s *State, d *WorkflowChanged, _ Time) {
		s.WorkflowDigest = d.To
		if len(d.Order) > 0 {
			s.StepOrder = slices.Clone(d.Order)
		}
		if d.Vars != nil {
			s.Vars = d.Vars
		}
	}),
	EvStepAdded: func(s *State, e Event, _ any) error {
		if s.Steps[e.Step] == nil {
			s.Steps[e.Step] = newStepState()
		}
		if !slices.Contains(s.StepOrder, e.Step) {
			s.StepOrder = append(s.StepOrder, e.Step)
		}
		return nil
	},
	EvStepRemoved: func(s *State, e Event, _ any) error {
		delete(s.Steps, e.Step)
		s.StepOrder = slices.DeleteFunc(s.StepOrder, func(id StepKey) bool { return id == e.Step })
		return nil
	},
	EvStartAt: onRun(func(s *State, d *StartAt, at Time) {
		for _, id := range d.Reset {
			if st := s.Steps[id]; st != nil {
				*st = *newStepState()
			}
		}
		restartBudgets(s, d.Budgets)
		reopenItems(s, d.Reset, at)
		if s.Status.Terminal() || s.Status == RunInterrupted {
			s.Status = RunPending
		}
		s.Generation++
	}),
	EvRetry: onRun(func(s *State, d *Retry, at Time) {
		for _, id := range d.Reset {
			st := s.Steps[id]
			if st == nil {
				continue
			}
			st.Status = Pending
			st.Attempts = 0
			st.LastError = nil
			st.SkipReason = ""
			st.BlockedByLoop = nil
			st.GateFailed = false
			st.Evidence = ""
			st.EndedAt = nil
		}
		restartBudgets(s, d.Budgets)
		reopenItems(s, d.Reset, at)
		s.Status, s.ExitCode = RunPending, 0
		s.Generation++
	}),
	EvReconciled: onStep(func(_ *State, st *StepState, d *Note, _ Event, _ Time) {
		st.Status = Pending
		msg := "runner died during the session; it runs again"
		if d.Message != "" {
			msg = d.Message
		}
		st.LastError = strp(msg)
	}),
	EvGatesWaiting: onStep(func(_ *State, st *StepState, d *GatesWaiting, _ Event, _ Time) {
		st.WaitingGates = slices.Clone(d.Gates)
	}),
	EvStepStarted: onStep(func(s *State, st *StepState, d *StepStarted, _ Event, at Time) {
		stepStarted(s, st, d, at)
	}),
	EvSessionStarted: onStep(func(_ *State, st *StepState, d *SessionStarted, _ Event, _ Time) {
		sessionStarted(st, d)
	}),
	EvStepWaiting: onStep(func(s *State, st *StepState, d *StepWaiting, _ Event, at Time) {
		st.Status = WaitingOnHuman
		st.WaitingFor = nil
		if d.Session != nil {
			setOutcome(s, st, *d.Session)
			st.GateFailed = false
			st.LastError = nil
		}
		st.Attempts = d.Attempt
		st.StartedAt = timep(at)
		st.EndedAt = nil
		st.ManualInputPath = strp(d.ManualInputPath)
	}),
	EvHumanInput: onStep(func(_ *State, st *StepState, d *HumanInput, _ Event, _ Time) {
		st.Human = d
	}),
	EvStepSkipped: onStep(func(s *State, st *StepState, d *Skip, _ Event, at Time) {
		st.Status = Skipped
		st.WaitingFor = nil
		st.EndedAt = timep(at)
		unblock(s, st)
		st.SkipReason, st.LastError = d.Reason, nil
	}),
	EvStepCompleted: onStep(func(s *State, st *StepState, d *Outcome, _ Event, at Time) {
		stepCompleted(s, st, d, at)
	}),
	EvGateFailed: onStep(func(s *State, st *StepState, d *GateFailure, e Event, at Time) {
		st.Status = Completed
		st.EndedAt = timep(at)
		setOutcome(s, st, d.Outcome)
		st.Evidence = d.Output
		st.GateFailed = true
		st.LastError = strp("gate failed: " + d.Reason)
		unblock(s, st)
		if d.Budget {
			st.Status = Failed
			st.LastError = strp(fmt.Sprintf("max iterations reached (%d): gate failed: %s", d.MaxIterations, d.Reason))
			return
		}
		for _, id := range d.Reset {
			other := s.Steps[id]
			if other == nil {
				continue
			}
			attempts := other.Attempts
			other.IterationCount++
			other.Status = Pending
			other.Attempts = 0
			other.SkipReason = ""
			if other.LoopCompleted != nil {
				other.LoopCompleted = boolp(false)
			}
			switch {
			case id == d.Target:
				other.BlockedByLoop = nil
				other.Feedback = &Feedback{Step: e.Step.String(), Reason: d.Reason, Report: d.Report, Output: d.Output}
			case id == e.Step && !d.WaitingFor.IsZero():
				// The gate step waits for the target, off to its side.
				other.BlockedByLoop = nil
				wf := d.WaitingFor
				other.WaitingFor = &wf
			default:
				other.BlockedByLoop = strp(e.Step.String())
			}
			if r := d.Resume; r != nil {
				if !id.IsInstance() && slices.Contains(r.Loops, id.Step) {
					resumeLoop(other, r.From, attempts)
				}
				if id.IsInstance() && !d.Target.IsInstance() && id.Loop == d.Target.Step {
					// The target runs again at once: no
					// expansion of its items unblocks it.
					other.BlockedByLoop = nil
				}
			}
		}
	}),
	EvAttemptFailed: onStep(func(s *State, st *StepState, d *Outcome, _ Event, at Time) {
		st.Status = Pending
		st.EndedAt = timep(at)
		setOutcome(s, st, *d)
		st.LastError = strp(d.Error)
	}),
	EvStepFailed: onStep(func(s *State, st *StepState, d *Outcome, _ Event, at Time) {
		st.Status = Failed
		st.WaitingFor = nil
		st.EndedAt = timep(at)
		setOutcome(s, st, *d)
		st.LastError = strp(d.Error)
		st.Evidence = d.Evidence
	}),
	EvStepInterrupted: onStep(func(_ *State, st *StepState, _ *none, _ Event, at Time) {
		st.Status = Pending
		if st.Attempts > 0 {
			st.Attempts--
		}
		st.EndedAt = timep(at)
		st.LastError = strp(InterruptedNote)
	}),
	EvRunFinished: onRun(func(s *State, d *RunFinished, _ Time) {
		s.Status = d.Status
		s.ExitCode = d.ExitCode
	}),
	EvRunInterrupted: onRun(func(s *State, _ *none, _ Time) {
		s.Status = RunInterrupted
		s.ExitCode = ExitInterrupted
	}),
	EvCleanupStarted: onRun(func(s *State, d *CleanupFinished, _ Time) { s.Cleanups = d.N }),
	EvLoopItems: onStep(func(s *State, st *StepState, d *LoopItems, e Event, at Time) {
		applyLoopItems(s, e.Step.Step, st, d, at)
	}),
	EvWorkspaceReady: onRun(func(s *State, d *WorkspaceReady, _ Time) { applyWorkspaceReady(s, d) }),
	EvWorkspaceRemoved: onRun(func(s *State, d *WorkspaceRemoved, _ Time) {
		if ws := s.Workspaces[d.Scope]; ws != nil {
			ws.Removed, ws.BranchDeleted = true, d.BranchDeleted
		}
	}),
	EvItemMerge: onStep(func(s *State, st *StepState, d *ItemMerge, e Event, _ Time) {
		applyItemMerge(s, st, d, e)
	}),
	EvStepMerge: onStep(func(s *State, st *StepState, d *ItemMerge, e Event, _ Time) {
		d.Target, d.Reset = StepKey{}, nil
		applyItemMerge(s, st, d, e)
	}),
	EvItemStarted:    onItem(func(_ *StepState, it *Item, _ *ItemEvent) { it.Status = Running }),
	EvItemFinished:   onItem(finishItem),
	EvRunPaused:      onRun(func(s *State, _ *none, _ Time) { s.Status = RunPaused }),
	EvBudgetExceeded: onRun(func(s *State, _ *BudgetExceeded, _ Time) {}),
	EvBudgetRaised: onRun(func(s *State, d *Budget, _ Time) {
		var b Budget
		if s.BudgetRaised != nil {
			b = *s.BudgetRaised
		}
		b = b.Over(*d)
		s.BudgetRaised = &b
	}),
	EvRunWaiting: onRun(func(s *State, _ *none, _ Time) { s.Status = RunWaitingOnHuman }),
	EvRunnerExited: onRun(func(s *State, d *RunnerExited, _ Time) {
		if !s.Status.Terminal() {
			s.ExitCode = d.ExitCode
		}
	}),
}

// stepStarted folds a step_started event into the state.
func stepStarted(s *State, st *StepState, d *StepStarted, at Time) {
	st.Status = Running
	st.SkipReason = ""
	st.WaitingFor, st.WaitingGates = nil, nil
	st.Attempts = d.Attempt
	st.PID, st.SessionMarker = 0, ""
	st.StartedAt = timep(at)
	st.EndedAt = nil
	st.Evidence = ""
	st.LogPath = d.LogPath
	if d.ReportPath != "" {
		st.ReportPath = strp(d.ReportPath)
	}
	if d.Session {
		st.Sessions++
		s.Sessions++
	}
	s.Status = RunRunning
}

// sessionStarted folds a session_started event into the step's state.
func sessionStarted(st *StepState, d *SessionStarted) {
	st.PID, st.SessionMarker = d.PID, d.Marker
	if d.LogPath != "" {
		st.LogPath = d.LogPath
	}
	if d.ReportPath != "" {
		st.ReportPath = strp(d.ReportPath)
	}
}

// stepCompleted folds a step_completed event into the state.
func stepCompleted(s *State, st *StepState, d *Outcome, at Time) {
	st.Status = Completed
	st.WaitingFor = nil
	st.EndedAt = timep(at)
	setOutcome(s, st, *d)
	st.GateFailed = false
	st.LastError = nil
	st.Evidence = ""
	if st.LoopCompleted != nil {
		st.LoopCompleted = boolp(true)
	}
	unblock(s, st)
}

// unblock clears the loop-back block that step's re-entry set: a
// loop's target ending its iteration (completed or skipped) unblocks
// the steps its gate reset.
func unblock(s *State, step *StepState) {
	fb := step.Feedback
	if fb == nil {
		return
	}
	for _, other := range s.Steps {
		if other.BlockedByLoop != nil && *other.BlockedByLoop == fb.Step {
			other.BlockedByLoop = nil
		}
	}
	step.Feedback = nil
}

// setOutcome copies a session's results into the step, and adds what
// it consumed to the step's and the run's usage. The session has ended:
// its marker, which only finds a running session's processes, goes.
// The step keeps copies of d's slices, maps and pointers, never d's
// own.
func setOutcome(s *State, st *StepState, d Outcome) {
	st.SessionMarker = ""
	if u := d.Usage; u != nil {
		st.Usage = st.Usage.plus(*u)
		s.Usage = s.Usage.plus(*u)
	}
	if d.AgentSession != "" {
		// What the step's current conversation has used: a tool that
		// reports a conversation's running total is counted once.
		if d.AgentSession != st.AgentSession {
			st.ConversationUsage = nil
		}
		if d.Usage != nil {
			st.ConversationUsage = st.ConversationUsage.plus(*d.Usage)
		}
		st.AgentSession = d.AgentSession
	}
	st.Attempts = max(st.Attempts, d.Attempt)
	st.ExitCode = clonePtr(d.ExitCode)
	if d.ReportPath != "" {
		st.ReportPath = strp(d.ReportPath)
	}
	st.Artifacts = nonNil(slices.Clone(d.Artifacts))
	st.Metrics = maps.Clone(d.Metrics)
	if st.Metrics == nil {
		st.Metrics = map[string]string{}
	}
	st.Logs = nonNil(slices.Clone(d.Logs))
	// No signals, whether nil or empty, are none (omitted in JSON).
	st.Signals = nil
	if len(d.Signals) > 0 {
		st.Signals = maps.Clone(d.Signals)
	}
	st.Verdict = d.Verdict
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// onItem is the applier of an event about one item of a loop.
func onItem(f func(loop *StepState, it *Item, d *ItemEvent)) applier {
	return func(s *State, e Event, data any) error {
		st := s.Steps[e.Step]
		if st == nil {
			return fmt.Errorf("event %d (%s): unknown step %q", e.Seq, e.Type, e.Step)
		}
		d, err := eventData[ItemEvent](e, data)
		if err != nil {
			return err
		}
		if d.Index < 0 || d.Index >= len(st.Items) || st.Items[d.Index].Key != d.Key {
			return fmt.Errorf("event %d (%s): %s has no item %q at %d", e.Seq, e.Type, e.Step, d.Key, d.Index)
		}
		f(st, &st.Items[d.Index], d)
		return nil
	}
}

// finishItem records that an item finished, and counts it in the
// loop's loop_index.
func finishItem(loop *StepState, it *Item, d *ItemEvent) {
	if !it.Status.finished() && d.Status.finished() && loop.LoopIndex != nil {
		*loop.LoopIndex++
	}
	it.Status, it.Error = d.Status, d.Error
}

// finished reports whether an item with this status has finished.
func (s Status) finished() bool { return s == Completed || s == Failed || s == Skipped }

// applyLoopItems starts a loop with its items: the loop step runs, each
// item is PENDING, and each item has an instance of each body step —
// new ones PENDING at the loop's iteration, earlier ones (a loop run
// again) back to PENDING with their iteration counts. Instances of
// items the list no longer has stay in the record, SKIPPED.
func applyLoopItems(s *State, loop string, st *StepState, d *LoopItems, at Time) {
	st.Status = Running
	st.Attempts++
	st.StartedAt, st.EndedAt, st.LastError = timep(at), nil, nil
	keep := make(map[string]bool, len(d.Items))
	for _, it := range d.Items {
		keep[it.Key] = true
	}
	for _, it := range st.Items {
		if !keep[it.Key] && !slices.Contains(st.RemovedItems, it.Key) {
			st.RemovedItems = append(st.RemovedItems, it.Key)
		}
	}
	st.RemovedItems = slices.DeleteFunc(st.RemovedItems, func(k string) bool { return keep[k] })
	st.Items = make([]Item, len(d.Items))
	st.LoopItems = make([]json.RawMessage, len(d.Items))
	keys := make([]string, len(d.Items))
	for i, it := range d.Items {
		st.Items[i] = Item{Key: it.Key, Status: Pending}
		st.LoopItems[i] = it.Value
		keys[i] = it.Key
	}
	resetItemMerges(s, loop, keys)
	st.LoopIndex, st.LoopCompleted = intp(0), boolp(false)
	s.Status = RunRunning

	ids := make([]StepKey, 0, len(d.Items)*len(d.Body))
	current := make(map[StepKey]bool, cap(ids))
	for _, it := range d.Items {
		for _, b := range d.Body {
			id := Instance(loop, it.Key, b)
			ids = append(ids, id)
			current[id] = true
			x := s.Steps[id]
			if x == nil || x.Status != Pending || x.Attempts > 0 {
				n := newStepState()
				if x != nil {
					n.IterationCount, n.IterationBase = x.IterationCount, x.IterationBase
				} else {
					n.IterationCount = st.IterationCount
				}
				s.Steps[id] = n
			} else {
				// The loop-back that reset it is over: the loop runs.
				x.BlockedByLoop = nil
			}
		}
	}
	// The loop's other instances: of removed items, or of body steps
	// an edit removed.
	var rest []StepKey
	order := make([]StepKey, 0, len(s.StepOrder)+len(ids))
	at0 := -1
	for _, id := range s.StepOrder {
		switch {
		case id.Loop == loop:
			if !current[id] {
				rest = append(rest, id)
			}
			continue
		case id == Key(loop):
			at0 = len(order) + 1
		}
		order = append(order, id)
	}
	for _, id := range rest {
		x := s.Steps[id]
		if x == nil || x.Status == Skipped {
			continue
		}
		why := "item removed"
		if keep[id.Item] {
			why = "step removed from the loop's body"
		}
		x.Status, x.SkipReason, x.LastError, x.EndedAt = Skipped, why, nil, timep(at)
	}
	if at0 < 0 {
		at0 = len(order)
	}
	tail := slices.Clone(order[at0:])
	s.StepOrder = append(append(append(order[:at0], ids...), rest...), tail...)
}

// reopenItems puts the items of the instances in ids back to PENDING,
// and their loops back to RUNNING: flow retry and --start-at-step
// re-run some items of a loop without evaluating its list again. A
// loop reopened at runs again from then: its duration does not count
// the time it lay finished, and it is in an attempt (a retry had put
// its attempts back to 0).
func reopenItems(s *State, ids []StepKey, at Time) {
	for _, k := range ids {
		if !k.IsInstance() {
			continue
		}
		ls := s.Steps[Key(k.Loop)]
		if ls == nil || ls.LoopIndex == nil {
			continue
		}
		for i := range ls.Items {
			it := &ls.Items[i]
			if it.Key != k.Item {
				continue
			}
			if it.Status.finished() {
				*ls.LoopIndex--
			}
			it.Status, it.Error = Pending, ""
			resetItemMerges(s, k.Loop, []string{it.Key})
		}
		ls.Status, ls.EndedAt, ls.LastError = Running, nil, nil
		ls.StartedAt = timep(at)
		ls.Attempts = max(ls.Attempts, 1)
		ls.LoopCompleted = boolp(false)
	}
}
