package core_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/spec"
)

// sideLoop is a review whose loop-back goes to a fix step off to its
// side (docs/concepts.md, "Loop-backs"): fix needs what review needs, not review.
const sideLoop = `
name: side
defaults: {max_iterations: 3}
steps:
  - id: code
    run: code
  - id: review
    run: review
    gate:
      pass: verdict == "PASS"
      loop_back_to: fix
  - id: fix
    run: fix
    needs: [code]
  - id: merge
    run: merge
    needs: [review]
`

// waitingFor returns a step's waiting_for, or "".
func waitingForOf(h *coreHarness, step string) string {
	if w := h.st.Steps[keytest.K(step)].WaitingFor; w != nil {
		return w.String()
	}
	return ""
}

// TestLoopBackToSideStep: a gate failure that loops back to a step off
// to the side resets the target and the gate step (and what depends on
// it), both one iteration on; the gate step waits for the target
// (waiting_for), runs again once the target completed, and passes.
func TestLoopBackToSideStep(t *testing.T) {
	h := newCoreHarness(t, sideLoop, spec.Budgets{})
	h.ok("code")
	h.expect("review", core.Running, 0, 1)
	h.gateFail("review", "needs work")

	// fix (ready, first in the file of what may start) runs; review
	// waits for it.
	h.expect("fix", core.Running, 1, 1)
	h.expect("review", core.Pending, 1, 0)
	h.expect("merge", core.Pending, 1, 0)
	if w := waitingForOf(h, "review"); w != "fix" {
		t.Errorf("review waiting_for = %q, want fix", w)
	}
	if b := h.st.Steps[core.Key("review")].BlockedByLoop; b != nil {
		t.Errorf("review blocked_by_loop = %s, want none (it waits for fix)", *b)
	}
	if b := h.st.Steps[core.Key("merge")].BlockedByLoop; b == nil || *b != "review" {
		t.Errorf("merge blocked_by_loop = %v, want review", b)
	}
	if fb := h.st.Steps[core.Key("fix")].Feedback; fb == nil || fb.Step != "review" || !strings.Contains(fb.Reason, "needs work") {
		t.Errorf("fix feedback = %+v", fb)
	}
	if got := h.started(); !slices.Equal(got, []string{"fix"}) {
		t.Errorf("started after the loop-back: %v, want [fix]", got)
	}
	var gf core.GateFailure
	for _, e := range h.events {
		if e.Type == core.EvGateFailed {
			if err := json.Unmarshal(e.Data, &gf); err != nil {
				t.Fatal(err)
			}
		}
	}
	if gf.WaitingFor != keytest.K("fix") || gf.Target != keytest.K("fix") || !slices.Equal(gf.Reset, keytest.Keys("fix", "review", "merge")) {
		t.Errorf("gate_failed data: target %q waiting_for %q reset %v", gf.Target, gf.WaitingFor, gf.Reset)
	}
	b, _ := json.Marshal(h.st.Steps[core.Key("review")])
	if !strings.Contains(string(b), `"waiting_for":"fix"`) {
		t.Errorf("run_state.json of review has no waiting_for: %s", b)
	}

	h.ok("fix")
	h.expect("fix", core.Completed, 1, 1)
	h.expect("review", core.Running, 1, 1)
	if w := waitingForOf(h, "review"); w != "" {
		t.Errorf("review still waiting_for %q once it runs", w)
	}
	if b := h.st.Steps[core.Key("merge")].BlockedByLoop; b != nil {
		t.Errorf("merge still blocked by %s after fix completed", *b)
	}
	h.ok("review")
	h.expect("review", core.Completed, 1, 1)
	h.ok("merge")
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish = %+v", f)
	}
	b, _ = json.Marshal(h.st.Steps[core.Key("review")])
	if strings.Contains(string(b), "waiting_for") {
		t.Errorf("a step that waits for nothing has waiting_for: %s", b)
	}
	h.replayed()
}

