package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/flow-run/flow/internal/event"
)

// SchemaVersion is the version of run_state.json this package writes.
const SchemaVersion = 1

// Status is the status of a step, as run_state.json writes it.
type Status string

// The step statuses.
const (
	Pending        Status = "PENDING"
	Running        Status = "RUNNING"
	WaitingOnHuman Status = "WAITING_ON_HUMAN"
	Completed      Status = "COMPLETED"
	Failed         Status = "FAILED"
	Skipped        Status = "SKIPPED"
)

// RunStatus is the status of a whole run.
type RunStatus string

// The run statuses.
const (
	RunPending        RunStatus = "pending"
	RunRunning        RunStatus = "running"
	RunPaused         RunStatus = "paused"
	RunWaitingOnHuman RunStatus = "waiting_on_human"
	RunCompleted      RunStatus = "completed"
	RunFailed         RunStatus = "failed"
	RunInterrupted    RunStatus = "interrupted"
	// RunBudgetExceeded: a cost, token or session budget ran out; the
	// run goes on when resumed with a higher one.
	RunBudgetExceeded RunStatus = "budget_exceeded"
)

// Time is a timestamp written as UTC with microseconds.
type Time = event.Time

// State is run_state.json: the fields agent_orchestrator's run state
// has, plus flow's. It is a fold of the run's events (see Apply).
type State struct {
	SchemaVersion   int    `json:"schema_version"`
	RunID           string `json:"run_id"`
	WorkflowName    string `json:"workflow_name"`
	RepoDir         string `json:"repo_dir"`
	ReportsDir      string `json:"reports_dir"`
	ManualInputsDir string `json:"manual_inputs_dir"`
	CreatedAt       *Time  `json:"created_at"`
	UpdatedAt       *Time  `json:"updated_at"`

	Status         RunStatus         `json:"status"`
	ExitCode       int               `json:"exit_code"`
	WorkflowFile   string            `json:"workflow_file"`
	WorkflowDigest string            `json:"workflow_digest"`
	Vars           map[string]string `json:"vars"`
	// VarOverrides are the vars given on the command line (--var),
	// which win over the workflow file's when it is edited.
	VarOverrides map[string]string `json:"var_overrides"`
	Runner       *RunnerInfo       `json:"runner"`
	Seq          int64             `json:"seq"`
	// Generation counts the restarts of the run (--start-at-step, flow
	// retry): from generation 1 on, the names of logs, prompts and
	// archived reports carry it, so that nothing is overwritten.
	Generation int `json:"generation"`
	// Cleanups counts the run's cleanup sessions.
	Cleanups int `json:"cleanups,omitempty"`
	// StepOrder lists the step ids in workflow order.
	StepOrder []StepKey `json:"step_order"`
	// Usage sums what the run's agent sessions consumed.
	Usage *AgentUsage `json:"usage,omitempty"`
	// Sessions counts every session the run started — commands and
	// agents alike — against budget.sessions.
	Sessions int `json:"sessions,omitempty"`
	// BudgetRaised holds the budgets raised on the command line (flow
	// resume --budget-cost ...), which win over the workflow's from then
	// on.
	BudgetRaised *Budget `json:"budget_raised,omitempty"`
	// Workspaces are the git worktrees of the run's scopes, by scope
	// (WorkspaceScope): what each holds and how its work came back.
	Workspaces map[string]*Workspace `json:"workspaces,omitempty"`

	Steps map[StepKey]*StepState `json:"steps"`
}

// RunnerInfo names the process running the run.
type RunnerInfo struct {
	PID         int    `json:"pid"`
	Host        string `json:"host"`
	StartedAt   *Time  `json:"started_at"`
	HeartbeatAt *Time  `json:"heartbeat_at"`
}

