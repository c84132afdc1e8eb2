package core

import (
	"fmt"
	"time"
)

// SessionFacts are what a driver observed of a finished session. The
// core decides from them what the session means (docs/concepts.md,
// "Sessions", "Gates" and "Budgets: attempts and iterations"): failed
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
	// Verdict is the session's verdict by the rule of docs/concepts.md, "Sessions":
	// VerdictPass, VerdictFail, VerdictMixed or "" (none), and
	// VerdictWhy why there is none or it is mixed.
	Verdict, VerdictWhy string
	// Output is the tail of the session's output (secrets hidden), the
	// evidence a re-entered step is shown when the session's exit or
	// verdict failed its gate.
	Output string
}

// The verdicts (docs/concepts.md, "Sessions").
const (
	VerdictPass  = "PASS"
	VerdictFail  = "FAIL"
	VerdictMixed = "MIXED"
)

// ReportFacts are the parts of a session's report that decide.
type ReportFacts struct {
	// Status is "completed", "failed" or "" (not given).
	Status string
	// GateFailure is the report's gate_failure, and GateFailureGiven
	// whether the report has one at all (an explicit false is an
	// agent's verdict that its gate passes).
	GateFailure, GateFailureGiven bool
	Error                         string
}

// GateFacts are what a driver evaluated of a step's gate after its
// session succeeded.
type GateFacts struct {
	// Check is the exit code of gate.check, when the gate has one, and
	// CheckOutput the tail of its output.
	Check       *int
	CheckOutput string
	// Pass and Fail are the values of gate.pass and gate.fail, when
	// given.
	Pass, Fail *ExprValue
}

// ExprValue is the value of a workflow expression and its source.
type ExprValue struct {
	Value bool
	Src   string
}

// failed reports whether a verdict fails (docs/concepts.md, "Pair review": MIXED counts as
// FAIL).
func failed(verdict string) bool { return verdict == VerdictFail || verdict == VerdictMixed }

// Failure says why a session of step ps failed, or "" when it
// succeeded: a failure of the driver, a limit that stopped it, an
// unreadable report, a non-zero exit, a report that says failed, or —
// in an agent step without a gate, or a command step whose workflow
// declares its signals — a FAIL or MIXED verdict. In a step with a gate
// the verdict is the gate's to judge; a command step is decided by its
// exit code.
func Failure(ps *PlanStep, f SessionFacts) string {
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
	case failed(f.Verdict) && !ps.HasGate && !ps.Reviewer && !ps.ReportDecides && (ps.Kind == KindAgent || ps.SignalsDecide):
		return "the session's verdict is " + verdictText(f)
	}
	return ""
}

// exitFailure reports whether a session failed by its exit code alone:
// the failure a command step with a loop-back turns into a gate failure
// once its attempts are spent.
func exitFailure(f SessionFacts) bool {
	return f.Err == "" && f.Timeout == 0 && f.IdleTimeout == 0 && f.ReportErr == "" && f.ExitCode > 0
}

// verdictText names a FAIL or MIXED verdict for a reason.
func verdictText(f SessionFacts) string {
	if f.Verdict == VerdictMixed {
		return "MIXED (" + f.VerdictWhy + ")"
	}
	return f.Verdict
}

// GateVerdict says why the gate of step ps failed after a session that
// succeeded, or "" when it passed, by the table of docs/concepts.md, "Gates". Always: a
// report with gate_failure true, or a gate.check that exited non-zero,
// fails it. Then gate.pass must be true and gate.fail false when given;
// with neither, an agent step without a check needs an explicit
// verdict — a final PASS line, or a report with gate_failure false —
// and no FAIL or MIXED one (silence never passes a review); an agent
// step with a check, and a command step, need no FAIL or MIXED verdict.
// It also returns the evidence the re-entered step is shown: the
// check's output when the check decided, else the session's.
func GateVerdict(ps *PlanStep, f SessionFacts, g GateFacts) (reason, evidence string) {
	rep := f.Report
	switch {
	case rep != nil && rep.GateFailure:
		msg := "the report says gate_failure"
		if rep.Error != "" {
			msg += ": " + rep.Error
		}
		return msg, f.Output
	case g.Check != nil && *g.Check != 0:
		return fmt.Sprintf("gate.check exited %d", *g.Check), g.CheckOutput
	case g.Pass != nil && !g.Pass.Value:
		return "gate.pass is false: " + g.Pass.Src, f.Output
	case g.Fail != nil && g.Fail.Value:
		return "gate.fail is true: " + g.Fail.Src, f.Output
	case g.Pass != nil || g.Fail != nil, ps.ReportDecides:
		return "", ""
	case failed(f.Verdict):
		return "the verdict is " + verdictText(f), f.Output
	case ps.Kind == KindAgent && g.Check == nil && f.Verdict != VerdictPass && (rep == nil || !rep.GateFailureGiven):
		return "no verdict: " + f.VerdictWhy + " (a review passes only on a final PASS line, or a report with gate_failure false)", f.Output
	}
	return "", ""
}
