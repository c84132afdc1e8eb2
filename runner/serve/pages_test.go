package serve

import (
	"testing"

	"github.com/flow-run/flow/runner"
	"github.com/flow-run/flow/runner/ops"
)

// TestStepRowsWaits: a pending step says what it waits for — the
// target of a loop-back to its side, or its closed gates — and nothing
// else does.
func TestStepRowsWaits(t *testing.T) {
	fix := "fix"
	st := &runner.State{StepOrder: []string{"code", "review", "deploy", "docs"}, Steps: map[string]*runner.StepState{
		"code":   {Status: runner.Completed},
		"review": {Status: runner.Pending, WaitingFor: &fix},
		"deploy": {Status: runner.Pending, WaitingGates: []string{"ci", "window"}},
		"docs":   {Status: runner.Running, WaitingGates: []string{"stale"}},
	}}
	want := map[string]string{"code": "", "review": "fix", "deploy": "gates: ci, window", "docs": ""}
	for _, row := range stepRows("/runs/0/r", ops.Status{State: st}, nil) {
		if row.Waits != want[row.Key] {
			t.Errorf("%s waits %q, want %q", row.Key, row.Waits, want[row.Key])
		}
	}
}
