package core

import (
	"fmt"
	"time"
)

// SessionFacts are what a driver observed of a finished session. The
// core decides from them what the session means (DESIGN §3, §4): failed
// or not, retried or not, and what its gate says; the driver decides
// nothing.
type SessionFacts struct {
	// ExitCode is the exit status of the session's main process (-1
	// when it was killed or never started).
	ExitCode int
	// Err is a failure of the driver to start or follow the session:
	// to spawn it, wait for it, or write its log.
	Err string
	// Timeout and IdleTimeout are the limits that stopped the session,
	// when one did (zero otherwise).
	Timeout, IdleTimeout time.Duration
	// ReportErr says why the session's report could not be read.
	ReportErr string
	// Report holds what the session's report said, when it wrote one.
	Report *ReportFacts
	// Verdict is the signal on the final line of the output (DESIGN
	// §2), and FailWord the word of the FAIL signal (renamed by
	// signals:).
	Verdict, FailWord string
}

// ReportFacts are the parts of a session's report that decide.
type ReportFacts struct {
	// Status is "completed", "failed" or "" (not given).
	Status      string
	GateFailure bool
	Error       string
}

// GateFacts are what a driver evaluated of a step's gate after its
// session succeeded.
type GateFacts struct {
	// Check is the exit code of gate.check, when the gate has one.
	Check *int
	// Pass and Fail are the values of gate.pass and gate.fail, when
	// given.
	Pass, Fail *ExprValue
}

// ExprValue is the value of a workflow expression and its source.
type ExprValue struct {
	Value bool
	Src   string
}

// Failure says why a session failed, or "" when it succeeded: a
// failure of the driver, a limit that stopped it, an unreadable report,
// a non-zero exit, a report that says failed, or — in a step without a
// gate — a FAIL verdict (in a step with a gate the verdict fails the
// gate instead).
func Failure(f SessionFacts, hasGate bool) string {
	rep := f.Report
	switch {
	case f.Err != "":
		return "session: " + f.Err
	case f.Timeout > 0:
		return fmt.Sprintf("timed out after %s", f.Timeout)
	case f.IdleTimeout > 0:
		return fmt.Sprintf("no output for %s (idle_timeout); the session was stuck", f.IdleTimeout)
	case f.ReportErr != "":
		return "unreadable report: " + f.ReportErr
	case f.ExitCode != 0:
		why := fmt.Sprintf("exit code %d", f.ExitCode)
		if rep != nil && rep.Error != "" {
			why += ": " + rep.Error
		}
		return why
	case rep != nil && rep.Status == "failed":
		why := "report status failed"
		if rep.Error != "" {
			why += ": " + rep.Error
		}
		return why
	case f.Verdict != "" && f.Verdict == f.FailWord && !hasGate:
		return "the session's verdict is FAIL"
	}
	return ""
}

// GateVerdict says why the gate of a session that succeeded failed, or
// "" when it passed: a report with gate_failure, gate.pass false,
// gate.fail true, or, with neither expression, a gate.check that exited
// non-zero or a FAIL verdict.
func GateVerdict(f SessionFacts, g GateFacts) string {
	if rep := f.Report; rep != nil && rep.GateFailure {
		msg := "the report says gate_failure"
		if rep.Error != "" {
			msg += ": " + rep.Error
		}
		return msg
	}
	if g.Pass != nil && !g.Pass.Value {
		return "gate.pass is false: " + g.Pass.Src
	}
	if g.Fail != nil && g.Fail.Value {
		return "gate.fail is true: " + g.Fail.Src
	}
	if g.Pass == nil && g.Fail == nil {
		if g.Check != nil && *g.Check != 0 {
			return fmt.Sprintf("gate.check exited %d", *g.Check)
		}
		if f.Verdict != "" && f.Verdict == f.FailWord {
			return "the verdict is FAIL"
		}
	}
	return ""
}
