package runner

import (
	"strings"
	"time"

	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
)

// The run record and the decision core's vocabulary live in package
// core, which does no I/O; the driver speaks of them by these names.

type (
	AwaitHuman      = core.AwaitHuman
	Begin           = core.Begin
	CleanupDone     = core.CleanupDone
	ControlChanged  = core.ControlChanged
	ControlState    = core.ControlState
	Core            = core.Core
	Decision        = core.Decision
	Effect          = core.Effect
	Evaluate        = core.Evaluate
	Event           = core.Event
	ExitCode        = core.ExitCode
	ExitError       = core.ExitError
	Feedback        = core.Feedback
	Finish          = core.Finish
	GateFailure     = core.GateFailure
	HeldError       = core.HeldError
	Holder          = core.Holder
	HumanDecision   = core.HumanDecision
	HumanInput      = core.HumanInput
	HumanReady      = core.HumanReady
	Idle            = core.Idle
	GatesChanged    = core.GatesChanged
	Input           = core.Input
	Interrupt       = core.Interrupt
	ItemsResult     = core.ItemsResult
	AgentUsage      = core.AgentUsage
	BudgetExceeded  = core.BudgetExceeded
	Budget          = core.Budget
	ExpandItems     = core.ExpandItems
	Item            = core.Item
	ItemEvent       = core.ItemEvent
	Kind            = core.Kind
	Note            = core.Note
	Outcome         = core.Outcome
	Plan            = core.Plan
	PlanStep        = core.PlanStep
	PrepareHuman    = core.PrepareHuman
	RunCreated      = core.RunCreated
	RunFinished     = core.RunFinished
	RunStatus       = core.RunStatus
	RunnerInfo      = core.RunnerInfo
	RunnerStarted   = core.RunnerStarted
	SessionDone     = core.SessionDone
	SessionPID      = core.SessionPID
	SessionStarted  = core.SessionStarted
	SetControl      = core.SetControl
	Skip            = core.Skip
	StartAt         = core.StartAt
	Retry           = core.Retry
	StartCleanup    = core.StartCleanup
	StartSession    = core.StartSession
	StartTimer      = core.StartTimer
	State           = core.State
	Status          = core.Status
	StepStarted     = core.StepStarted
	StepState       = core.StepState
	StepWaiting     = core.StepWaiting
	Time            = core.Time
	TimerFired      = core.TimerFired
	WhenResult      = core.WhenResult
	WorkflowChanged = core.WorkflowChanged
)

const (
	AlreadyEnded       = core.AlreadyEnded
	Completed          = core.Completed
	Continuous         = core.Continuous
	EvAttemptFailed    = core.EvAttemptFailed
	EvControl          = core.EvControl
	EvGateFailed       = core.EvGateFailed
	EvHumanInput       = core.EvHumanInput
	EvReconciled       = core.EvReconciled
	EvRunCreated       = core.EvRunCreated
	EvRunFinished      = core.EvRunFinished
	EvRunInterrupted   = core.EvRunInterrupted
	EvRunPaused        = core.EvRunPaused
	EvRunWaiting       = core.EvRunWaiting
	EvRunnerStarted    = core.EvRunnerStarted
	EvSessionStarted   = core.EvSessionStarted
	EvStartAt          = core.EvStartAt
	EvRetry            = core.EvRetry
	EvCleanupStarted   = core.EvCleanupStarted
	EvCleanupFinished  = core.EvCleanupFinished
	EvStepAdded        = core.EvStepAdded
	EvStepCompleted    = core.EvStepCompleted
	EvStepFailed       = core.EvStepFailed
	EvStepInterrupted  = core.EvStepInterrupted
	EvStepRemoved      = core.EvStepRemoved
	EvStepSkipped      = core.EvStepSkipped
	EvStepStarted      = core.EvStepStarted
	EvStepWaiting      = core.EvStepWaiting
	EvLoopItems        = core.EvLoopItems
	EvBudgetExceeded   = core.EvBudgetExceeded
	EvBudgetRaised     = core.EvBudgetRaised
	EvItemStarted      = core.EvItemStarted
	EvItemFinished     = core.EvItemFinished
	EvGatesWaiting     = core.EvGatesWaiting
	EvWarning          = core.EvWarning
	EvWorkflowChanged  = core.EvWorkflowChanged
	ExitBudget         = core.ExitBudget
	ExitBudgetExceeded = core.ExitBudgetExceeded
	ExitFailed         = core.ExitFailed
	ExitHeld           = core.ExitHeld
	ExitHuman          = core.ExitHuman
	ExitInterrupted    = core.ExitInterrupted
	ExitOK             = core.ExitOK
	ExitPaused         = core.ExitPaused
	ExitRefused        = core.ExitRefused
	ExitUsage          = core.ExitUsage
	Failed             = core.Failed
	KindAgent          = core.KindAgent
	KindCommand        = core.KindCommand
	KindHuman          = core.KindHuman
	MaxExcerpt         = core.MaxExcerpt
	MaxRunID           = core.MaxRunID
	Pause              = core.Pause
	Pending            = core.Pending
	RunCleanup         = core.RunCleanup
	RunCompleted       = core.RunCompleted
	RunFailed          = core.RunFailed
	RunInterrupted     = core.RunInterrupted
	RunBudgetExceeded  = core.RunBudgetExceeded
	RunOnce            = core.RunOnce
	RunPaused          = core.RunPaused
	RunPending         = core.RunPending
	RunRunning         = core.RunRunning
	RunWaitingOnHuman  = core.RunWaitingOnHuman
	Running            = core.Running
	SchemaVersion      = core.SchemaVersion
	Skipped            = core.Skipped
	WaitingOnHuman     = core.WaitingOnHuman
)

var (
	ErrNoRun = core.ErrNoRun
)

// Apply folds one event into the state (core.Apply).
func Apply(s *State, e Event) error { return core.Apply(s, e) }

// CheckRunID checks a run id (core.CheckRunID).
func CheckRunID(id string) error { return core.CheckRunID(id) }

// ShellArg returns s as one argument of a command line a person copies
// into a shell: as it is when it holds nothing a shell would expand or
// split, else in single quotes ('stories[login].review': [...] is a glob).
func ShellArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// IsInstance reports whether a key names a loop's instance
// (loop[item].step).
func IsInstance(key string) bool { return core.IsInstance(key) }

// CodeOf returns the exit code an error carries (core.CodeOf).
func CodeOf(err error) ExitCode { return core.CodeOf(err) }

// Usage returns an ExitUsage error (core.Usage).
func Usage(format string, args ...any) error { return core.Usage(format, args...) }

// Refused returns an ExitRefused error (core.Refused).
func Refused(format string, args ...any) error { return core.Refused(format, args...) }

// newEvent builds an event (core.NewEvent).
func newEvent(at time.Time, typ, step string, data any) Event {
	return core.NewEvent(at, typ, step, data)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// holderOf names a lock's holder as the core does.
func holderOf(h runlock.Holder) Holder {
	return Holder{PID: h.PID, Host: h.Host, StartedAt: h.StartedAt}
}
