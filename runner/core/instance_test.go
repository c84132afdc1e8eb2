package core_test

import (
	"slices"
	"testing"
	"time"

	"github.com/flow-run/flow/runner/core"
)

// TestInstances: a plan of step instances, built by hand (no loop syntax
// yet), runs through the core like plain steps: their keys flow through
// the state, the events, the effects and the replay.
func TestInstances(t *testing.T) {
	keys := []core.StepKey{
		core.Key("breakdown"),
		{Loop: "stories", Item: "s1", Step: "code"},
		{Loop: "stories", Item: "s1", Step: "review"},
		{Loop: "stories", Item: "s2", Step: "code"},
		{Loop: "stories", Item: "s2", Step: "review"},
		core.Key("integrate"),
	}
	id := func(i int) string { return keys[i].String() }
	steps := []core.PlanStep{
		{ID: id(0), Kind: core.KindCommand, MaxAttempts: 1, MaxIterations: 4},
		{ID: id(1), Kind: core.KindAgent, Needs: []string{id(0)}, MaxAttempts: 1, MaxIterations: 4},
		{ID: id(2), Kind: core.KindAgent, Needs: []string{id(1)}, LoopTarget: id(1), HasGate: true, MaxAttempts: 1, MaxIterations: 4},
		{ID: id(3), Kind: core.KindAgent, Needs: []string{id(0)}, MaxAttempts: 1, MaxIterations: 4},
		{ID: id(4), Kind: core.KindAgent, Needs: []string{id(3)}, LoopTarget: id(3), HasGate: true, MaxAttempts: 1, MaxIterations: 4},
		{ID: id(5), Kind: core.KindCommand, Needs: []string{id(2), id(4)}, MaxAttempts: 1, MaxIterations: 4},
	}
	plan, err := core.NewPlan(steps, 2)
	if err != nil {
		t.Fatal(err)
	}
	if d := plan.Downstream(id(1)); !slices.Equal(d, []string{id(2), id(5)}) {
		t.Errorf("a loop-back to %s resets %v", id(1), d)
	}
	c := core.NewCore(plan)
	st := &core.State{}
	now := time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)
	var events []core.Event
	apply := func(d core.Decision) []core.Effect {
		events = append(events, d.Events...)
		return d.Effects
	}
	created := core.NewEvent(now, core.EvRunCreated, "", core.RunCreated{RunID: "r1", WorkflowName: "w", Steps: plan.IDs()})
	if err := core.Apply(st, created); err != nil {
		t.Fatal(err)
	}
	events = append(events, created)
	started := func(effs []core.Effect) []string {
		var out []string
		for _, e := range effs {
			if s, ok := e.(core.StartSession); ok {
				out = append(out, s.Step)
			}
		}
		return out
	}
	effs := apply(c.Decide(st, core.Begin{}, now))
	if got := started(effs); !slices.Equal(got, []string{id(0)}) {
		t.Fatalf("started %v", got)
	}
	// A review passes with a final PASS line, and fails with gate.pass
	// false.
	done := func(step string, gate *core.GateFacts) []core.Effect {
		in := core.SessionDone{Step: step, Outcome: core.Outcome{Attempt: st.Steps[step].Attempts}, Gate: gate}
		if gate != nil && gate.Pass == nil {
			in.Facts.Verdict = core.VerdictPass
		}
		return apply(c.Decide(st, in, now))
	}
	// The items run side by side; one item's review fails its gate and
	// loops back within that item only.
	if got := started(done(id(0), nil)); !slices.Equal(got, []string{id(1), id(3)}) {
		t.Fatalf("after breakdown, started %v", got)
	}
	done(id(1), nil)
	done(id(3), nil)
	effs = done(id(2), &core.GateFacts{Pass: &core.ExprValue{Src: "signals.PASS"}})
	if s := st.Steps[id(1)]; s.IterationCount != 1 || s.Feedback == nil || s.Feedback.Step != id(2) {
		t.Errorf("%s after its item's review failed: %+v", id(1), s)
	}
	if s := st.Steps[id(3)]; s.IterationCount != 0 || s.Status != core.Completed {
		t.Errorf("the other item was touched: %+v", s)
	}
	done(id(4), &core.GateFacts{})
	done(id(1), nil)
	if got := started(done(id(2), &core.GateFacts{})); !slices.Equal(got, []string{id(5)}) {
		t.Fatalf("integrate did not start: %v", got)
	}
	effs = done(id(5), nil)
	var fin *core.Finish
	for _, e := range effs {
		if f, ok := e.(core.Finish); ok {
			fin = &f
		}
	}
	if fin == nil || fin.ExitCode != 0 {
		t.Fatalf("finish = %+v", fin)
	}
	// Every instance's events name it by its key, and a replay gives the
	// same state.
	seen := map[string]bool{}
	for _, e := range events {
		seen[e.Step] = true
	}
	for _, k := range keys {
		if !seen[k.String()] {
			t.Errorf("no event names %s", k)
		}
	}
	replay := &core.State{}
	for i, e := range events {
		e.Seq = int64(i + 1)
		if err := core.Apply(replay, e); err != nil {
			t.Fatal(err)
		}
	}
	replay.Seq, st.Seq = 0, 0
	if a, b := mustJSON(t, replay), mustJSON(t, st); a != b {
		t.Errorf("replay differs:\n%s\n%s", a, b)
	}
}
