package core_test

import (
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/spec"
)

// humanAfter is a command step with an approval after its session.
const humanAfter = `
name: after
steps:
  - id: build
    run: make
    human: {message: "ok?"}
  - id: ship
    run: ship
`

// exitZero is the exit code of a session that succeeded.
var exitZero = 0

// built ends build's session with exit 0 and a metric.
func built(h *coreHarness) []core.Effect {
	return h.decide(core.SessionDone{Step: core.Key("build"), Outcome: core.Outcome{Attempt: h.st.Steps[core.Key("build")].Attempts, ExitCode: &exitZero,
		Metrics: map[string]string{"size": "3"}}})
}

// TestHumanAfterSessionApproved: the session runs first; once it has
// succeeded the step waits on a human (its session's facts kept), and
// the approval completes it with the input.
func TestHumanAfterSessionApproved(t *testing.T) {
	h := newCoreHarness(t, humanAfter, spec.Budgets{})
	h.expect("build", core.Running, 0, 1)
	effs := built(h)
	h.expect("build", core.WaitingOnHuman, 0, 1)
	s := h.st.Steps[core.Key("build")]
	if s.ManualInputPath == nil || !strings.HasSuffix(*s.ManualInputPath, "r1__build.json") {
		t.Errorf("manual_input_path = %v", s.ManualInputPath)
	}
	if s.ExitCode == nil || *s.ExitCode != 0 || s.Metrics["size"] != "3" {
		t.Errorf("the waiting step lost its session's facts: exit %v metrics %v", s.ExitCode, s.Metrics)
	}
	var awaited, idle bool
	for _, e := range effs {
		switch e.(type) {
		case core.AwaitHuman:
			awaited = true
		case core.Idle:
			idle = true
		}
	}
	if !awaited || !idle {
		t.Errorf("effects while waiting: %#v", effs)
	}
	if len(startedOf(effs)) != 0 {
		t.Errorf("started %v while build waits", startedOf(effs))
	}
	d := h.core.Decide(h.st, core.HumanDecision{Step: core.Key("build"), Input: core.HumanInput{Approved: true, By: "alice", Input: map[string]any{"ticket": "OPS-1"}}}, h.now)
	h.events = append(h.events, d.Events...)
	h.effects = d.Effects
	h.expect("build", core.Completed, 0, 1)
	s = h.st.Steps[core.Key("build")]
	if s.Human == nil || s.Human.Input["ticket"] != "OPS-1" || s.Metrics["size"] != "3" || s.ExitCode == nil {
		t.Errorf("completed build: human %+v metrics %v exit %v", s.Human, s.Metrics, s.ExitCode)
	}
	h.ok("ship")
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish = %+v", f)
	}
	h.replayed()
}

// TestHumanAfterSessionRejected: a rejection fails the step, with the
// reason, as for a human step.
func TestHumanAfterSessionRejected(t *testing.T) {
	h := newCoreHarness(t, humanAfter, spec.Budgets{})
	built(h)
	h.decide(core.HumanDecision{Step: core.Key("build"), Input: core.HumanInput{Approved: false, By: "bob", Reason: "too big"}})
	s := h.st.Steps[core.Key("build")]
	if s.Status != core.Failed || !strings.Contains(deref(s.LastError), "rejected by bob: too big") {
		t.Fatalf("build: %s %q", s.Status, deref(s.LastError))
	}
	if f := h.finish(); f == nil || f.ExitCode != 1 {
		t.Fatalf("finish = %+v, want exit 1", f)
	}
	h.replayed()
}

// TestHumanAfterSessionRejectedLoopsBack: with a loop_back_to, a
// rejection loops back with the reason as feedback; the re-entered
// step runs its session again, then waits again.
func TestHumanAfterSessionRejectedLoopsBack(t *testing.T) {
	h := newCoreHarness(t, `
name: after
steps:
  - id: code
    run: code
  - id: build
    run: make
    loop_back_to: code
    human: {message: "ok?"}
`, spec.Budgets{})
	h.ok("code")
	h.ok("build")
	h.expect("build", core.WaitingOnHuman, 0, 1)
	h.decide(core.HumanDecision{Step: core.Key("build"), Input: core.HumanInput{Approved: false, By: "bob", Reason: "rename it"}})
	h.expect("code", core.Running, 1, 1)
	h.expect("build", core.Pending, 1, 0)
	if fb := h.st.Steps[core.Key("code")].Feedback; fb == nil || fb.Step != "build" || !strings.Contains(fb.Reason, "rejected by bob: rename it") {
		t.Errorf("code feedback = %+v", fb)
	}
	h.ok("code")
	h.expect("build", core.Running, 1, 1)
	h.ok("build")
	h.expect("build", core.WaitingOnHuman, 1, 1)
	h.decide(core.HumanDecision{Step: core.Key("build"), Input: core.HumanInput{Approved: true, By: "bob"}})
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish = %+v", f)
	}
	h.replayed()
}