// StepState is the runtime state of one step: agent_orchestrator's
// fields, then flow's.
type StepState struct {
	Status          Status            `json:"status"`
	Attempts        int               `json:"attempts"`
	IterationCount  int               `json:"iteration_count"`
	ReportPath      *string           `json:"report_path"`
	StartedAt       *Time             `json:"started_at"`
	EndedAt         *Time             `json:"ended_at"`
	LastError       *string           `json:"last_error"`
	Artifacts       []string          `json:"artifacts"`
	Metrics         map[string]string `json:"metrics"`
	Logs            []string          `json:"logs"`
	ManualInputPath *string           `json:"manual_input_path"`
	BlockedByLoop   *string           `json:"blocked_by_loop"`
	// WaitingFor is, on a gate step whose loop-back went to a step that
	// is not upstream of it, that target: the step runs again once the
	// target is done. It is cleared when the step runs.
	WaitingFor *StepKey `json:"waiting_for,omitempty"`
	// IterationBase is the iteration_count at which the step's current
	// iteration budget began, as a loop-back target: 0, or where a
	// restart or a retry that reopened its loop left it. Its gate
	// counts iteration_count - iteration_base against max_iterations.
	IterationBase int `json:"iteration_base,omitempty"`
	// SkipReason says why a SKIPPED step did not run (its when was
	// false, the run started after it, its item was removed); it is
	// kept apart from last_error, which only errors fill.
	SkipReason string `json:"skip_reason,omitempty"`
	// WaitingGates are the gates of the gate-state file that keep a
	// ready step from starting, while they are closed.
	WaitingGates []string `json:"waiting_gates,omitempty"`

	ExitCode *int            `json:"exit_code,omitempty"`
	Verdict  string          `json:"verdict,omitempty"`
	Signals  map[string]bool `json:"signals,omitempty"`
	LogPath  string          `json:"log_path,omitempty"`
	// PID is the process (and process group) of the running session.
	PID int `json:"pid,omitempty"`
	// SessionMarker is the marker of the running session's processes;
	// it is cleared when the session ends.
	SessionMarker string `json:"session_marker,omitempty"`
	// GateFailed is true when the step's last completion failed its gate.
	GateFailed bool `json:"gate_failed,omitempty"`
	// Feedback is why a loop-back re-entered this step.
	Feedback *Feedback `json:"feedback,omitempty"`
	// Evidence is, on a FAILED step and on one whose gate failed, the
	// tail of the output that failed it: its session's, or its
	// gate.check's (at most 200 lines, 16 KiB; secrets hidden). It is
	// cleared when the step runs again.
	Evidence string `json:"evidence,omitempty"`
	// Human is the input a human gave this step.
	Human *HumanInput `json:"human,omitempty"`
	// Usage sums what the step's agent sessions consumed; AgentSession
	// is the agent tool's session id of its last session, which a
	// re-entered step continues.
	Usage        *AgentUsage `json:"usage,omitempty"`
	AgentSession string      `json:"agent_session,omitempty"`
	// Sessions counts every session the step started.
	Sessions int `json:"sessions,omitempty"`
	// ConversationUsage is what the sessions of AgentSession used.
	ConversationUsage *AgentUsage `json:"conversation_usage,omitempty"`

	// A for_each step carries agent_orchestrator's fields
	// of a looped step: its items' values (LoopItems), how many items
	// have finished (LoopIndex) and whether the loop has completed;
	// Items gives each item's key and status, in the same order, and
	// RemovedItems the keys of items a new evaluation of the list no
	// longer had (their instances stay in the record, SKIPPED). All are
	// absent on other steps.
	LoopItems     []json.RawMessage `json:"loop_items,omitempty"`
	LoopIndex     *int              `json:"loop_index,omitempty"`
	LoopCompleted *bool             `json:"loop_completed,omitempty"`
	Items         []Item            `json:"items,omitempty"`
	RemovedItems  []string          `json:"removed_items,omitempty"`
}

// Item is one item of a loop: its key (sanitised) and
// status: PENDING until it is admitted, RUNNING while its body runs,
// then COMPLETED or FAILED.
type Item struct {
	Key    string `json:"key"`
	Status Status `json:"status"`
	// Error says why a failed item failed: its failed instance's error.
	Error string `json:"error,omitempty"`
}

// Feedback is what a re-entered step learns about the gate failure that
// sent it back.
type Feedback struct {
	Step   string          `json:"step"`
	Reason string          `json:"reason"`
	Report json.RawMessage `json:"report,omitempty"`
	// Output is the evidence: the tail of the failing gate.check's or
	// session's output (at most 200 lines, 16 KiB; secrets hidden).
	Output string `json:"output,omitempty"`
}

// HumanInput is the content of a manual input file.
type HumanInput struct {
	Approved bool           `json:"approved"`
	Input    map[string]any `json:"input,omitempty"`
	By       string         `json:"by,omitempty"`
	At       string         `json:"at,omitempty"`
	Reason   string         `json:"reason,omitempty"`
}

// AgentUsage is what agent sessions consumed: tokens, cost, turns and
// sessions. Numbers, so that expressions compare them.
type AgentUsage struct {
	TokensIn     int64   `json:"tokens_in"`
	TokensOut    int64   `json:"tokens_out"`
	TokensCached int64   `json:"tokens_cached"`
	CostUSD      float64 `json:"cost_usd"`
	// CostEstimated is true when some of the cost was computed from the
	// workflow's price rather than reported by the tool.
	CostEstimated bool `json:"cost_estimated,omitempty"`
	Turns         int  `json:"turns"`
	Sessions      int  `json:"sessions"`
}

