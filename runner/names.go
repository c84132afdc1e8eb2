package runner

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flow-run/flow/runner/core"
)

// names maps the logical names of a run — a step, its iteration and
// attempt — to the files of its run directory (DESIGN §6). The core
// speaks only of logical names; this is the one place that turns them
// into paths.
type names struct {
	dir, runID string
	// gen is the run's generation: from 1 on, names of sessions carry
	// it (g<N>), so that a restarted run overwrites nothing.
	gen int
}

// CleanupSession is the logical name of the workflow's cleanup session
// in the run's files: "@" is in no step id, so a step named cleanup
// keeps files of its own.
const CleanupSession = "@cleanup"

// namesOf returns the names of the run in dir.
func namesOf(dir, runID string) names { return names{dir: dir, runID: runID} }

// file returns a step instance's key as file names carry it
// (core.StepKey.FileName): "loop.item.step" for "loop[item].step".
func file(step string) string {
	if !strings.Contains(step, "[") {
		return step // a step, not an instance: named as it is
	}
	if k, err := core.ParseStepKey(step); err == nil {
		return k.FileName()
	}
	return step
}

// session names one session of a step: "step.<iteration>.<attempt>",
// or "step.g<N>.<iteration>.<attempt>" from generation 1 on.
func (n names) session(step string, iteration, attempt int) string {
	if n.gen > 0 {
		return fmt.Sprintf("%s.g%d.%d.%d", file(step), n.gen, iteration, attempt)
	}
	return fmt.Sprintf("%s.%d.%d", file(step), iteration, attempt)
}

// log is the output of one session of a step.
func (n names) log(step string, iteration, attempt int) string {
	return filepath.Join(n.dir, LogsDir, n.session(step, iteration, attempt)+".log")
}

// checkLog is the output of a step's gate.check for one session.
func (n names) checkLog(step string, iteration, attempt int) string {
	return filepath.Join(n.dir, LogsDir, n.session(step, iteration, attempt)+".check.log")
}

// cleanupLog is the output of the run's k-th cleanup session (counted
// over the whole run).
func (n names) cleanupLog(k int) string {
	return filepath.Join(n.dir, LogsDir, fmt.Sprintf("%s.%d.log", CleanupSession, k))
}

// archivedReport is where the report of one session is kept once read:
// reports/archive/<run>__<session>.json.
func (n names) archivedReport(step string, iteration, attempt int) string {
	return filepath.Join(n.dir, ReportsDir, "archive", n.runID+"__"+n.session(step, iteration, attempt)+".json")
}

// archivedDecision is where a human decision is kept once recorded,
// beside the decision file: <run>__<session>.json.
func (n names) archivedDecision(step string, iteration, attempt int) string {
	return filepath.Join(n.dir, InputsDir, n.runID+"__"+n.session(step, iteration, attempt)+".json")
}

// report is where a step's session may write its report (the seed's
// reports/<run_id>__<step>.json).
func (n names) report(step string) string {
	return filepath.Join(n.dir, ReportsDir, n.runID+"__"+file(step)+".json")
}

// manualInput is where a human step's decision goes (the seed's
// manual_inputs/<run_id>__<step>.json).
func (n names) manualInput(step string) string {
	return filepath.Join(n.dir, InputsDir, n.runID+"__"+file(step)+".json")
}

// prompt is the record of the prompt of one session of a step.
func (n names) prompt(step string, iteration, attempt int) string {
	return filepath.Join(n.dir, PromptsDir, n.session(step, iteration, attempt)+".md")
}

// feedback is the gate failure that sent a step back, for one of its
// sessions.
func (n names) feedback(step string, iteration, attempt int) string {
	return filepath.Join(n.dir, PromptsDir, n.session(step, iteration, attempt)+".feedback.json")
}
