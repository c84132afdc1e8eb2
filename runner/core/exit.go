package core

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// ExitCode is one row of flow's exit-code table (docs/architecture.md, "Shared tables"). It is
// defined here once; the core finishes runs with these codes, the
// operations return them in *ExitError, and the command line exits
// with them.
type ExitCode int

// The exit codes of docs/architecture.md, "Shared tables".
const (
	// ExitOK: the run completed, or a command did what it was asked.
	ExitOK ExitCode = 0
	// ExitFailed: a step failed.
	ExitFailed ExitCode = 1
	// ExitUsage: bad usage or invalid input — an invalid workflow, a bad
	// run id or step, an unknown run, a run id that already exists.
	ExitUsage ExitCode = 2
	// ExitHuman: the run waits on a human (--no-wait).
	ExitHuman ExitCode = 3
	// ExitPaused: the run is paused (--no-wait).
	ExitPaused ExitCode = 4
	// ExitBudget: an iteration budget ran out.
	ExitBudget ExitCode = 5
	// ExitBudgetExceeded: a cost, token or session budget ran out.
	ExitBudgetExceeded ExitCode = 6
	// ExitHeld: another live runner holds the run.
	ExitHeld ExitCode = 7
	// ExitRefused: the run or step is not in a state that allows this.
	ExitRefused ExitCode = 8
	// ExitInterrupted: flow was interrupted (SIGINT, SIGTERM).
	ExitInterrupted ExitCode = 130
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

// Usage returns an ExitUsage error.
func Usage(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Refused returns an ExitRefused error: the run or step is not in a
// state that allows what was asked.
func Refused(format string, args ...any) error {
	return &ExitError{Code: ExitRefused, Err: fmt.Errorf(format, args...)}
}

// CodeOf returns the exit code an error carries: an *ExitError's code,
// ExitHeld for a *HeldError, ExitUsage for a run that does not exist,
// and ExitFailed for anything else (a failure of flow itself). A nil
// error is ExitOK.
func CodeOf(err error) ExitCode {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var held *HeldError
	if errors.As(err, &held) {
		return ExitHeld
	}
	if errors.Is(err, ErrNoRun) {
		return ExitUsage
	}
	return ExitFailed
}

// ErrNoRun is returned when a run does not exist.
var ErrNoRun = errors.New("no such run")

// Holder names the runner that holds a run.
type Holder struct {
	PID       int
	Host      string
	StartedAt time.Time
}

// HeldError says a run is held by a live runner.
type HeldError struct {
	RunID  string
	Holder Holder
}

func (e *HeldError) Error() string {
	since := ""
	if !e.Holder.StartedAt.IsZero() {
		since = " since " + e.Holder.StartedAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("run %s is held by a live runner (pid %d on %s%s); wait for it, or stop it first",
		e.RunID, e.Holder.PID, e.Holder.Host, since)
}

// Limits on names that become file names (docs/architecture.md, "The record": every name on
// disk stays under 255 bytes).
const (
	// MaxRunID is the longest run id.
	MaxRunID = 64
)

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckRunID returns an ExitUsage error unless id is a valid run id:
// [A-Za-z0-9][A-Za-z0-9._-]{0,63}, and not "." or "..". A run id names
// a directory under .agents/runs, so nothing else may pass: no path
// separators, no leading dash (it would read as a flag), no spaces or
// control characters.
func CheckRunID(id string) error {
	if len(id) <= MaxRunID && runIDPattern.MatchString(id) && id != "." && id != ".." {
		return nil
	}
	shown := id
	if len(shown) > MaxRunID+16 {
		shown = shown[:MaxRunID+16] + "..."
	}
	why := "a run id is 1 to 64 characters of letters, digits, '.', '_' and '-', starting with a letter or digit"
	switch {
	case id == "":
		return Usage("empty run id: %s", why)
	case len(id) > MaxRunID:
		return Usage("run id %q is %d bytes long: %s", shown, len(id), why)
	case strings.ContainsAny(id, `/\`):
		return Usage("run id %q contains a path separator: %s", shown, why)
	}
	return Usage("invalid run id %q: %s", shown, why)
}