// plus returns a copy of u (nil counts as zero) with o added.
func (u *AgentUsage) plus(o AgentUsage) *AgentUsage {
	var n AgentUsage
	if u != nil {
		n = *u
	}
	n.TokensIn += o.TokensIn
	n.TokensOut += o.TokensOut
	n.TokensCached += o.TokensCached
	n.CostUSD += o.CostUSD
	n.CostEstimated = n.CostEstimated || o.CostEstimated
	n.Turns += o.Turns
	n.Sessions += o.Sessions
	return &n
}

// Tokens is every token counted: in and out.
func (u *AgentUsage) Tokens() int64 {
	if u == nil {
		return 0
	}
	return u.TokensIn + u.TokensOut
}

// newStepState returns a PENDING step with empty lists and metrics.
func newStepState() *StepState {
	return &StepState{Status: Pending, Artifacts: []string{}, Metrics: map[string]string{}, Logs: []string{}}
}

// Clone returns a deep copy of the state, which shares no memory with
// it.
func (s *State) Clone() *State {
	c := *s
	c.CreatedAt, c.UpdatedAt = clonePtr(s.CreatedAt), clonePtr(s.UpdatedAt)
	c.Vars = maps.Clone(s.Vars)
	c.VarOverrides = maps.Clone(s.VarOverrides)
	if s.Runner != nil {
		r := *s.Runner
		r.StartedAt, r.HeartbeatAt = clonePtr(r.StartedAt), clonePtr(r.HeartbeatAt)
		c.Runner = &r
	}
	c.StepOrder = slices.Clone(s.StepOrder)
	c.Usage = clonePtr(s.Usage)
	c.BudgetRaised = clonePtr(s.BudgetRaised)
	c.Workspaces = nil
	if s.Workspaces != nil {
		c.Workspaces = make(map[string]*Workspace, len(s.Workspaces))
		for k, w := range s.Workspaces {
			c.Workspaces[k] = w.clone()
		}
	}
	c.Steps = nil
	if s.Steps != nil {
		c.Steps = make(map[StepKey]*StepState, len(s.Steps))
		for id, st := range s.Steps {
			c.Steps[id] = st.clone()
		}
	}
	return &c
}

// clone returns a deep copy of the step, or nil for a nil step (a
// snapshot's "id": null).
func (st *StepState) clone() *StepState {
	if st == nil {
		return nil
	}
	x := *st
	x.ReportPath = clonePtr(st.ReportPath)
	x.StartedAt, x.EndedAt = clonePtr(st.StartedAt), clonePtr(st.EndedAt)
	x.LastError = clonePtr(st.LastError)
	x.Artifacts = slices.Clone(st.Artifacts)
	x.Metrics = maps.Clone(st.Metrics)
	x.Logs = slices.Clone(st.Logs)
	x.ManualInputPath = clonePtr(st.ManualInputPath)
	x.BlockedByLoop = clonePtr(st.BlockedByLoop)
	x.WaitingFor = clonePtr(st.WaitingFor)
	x.WaitingGates = slices.Clone(st.WaitingGates)
	x.ExitCode = clonePtr(st.ExitCode)
	x.Signals = maps.Clone(st.Signals)
	if st.Feedback != nil {
		f := *st.Feedback
		f.Report = bytes.Clone(f.Report)
		x.Feedback = &f
	}
	if st.Human != nil {
		h := *st.Human
		h.Input, _ = cloneJSON(h.Input).(map[string]any)
		x.Human = &h
	}
	x.Usage = clonePtr(st.Usage)
	x.ConversationUsage = clonePtr(st.ConversationUsage)
	if st.LoopItems != nil {
		x.LoopItems = make([]json.RawMessage, len(st.LoopItems))
		for i, v := range st.LoopItems {
			x.LoopItems[i] = bytes.Clone(v)
		}
	}
	x.LoopIndex = clonePtr(st.LoopIndex)
	x.LoopCompleted = clonePtr(st.LoopCompleted)
	x.Items = slices.Clone(st.Items)
	x.RemovedItems = slices.Clone(st.RemovedItems)
	return &x
}

// cloneJSON returns a deep copy of v, a value as encoding/json decodes
// it into an any.
func cloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = cloneJSON(x)
		}
		return m
	case []any:
		if v == nil {
			return v
		}
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = cloneJSON(x)
		}
		return l
	}
	return v
}

