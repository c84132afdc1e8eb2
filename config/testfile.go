package config

import (
	"time"
)

// TestFile is a workflow test file (*.test.yaml or *.test.hcl, docs/testing.md): a workflow
// and the tests that run it with scripted sessions, checks and human
// decisions, and what each expects of the run.
type TestFile struct {
	// File is the path the test file was loaded from; Source its bytes.
	File   string
	Source []byte `cmp:"-"`
	// WorkflowPath is the workflow's path, resolved against the test
	// file's directory; Workflow is the workflow loaded from it.
	WorkflowPath string
	Workflow     *Workflow
	// Default is what a session does that its test does not script (an
	// exit 0 with no output unless the file's defaults: says otherwise).
	Default Outcome
	Tests   []*WorkflowTest
}

// WorkflowTest is one test of a workflow.
type WorkflowTest struct {
	Name string
	Pos  Pos
	// Vars override the workflow's vars, as flow run --var does.
	Vars map[string]string
	// Files is the simulated repository: relative path to content, in
	// file order.
	Files []TestFileEntry
	// Sessions and Checks map a step id to the outcomes of its sessions
	// and of its gate.check, consumed in order; the last one repeats.
	Sessions map[string][]Outcome
	Checks   map[string][]Outcome
	// Human maps a human step to its decisions, consumed in order; the
	// last one repeats.
	Human map[string][]Decision
	// Merges maps an item of a loop whose items have worktrees
	// (loop[key]) to the outcomes of its merges, consumed in order; the
	// last one repeats, and an item not scripted merges.
	Merges map[string][]MergeOutcome
	// Control maps a step to the control states a person sets while
	// its first session runs (the first) and, each time the run then
	// stops paused, to go on (the next ones): pause, continue, run_once,
	// cleanup.
	Control map[string][]TestControl
	Expect  Expect
}

// TestControl is one scripted control state (flow pause, continue,
// run-once, cleanup) and where the file states it.
type TestControl struct {
	State string
	Pos   Pos
}

// TestFileEntry is a file of the simulated repository, or one a test
// expects there: a path relative to the repository and its content.
type TestFileEntry struct {
	Path    string
	Content string
	Pos     Pos
}

// Outcome is what one scripted session (or gate.check) does.
type Outcome struct {
	ExitCode int
	Output   string
	// Report is the JSON object the session writes to
	// $FLOW_REPORT_PATH, or nil.
	Report []byte
	// Writes are the files the session writes into the repository.
	Writes []TestFileEntry
	// Duration is how far the session moves the fake clock.
	Duration time.Duration
	// Usage is what a session of a preset agent reports it used; nil
	// reports nothing.
	Usage *OutcomeUsage
	Pos   Pos
}

// OutcomeUsage is the usage a simulated preset session reports.
type OutcomeUsage struct {
	TokensIn, TokensOut, TokensCached int64
	CostUSD                           float64
	Turns                             int
}

// Decision is a scripted human decision, as in a manual input file.
type Decision struct {
	Approved bool
	Input    map[string]any
	Reason   string
	Pos      Pos
}

// Expect is what a test expects of its run. A field left out of the
// file is not checked.
type Expect struct {
	ExitCode *Want[int]
	Status   *Want[string]
	// Path is the exact order of step starts; PathContains an ordered
	// subsequence of it.
	Path         *Want[[]string]
	PathContains *Want[[]string]
	// Steps are expectations of single steps, in file order.
	Steps []StepExpect
	// Files are files the repository must hold, with their content.
	Files []TestFileEntry
	// PromptContains maps a step to text its last prompt must contain.
	PromptContains []StepText
}

// Want is one expected value and where the file states it.
type Want[T any] struct {
	Value T
	Pos   Pos
}

// StepExpect is what a test expects of one step's final state: each
// field that is set (status, attempts, iteration, verdict, exit_code,
// last_error — a regular expression) must match.
type StepExpect struct {
	Step      string
	Pos       Pos
	Status    *Want[string]
	Attempts  *Want[int]
	Iteration *Want[int]
	Verdict   *Want[string]
	ExitCode  *Want[int]
	LastError *Want[string]
}

// StepText is a piece of text expected of a step.
type StepText struct {
	Step string
	Text string
	Pos  Pos
}

// The outcomes a test may script for a merge.
const (
	MergeOutcomeMerged   = "merged"
	MergeOutcomeConflict = "conflict"
	MergeOutcomeWaiting  = "waiting"
	MergeOutcomeFailed   = "failed"
)

// MergeOutcomes lists the outcomes of a scripted merge.
var MergeOutcomes = []string{MergeOutcomeMerged, MergeOutcomeConflict, MergeOutcomeWaiting, MergeOutcomeFailed}

// MergeOutcome is what one scripted merge of an item does: merged, a
// conflict in Files, waiting (the shared checkout refuses, for Reason),
// or failed (git fails, with Reason).
type MergeOutcome struct {
	Status string
	Files  []string
	Reason string
	Pos    Pos
}
