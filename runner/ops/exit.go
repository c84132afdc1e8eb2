package ops

import (
	"errors"
	"fmt"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// ExitCode is one row of flow's exit-code table (docs/architecture.md,
// "Shared tables"), defined here once: every front end ends a command
// with CodeOf its error, and a run's result carries the code the run
// ended with.
type ExitCode int

// The exit codes. The codes a run ends with are the core's, which
// records them; the others say why a command refused what it was asked.
const (
	// ExitOK: the run completed, or a command did what it was asked.
	ExitOK ExitCode = 0
	// ExitFailed: a step failed.
	ExitFailed ExitCode = core.ExitFailed
	// ExitUsage: bad usage or invalid input — an invalid workflow, a bad
	// run id or step, an unknown run, a run id that already exists.
	ExitUsage ExitCode = 2
	// ExitHuman: the run waits on a human (--no-wait).
	ExitHuman ExitCode = core.ExitHuman
	// ExitPaused: the run is paused (--no-wait).
	ExitPaused ExitCode = core.ExitPaused
	// ExitBudget: an iteration budget ran out.
	ExitBudget ExitCode = core.ExitBudget
	// ExitBudgetExceeded: a cost, token or session budget ran out.
	ExitBudgetExceeded ExitCode = core.ExitBudgetExceeded
	// ExitHeld: another live runner holds the run.
	ExitHeld ExitCode = 7
	// ExitRefused: the run or step is not in a state that allows this.
	ExitRefused ExitCode = 8
	// ExitInterrupted: flow was interrupted (SIGINT, SIGTERM).
	ExitInterrupted ExitCode = core.ExitInterrupted
)

// ExitCodes returns every exit code of the table, in order.
func ExitCodes() []ExitCode {
	return []ExitCode{ExitOK, ExitFailed, ExitUsage, ExitHuman, ExitPaused, ExitBudget,
		ExitBudgetExceeded, ExitHeld, ExitRefused, ExitInterrupted}
}

// Meaning says in a few words what a command that exits with c ended
// in, as help texts list it.
func (c ExitCode) Meaning() string {
	switch c {
	case ExitOK:
		return "completed"
	case ExitFailed:
		return "a step failed"
	case ExitUsage:
		return "bad usage or invalid input (an invalid workflow, an unknown run or step, a run id that exists)"
	case ExitHuman:
		return "waiting on a human (--no-wait)"
	case ExitPaused:
		return "paused (--no-wait)"
	case ExitBudget:
		return "an iteration budget ran out"
	case ExitBudgetExceeded:
		return "a cost, token or session budget ran out (resumable with a raised budget)"
	case ExitHeld:
		return "refused: another live runner holds the run"
	case ExitRefused:
		return "refused: the run or step is not in a state that allows it (already finished, not waiting, already decided)"
	case ExitInterrupted:
		return "interrupted (SIGINT or SIGTERM; resumable)"
	}
	return fmt.Sprintf("exit code %d", int(c))
}

// ExitError is an error that ends a command with a given exit code.
type ExitError struct {
	Code ExitCode
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }

func (e *ExitError) Unwrap() error { return e.Err }

// Usage returns an ExitUsage error: the core's refusal of a request
// that is wrong in itself (core.Invalid), as the operations layer
// names it.
func Usage(format string, args ...any) error { return core.Invalid(format, args...) }

// Refused returns an ExitRefused error: the run or step is not in a
// state that allows what was asked (core.Refuse).
func Refused(format string, args ...any) error { return core.Refuse(format, args...) }

// CodeOf returns the exit code an error carries: an *ExitError's code;
// ExitHeld for a *record.HeldError; ExitUsage for core.ErrInvalid and a
// run that does not exist (record.ErrNoRun); ExitRefused for
// core.ErrRefused; and ExitFailed for anything else (a failure of flow
// itself). A nil error is ExitOK.
func CodeOf(err error) ExitCode {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var held *record.HeldError
	switch {
	case errors.As(err, &held):
		return ExitHeld
	case errors.Is(err, core.ErrInvalid), errors.Is(err, record.ErrNoRun):
		return ExitUsage
	case errors.Is(err, core.ErrRefused):
		return ExitRefused
	}
	return ExitFailed
}