// Terminal reports whether the run has ended for good (completed or
// failed); an interrupted or paused run can go on.
func (s RunStatus) Terminal() bool { return s == RunCompleted || s == RunFailed }

// done reports whether a step needs nothing more.
func (s Status) done() bool { return s == Completed || s == Skipped }

// Done reports whether a step needs nothing more: it completed or was
// skipped.
func (s Status) Done() bool { return s.done() }

func strp(s string) *string { return &s }

func timep(t Time) *Time { return &t }

// clonePtr returns a pointer to a copy of *p, or nil when p is nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func intp(n int) *int { return &n }

func boolp(b bool) *bool { return &b }

// MarshalJSON writes the state with its steps in workflow order, as
// agent_orchestrator writes them, rather than sorted by id.
func (s *State) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := s.encode(&b, ""); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Indented returns the state as run_state.json holds it: indented by
// two spaces, steps in workflow order (see WriteIndented).
func (s *State) Indented() ([]byte, error) {
	var b bytes.Buffer
	if err := s.WriteIndented(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteIndented writes the state to w as Indented returns it. It
// writes one step at a time, so that writing the snapshot of a large
// run takes memory in proportion to one step, not to the run.
func (s *State) WriteIndented(w io.Writer) error { return s.encode(w, "  ") }

// encode writes the state as json.MarshalIndent(s, "", indent) would
// (json.Marshal when indent is ""), but for the order of the steps:
// those of StepOrder first, in that order, then any others sorted by
// id. The steps are the last field of State, so the fields before them
// are encoded as a whole and the steps one by one after them. The step
// order is encoded as a list of strings, in one piece, and put in place
// of the empty list the fields are encoded with.
func (s *State) encode(w io.Writer, indent string) error {
	type fields State // State's fields without its methods
	h := fields(*s)
	h.Steps = nil
	if h.StepOrder != nil {
		h.StepOrder = []StepKey{}
	}
	var b, order []byte
	var err error
	if indent == "" {
		b, err = json.Marshal(&h)
		if err == nil && s.StepOrder != nil {
			order, err = json.Marshal(KeyStrings(s.StepOrder))
		}
	} else {
		b, err = json.MarshalIndent(&h, "", indent)
		if err == nil && s.StepOrder != nil {
			order, err = json.MarshalIndent(KeyStrings(s.StepOrder), indent, indent)
		}
	}
	if err != nil {
		return err
	}
	if order != nil {
		field := []byte(`"step_order":`)
		if indent != "" {
			field = append(field, ' ')
		}
		j := bytes.Index(b, append(field, "[]"...))
		if j < 0 {
			return fmt.Errorf("encode run state: no step order")
		}
		j += len(field)
		b = append(b[:j:j], append(order, b[j+2:]...)...)
	}
	// b ends with "steps": null and the closing brace; the steps go
	// in place of the null.
	i := bytes.LastIndex(b, []byte("null"))
	if i < 0 {
		return fmt.Errorf("encode run state: no steps field")
	}
	var buf bytes.Buffer
	buf.Write(b[:i])
	buf.WriteByte('{')
	// A step is a value two levels deep: its lines after the first are
	// indented twice before its own indentation.
	enc := json.NewEncoder(&buf)
	enc.SetIndent(indent+indent, indent)
	n := 0
	write := func(id StepKey, st *StepState) error {
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		if indent != "" {
			buf.WriteString("\n" + indent + indent)
		}
		if err := enc.Encode(id.String()); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		buf.WriteByte(':')
		if indent != "" {
			buf.WriteByte(' ')
		}
		if err := enc.Encode(st); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1)
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		buf.Reset()
		return nil
	}
	// Each step's state is written once: seen holds those written (a
	// state is one step's, so its pointer names the step).
	seen := make(map[*StepState]bool, len(s.Steps))
	for _, id := range s.StepOrder {
		if st := s.Steps[id]; st != nil && !seen[st] {
			seen[st] = true
			if err := write(id, st); err != nil {
				return err
			}
		}
	}
	if len(seen) < len(s.Steps) {
		for _, id := range slices.SortedFunc(maps.Keys(s.Steps), CompareKeys) {
			if !seen[s.Steps[id]] {
				if err := write(id, s.Steps[id]); err != nil {
					return err
				}
			}
		}
	}
	if indent != "" && n > 0 {
		buf.WriteString("\n" + indent)
	}
	buf.WriteByte('}')
	buf.Write(b[i+len("null"):])
	_, err = w.Write(buf.Bytes())
	return err
}
