package runner

import (
	"fmt"
	"path/filepath"

	"github.com/flow-run/flow/runner/core"
)

// names maps the logical names of a run — a step, its iteration and
// attempt — to the files of its run directory (DESIGN §6). The core
// speaks only of logical names; this is the one place that turns them
// into paths.
type names struct {
	dir, runID string
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
	if k, err := core.ParseStepKey(step); err == nil {
		return k.FileName()
	}
	return step
}

// log is the output of one session of a step.
func (n names) log(step string, iteration, attempt int) string {
	return filepath.Join(n.dir, LogsDir, fmt.Sprintf("%s.%d.%d.log", file(step), iteration, attempt))
}

// checkLog is the output of a step's gate.check for one session.
func (n names) checkLog(step string, iteration, attempt int) string {
	return filepath.Join(n.dir, LogsDir, fmt.Sprintf("%s.%d.%d.check.log", file(step), iteration, attempt))
}

// cleanupLog is the output of the run's k-th cleanup session.
func (n names) cleanupLog(k int) string {
	return filepath.Join(n.dir, LogsDir, fmt.Sprintf("%s.%d.log", CleanupSession, k))
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
	return filepath.Join(n.dir, PromptsDir, fmt.Sprintf("%s.%d.%d.md", file(step), iteration, attempt))
}

// feedback is the gate failure that sent a step back, for its
// iteration.
func (n names) feedback(step string, iteration int) string {
	return filepath.Join(n.dir, PromptsDir, fmt.Sprintf("%s.%d.feedback.json", file(step), iteration))
}
