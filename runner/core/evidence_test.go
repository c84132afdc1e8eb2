package core_test

import (
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/spec"
)

// TestCoreEvidenceOnTheFailedStep: a step that fails keeps the tail of
// the output that failed it as its evidence — its session's, or the
// output that failed its gate — on itself, not only on a loop-back's
// target; a gate that loops back keeps it until its step runs again.
func TestCoreEvidenceOnTheFailedStep(t *testing.T) {
	// done ends step's session with output, exit code and, for a step
	// with a gate, gate.pass.
	done := func(step, output string, exit int, pass bool) core.Input {
		return core.SessionDone{Step: keytest.K(step), Outcome: core.Outcome{Attempt: 1},
			Facts: core.SessionFacts{ExitCode: exit, Output: output},
			Gate:  &core.GateFacts{Pass: &core.ExprValue{Value: pass, Src: `verdict == "PASS"`}}}
	}
	for _, tc := range []struct {
		name, wf, step string
		inputs         func(h *coreHarness)
		status         core.Status
		want           string
	}{
		{"a session's exit", "steps:\n  - {id: build, run: build, max_attempts: 1}\n", "build", func(h *coreHarness) {
			h.decide(done("build", "compiling\nerror: x.go:3: nope\n", 2, true))
		}, core.Failed, "compiling\nerror: x.go:3: nope"},
		{"a gate without loop-back", "steps:\n  - {id: lint, run: lint, gate: {pass: 'verdict == \"PASS\"'}}\n", "lint", func(h *coreHarness) {
			h.decide(done("lint", "lint says\nFAIL\n", 0, false))
		}, core.Failed, "lint says\nFAIL"},
		{"a loop-back's spent budget", loopWF, "review", func(h *coreHarness) {
			for _, round := range []string{"round 1", "round 2"} {
				h.ok("coding")
				h.decide(done("review", round+"\nFAIL\n", 0, false))
			}
		}, core.Failed, "round 2\nFAIL"},
		{"a loop-back", loopWF, "review", func(h *coreHarness) {
			h.ok("coding")
			h.decide(done("review", "not yet\nFAIL\n", 0, false))
		}, core.Pending, "not yet\nFAIL"},
		{"the step running again", loopWF, "review", func(h *coreHarness) {
			h.ok("coding")
			h.decide(done("review", "not yet\nFAIL\n", 0, false))
			h.ok("coding")
		}, core.Running, ""},
		{"the step completed", loopWF, "review", func(h *coreHarness) {
			h.ok("coding")
			h.decide(done("review", "not yet\nFAIL\n", 0, false))
			h.ok("coding")
			h.decide(done("review", "PASS\n", 0, true))
		}, core.Completed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newCoreHarness(t, "name: ev\n"+tc.wf, spec.Budgets{})
			tc.inputs(h)
			s := h.st.Steps[keytest.K(tc.step)]
			if s.Status != tc.status || s.Evidence != tc.want {
				t.Errorf("%s: %s, evidence %q; want %s, %q", tc.step, s.Status, s.Evidence, tc.status, tc.want)
			}
			h.replayed()
		})
	}
}

// loopWF is a review that loops back to its coding, twice at most.
const loopWF = `defaults: {max_iterations: 2}
steps:
  - {id: coding, run: code}
  - id: review
    run: review
    gate: {pass: 'verdict == "PASS"', loop_back_to: coding}
`
