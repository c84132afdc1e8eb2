package core_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/spec"
)

const carryLoop = `
name: carry
defaults: {max_iterations: 4}
steps:
  - id: planning
    run: plan
  - id: a
    run: a
    needs: [planning]
  - id: b
    run: b
    needs: [planning]
    max_attempts: 3
  - id: review
    run: review
    needs: [a, b]
    gate:
      pass: verdict == "PASS"
      loop_back_to: a
  - id: approve
    human: {message: "ship it"}
    needs: [review]
`

// TestCoreRestoreDecidesAsTheOriginal drives a run with parallel
// steps, a retry, a loop-back, control and a human step twice: once
// with one core, once with a core restored from the state and the
// Carry of the previous one before every input. Both must make exactly
// the same decisions.
func TestCoreRestoreDecidesAsTheOriginal(t *testing.T) {
	h := newCoreHarness(t, carryLoop, spec.Budgets{})
	live, liveSt := h.core, h.st
	moved, movedSt := h.core, h.st.Clone()
	attempt := func(step string) int { return liveSt.Steps[keytest.K(step)].Attempts }
	ok := func(step string) core.Input {
		return core.SessionDone{Step: keytest.K(step), Outcome: core.Outcome{Attempt: attempt(step)}, Gate: &core.GateFacts{}}
	}
	retry := true
	inputs := []func() core.Input{
		func() core.Input { return ok("planning") },
		func() core.Input {
			return core.SessionDone{Step: core.Key("b"), Outcome: core.Outcome{Attempt: attempt("b")}, Facts: core.SessionFacts{ExitCode: 1}, RetryIf: &retry}
		},
		func() core.Input { return ok("a") },
		func() core.Input { return core.TimerFired{Step: core.Key("b")} },
		func() core.Input { return ok("b") },
		func() core.Input {
			return core.SessionDone{Step: core.Key("review"), Outcome: core.Outcome{Attempt: attempt("review")},
				Gate: &core.GateFacts{Pass: &core.ExprValue{Value: false, Src: "verdict == \"PASS\""}}}
		},
		func() core.Input { return core.ControlChanged{Desired: core.Pause} },
		func() core.Input { return ok("a") },
		func() core.Input { return core.ControlChanged{Desired: core.Continuous} },
		func() core.Input { return ok("review") },
		func() core.Input {
			return core.HumanReady{Step: core.Key("approve"), Attempt: 1, ManualInputPath: "/m/approve.json"}
		},
		func() core.Input {
			return core.HumanDecision{Step: core.Key("approve"), Input: core.HumanInput{Approved: true, By: "ann"}}
		},
	}
	for i, next := range inputs {
		in := next()
		h.now = h.now.Add(time.Second)
		want := live.Decide(liveSt, in, h.now)
		var cr core.Carry
		b, err := json.Marshal(moved.Carry())
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &cr); err != nil {
			t.Fatal(err)
		}
		moved = core.Restore(h.plan, movedSt, cr)
		got := moved.Decide(movedSt, in, h.now)
		if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
			t.Fatalf("input %d (%T): the restored core decided\n%s\nthe live one\n%s", i, in, g, w)
		}
	}
	if liveSt.Status != core.RunCompleted {
		t.Fatalf("run %s, want completed", liveSt.Status)
	}
}