// TestHumanAfterSessionFailedSessionAsksNobody: a session that fails
// (after its attempts) fails the step without asking a human, and a
// failed gate loops back without asking either.
func TestHumanAfterSessionFailedSessionAsksNobody(t *testing.T) {
	h := newCoreHarness(t, humanAfter, spec.Budgets{})
	h.fail("build", true)
	h.expect("build", core.Running, 0, 2)
	h.fail("build", true)
	h.expect("build", core.Failed, 0, 2)
	if h.st.Steps[core.Key("build")].ManualInputPath != nil {
		t.Errorf("a failed session asked a human")
	}
	h.replayed()
}

// TestHumanAfterSessionResumeWhileWaiting: a new core over a run that
// waits after a session waits again, without running the session.
func TestHumanAfterSessionResumeWhileWaiting(t *testing.T) {
	h := newCoreHarness(t, humanAfter, spec.Budgets{})
	built(h)
	h.core = core.NewCore(h.plan)
	effs := h.decide(core.Begin{})
	if len(startedOf(effs)) != 0 {
		t.Fatalf("resumed run started %v", startedOf(effs))
	}
	var awaited bool
	for _, e := range effs {
		_, ok := e.(core.AwaitHuman)
		awaited = awaited || ok
	}
	if !awaited {
		t.Fatalf("resumed run does not wait: %#v", effs)
	}
	h.decide(core.HumanDecision{Step: core.Key("build"), Input: core.HumanInput{Approved: true}})
	h.ok("ship")
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish = %+v", f)
	}
	h.replayed()
}

// TestHumanAfterSessionAutoApprove: a session step's auto_approve is
// evaluated by the driver once the session has succeeded (it may read
// the session's output): true approves asking nobody, false asks.
func TestHumanAfterSessionAutoApprove(t *testing.T) {
	const wf = `
name: after
steps:
  - id: build
    run: make
    human: {auto_approve: 'output == "tiny"'}
`
	for _, approve := range []bool{true, false} {
		h := newCoreHarness(t, wf, spec.Budgets{})
		// Not conditional: the session starts at once.
		h.expect("build", core.Running, 0, 1)
		h.decide(core.SessionDone{Step: core.Key("build"), Outcome: core.Outcome{Attempt: 1, ExitCode: &exitZero}, AutoApprove: &approve})
		if approve {
			h.expect("build", core.Completed, 0, 1)
			if in := h.st.Steps[core.Key("build")].Human; in == nil || in.By != "auto_approve" {
				t.Errorf("human = %+v", in)
			}
		} else {
			h.expect("build", core.WaitingOnHuman, 0, 1)
		}
		h.replayed()
	}
}

// TestEditTakesTheHumanAway: a run waits on a human; an accepted edit
// takes the step's human away. A new core over the edited workflow does
// not wait for ever: a step that ran no session runs as it is now, a
// session that ran before the approval stands.
func TestEditTakesTheHumanAway(t *testing.T) {
	planOf := func(src string) *core.Plan {
		t.Helper()
		plan, err := spec.NewPlan(loadWorkflow(t, src), spec.Budgets{}, func(*config.Limit) (int, error) { return 0, nil })
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	t.Run("a human step made a command", func(t *testing.T) {
		h := newCoreHarness(t, "name: e\nsteps:\n  - {id: gate, human: {message: go}}\n  - {id: ship, run: ship}\n", spec.Budgets{})
		h.expect("gate", core.WaitingOnHuman, 0, 1)
		h.plan = planOf("name: e\nsteps:\n  - {id: gate, run: check}\n  - {id: ship, run: ship}\n")
		h.core = core.NewCore(h.plan)
		effs := h.decide(core.Begin{})
		if started := startedOf(effs); len(started) != 1 || started[0] != "gate" {
			t.Fatalf("after the edit started %v, want gate; effects %#v", started, effs)
		}
		if e := h.st.Steps[core.Key("gate")].LastError; e == nil || !strings.Contains(*e, "no longer waits on a human") {
			t.Errorf("last_error %v", e)
		}
		h.ok("gate")
		h.ok("ship")
		if f := h.finish(); f == nil || f.Status != core.RunCompleted {
			t.Fatalf("finish = %+v", f)
		}
		h.replayed()
	})
	t.Run("an approval after a session removed", func(t *testing.T) {
		h := newCoreHarness(t, humanAfter, spec.Budgets{})
		built(h)
		h.expect("build", core.WaitingOnHuman, 0, 1)
		h.plan = planOf(strings.Replace(humanAfter, "    human: {message: \"ok?\"}\n", "", 1))
		h.core = core.NewCore(h.plan)
		effs := h.decide(core.Begin{})
		if started := startedOf(effs); len(started) != 1 || started[0] != "ship" {
			t.Fatalf("after the edit started %v, want ship (build's session stands)", started)
		}
		h.expect("build", core.Completed, 0, 1)
		h.ok("ship")
		if f := h.finish(); f == nil || f.Status != core.RunCompleted {
			t.Fatalf("finish = %+v", f)
		}
		h.replayed()
	})
}
