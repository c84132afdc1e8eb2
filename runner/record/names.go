package record

import (
	"fmt"
	"path/filepath"

	"github.com/flow-run/flow/runner/core"
)

// Layout maps the logical names of a run — a step, its iteration and
// attempt — to the files of its run directory (docs/architecture.md,
// "The record"). The core speaks only of logical names; this is the one
// place that turns them into paths.
type Layout struct {
	Dir, RunID string
	// gen is the run's generation: from 1 on, names of sessions carry
	// it (g<N>), so that a restarted run overwrites nothing.
	Gen int
}

// CleanupSession is the logical name of the workflow's cleanup session
// in the run's files: "@" is in no step id, so a step named cleanup
// keeps files of its own.
const CleanupSession = "@cleanup"

// LayoutOf returns the names of the run in dir.
func LayoutOf(dir, runID string) Layout { return Layout{Dir: dir, RunID: runID} }

// file returns a step's key as file names carry it
// (core.StepKey.FileName): "loop.item.step" for "loop[item].step".
func file(step core.StepKey) string { return step.FileName() }

// Session names one session of a step: "step.<iteration>.<attempt>",
// or "step.g<N>.<iteration>.<attempt>" from generation 1 on.
func (n Layout) Session(step core.StepKey, iteration, attempt int) string {
	if n.Gen > 0 {
		return fmt.Sprintf("%s.g%d.%d.%d", file(step), n.Gen, iteration, attempt)
	}
	return fmt.Sprintf("%s.%d.%d", file(step), iteration, attempt)
}

// Log is the output of one session of a step.
func (n Layout) Log(step core.StepKey, iteration, attempt int) string {
	return filepath.Join(n.Dir, LogsDir, n.Session(step, iteration, attempt)+".log")
}

// CheckLog is the output of a step's gate.check for one session.
func (n Layout) CheckLog(step core.StepKey, iteration, attempt int) string {
	return filepath.Join(n.Dir, LogsDir, n.Session(step, iteration, attempt)+".check.log")
}

// CleanupLog is the output of the run's k-th cleanup session (counted
// over the whole run).
func (n Layout) CleanupLog(k int) string {
	return filepath.Join(n.Dir, LogsDir, fmt.Sprintf("%s.%d.log", CleanupSession, k))
}

// ArchivedReport is where the report of one session is kept once read:
// reports/archive/<run>__<session>.json.
func (n Layout) ArchivedReport(step core.StepKey, iteration, attempt int) string {
	return filepath.Join(n.Dir, ReportsDir, "archive", n.RunID+"__"+n.Session(step, iteration, attempt)+".json")
}

// ArchivedDecision is where a human decision is kept once recorded,
// beside the decision file: <run>__<session>.json.
func (n Layout) ArchivedDecision(step core.StepKey, iteration, attempt int) string {
	return filepath.Join(n.Dir, InputsDir, n.RunID+"__"+n.Session(step, iteration, attempt)+".json")
}

// SessionsDir is the directory of a run that holds each session's own
// directory.
const SessionsDir = "sessions"

// SessionDir is one session's own directory: the only place in the run
// directory its session may write (where FLOW_REPORT_PATH points), the
// rest of .agents/ being read-only to it under the sandbox.
func (n Layout) SessionDir(step core.StepKey, iteration, attempt int) string {
	return filepath.Join(n.Dir, SessionsDir, n.Session(step, iteration, attempt))
}

// SessionReportName is the name of the report a session writes in its
// own directory.
const SessionReportName = "report.json"

// Report is where a step's session may write its report (agent_orchestrator's
// reports/<run_id>__<step>.json).
func (n Layout) Report(step core.StepKey) string {
	return filepath.Join(n.Dir, ReportsDir, n.RunID+"__"+file(step)+".json")
}

// ManualInput is where a human step's decision goes (agent_orchestrator's
// manual_inputs/<run_id>__<step>.json).
func (n Layout) ManualInput(step core.StepKey) string {
	return filepath.Join(n.Dir, InputsDir, n.RunID+"__"+file(step)+".json")
}

// Prompt is the record of the prompt of one session of a step.
func (n Layout) Prompt(step core.StepKey, iteration, attempt int) string {
	return filepath.Join(n.Dir, PromptsDir, n.Session(step, iteration, attempt)+".md")
}

// Feedback is the gate failure that sent a step back, for one of its
// sessions.
func (n Layout) Feedback(step core.StepKey, iteration, attempt int) string {
	return filepath.Join(n.Dir, PromptsDir, n.Session(step, iteration, attempt)+".feedback.json")
}