// TestLoopBackToSideStepIterationCap: the target's iterations count
// the loop-backs as for an upstream target; the gate step's count too.
// Once the budget is spent the gate step fails with exit 5.
func TestLoopBackToSideStepIterationCap(t *testing.T) {
	h := newCoreHarness(t, sideLoop, spec.Budgets{})
	h.ok("code")
	h.gateFail("review", "no") // fix hasn't run: it runs now, iteration 1
	h.ok("fix")
	h.gateFail("review", "no")
	h.expect("fix", core.Running, 2, 1)
	h.expect("review", core.Pending, 2, 0)
	h.ok("fix")
	h.gateFail("review", "still no")
	s := h.st.Steps[core.Key("review")]
	if s.Status != core.Failed || !strings.Contains(deref(s.LastError), "max iterations reached (3)") {
		t.Fatalf("review: %s %q", s.Status, deref(s.LastError))
	}
	if s.WaitingFor != nil {
		t.Errorf("a failed review waits for %s", *s.WaitingFor)
	}
	if f := h.finish(); f == nil || f.ExitCode != 5 {
		t.Fatalf("finish = %+v, want exit 5", f)
	}
	h.replayed()
}

// TestLoopBackToSideStepResume: a run stopped while the gate step waits
// for its target is rebuilt from its events into the same state, and a
// new core over it runs the target first, then the gate step.
func TestLoopBackToSideStepResume(t *testing.T) {
	h := newCoreHarness(t, sideLoop, spec.Budgets{})
	h.ok("code")
	h.gateFail("review", "needs work")
	h.expect("fix", core.Running, 1, 1)
	h.decide(core.Interrupt{})
	h.decide(core.SessionDone{Step: core.Key("fix"), Interrupted: true})
	if f := h.finish(); f == nil || f.Status != core.RunInterrupted {
		t.Fatalf("finish = %+v, want interrupted", f)
	}
	h.replayed()

	// A new runner: the state from the events, a new core.
	st := &core.State{}
	for i, e := range h.events {
		e.Seq = int64(i + 1)
		if err := core.Apply(st, e); err != nil {
			t.Fatal(err)
		}
	}
	if w := st.Steps[core.Key("review")].WaitingFor; w == nil || *w != keytest.K("fix") {
		t.Fatalf("rebuilt review waiting_for = %v, want fix", w)
	}
	h.st = st
	h.core = core.NewCore(h.plan)
	if got := startedOf(h.decide(core.Begin{})); !slices.Equal(got, []string{"fix"}) {
		t.Fatalf("resumed run started %v, want [fix] (review waits for it)", got)
	}
	h.ok("fix")
	if got := h.started(); !slices.Equal(got, []string{"review"}) {
		t.Fatalf("after fix: started %v, want [review]", got)
	}
	h.ok("review")
	h.ok("merge")
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish = %+v", f)
	}
	h.replayed()
}

// TestLoopBackToSideStepInBody: inside a for_each body the same rule
// holds among the item's instances.
func TestLoopBackToSideStepInBody(t *testing.T) {
	h := newCoreHarness(t, `
name: body
steps:
  - id: stories
    for_each: [a]
    steps:
      - {id: impl, run: impl}
      - {id: review, run: review, gate: {pass: verdict == "PASS", loop_back_to: fix}}
      - {id: fix, run: fix, needs: [impl]}
  - id: after
    run: after
`, spec.Budgets{})
	h.decide(core.ItemsResult{Step: core.Key("stories"), Items: []core.LoopItem{{Key: "a", Value: []byte(`"a"`)}}})
	h.ok("stories[a].impl")
	// An item's ready instances start together: fix is running when
	// review's gate fails, and a loop-back never pulls a session from
	// under its feet; review waits for that session.
	h.expect("stories[a].review", core.Running, 0, 1)
	h.expect("stories[a].fix", core.Running, 0, 1)
	h.gateFail("stories[a].review", "no")
	h.expect("stories[a].fix", core.Running, 0, 1)
	h.expect("stories[a].review", core.Pending, 1, 0)
	if w := waitingForOf(h, "stories[a].review"); w != "stories[a].fix" {
		t.Errorf("review waiting_for = %q, want stories[a].fix", w)
	}
	h.ok("stories[a].fix")
	h.expect("stories[a].review", core.Running, 1, 1)
	h.ok("stories[a].review")
	h.ok("after")
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish = %+v", f)
	}
	h.replayed()
}

func startedOf(effs []core.Effect) []string {
	var ids []string
	for _, e := range effs {
		if s, ok := e.(core.StartSession); ok {
			ids = append(ids, s.Step.String())
		}
	}
	return ids
}
