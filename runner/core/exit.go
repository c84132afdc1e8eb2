package core

// The exit codes a run ends with. run_finished and run_state.json
// record them, a driver's result carries them, and the command line
// exits with them: the operations layer's table of exit codes
// (docs/architecture.md, "Shared tables") takes these rows from here.
// The codes a command ends with when it refuses what was asked are the
// operations layer's own (ErrInvalid and ErrRefused are the core's
// words for them).
const (
	// ExitFailed: a step failed.
	ExitFailed = 1
	// ExitHuman: the run stopped to wait on a human.
	ExitHuman = 3
	// ExitPaused: the run stopped paused.
	ExitPaused = 4
	// ExitBudget: an iteration budget ran out.
	ExitBudget = 5
	// ExitBudgetExceeded: a cost, token or session budget ran out.
	ExitBudgetExceeded = 6
	// ExitInterrupted: the runner was interrupted (SIGINT, SIGTERM).
	ExitInterrupted = 130
)
