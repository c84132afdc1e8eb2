package core_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/spec"
)

const gatedFlow = `
name: gated
max_parallel: 2
steps:
  - id: build
    run: build
  - id: deploy
    run: deploy
    external_gates: [ci, window]
  - id: notify
    run: notify
    needs: [build]
`

// TestGatesKeepAStepBack: a ready step whose gates are closed waits
// (waiting_gates, PENDING) while the rest of the run goes on; the run
// with nothing else to do is idle, not failed; the step starts once
// every gate is open, and waiting_gates is cleared.
func TestGatesKeepAStepBack(t *testing.T) {
	h := newCoreHarness(t, gatedFlow, spec.Budgets{})
	h.decide(core.GatesChanged{Gates: map[string]bool{"ci": true}})
	h.ok("build")
	if got := h.started(); !slices.Equal(got, []string{"notify"}) {
		t.Fatalf("started %v, want [notify] (deploy waits for window)", got)
	}
	h.expect("deploy", core.Pending, 0, 0)
	if g := h.st.Steps[core.Key("deploy")].WaitingGates; !slices.Equal(g, []string{"window"}) {
		t.Errorf("deploy waiting_gates = %v, want [window]", g)
	}
	h.ok("notify")
	if f := h.finish(); f != nil {
		t.Fatalf("the run finished (%+v) while deploy waits for a gate", *f)
	}
	var idle *core.Idle
	for _, e := range h.effects {
		if i, ok := e.(core.Idle); ok {
			idle = &i
		}
	}
	if idle == nil || !slices.Equal(idle.Gated, keytest.Keys("deploy")) {
		t.Fatalf("idle = %+v, want Gated [deploy]", idle)
	}
	// A change that leaves a gate closed starts nothing and records
	// nothing new.
	n := len(h.events)
	h.decide(core.GatesChanged{Gates: map[string]bool{"ci": true, "window": false}})
	if got := h.started(); len(got) != 0 {
		t.Fatalf("started %v with window closed", got)
	}
	for _, e := range h.events[n:] {
		if e.Type == core.EvGatesWaiting {
			t.Errorf("gates_waiting recorded again for the same gates")
		}
	}
	h.decide(core.GatesChanged{Gates: map[string]bool{"ci": true, "window": true}})
	if got := h.started(); !slices.Equal(got, []string{"deploy"}) {
		t.Fatalf("started %v once both gates are open, want [deploy]", got)
	}
	if g := h.st.Steps[core.Key("deploy")].WaitingGates; g != nil {
		t.Errorf("waiting_gates = %v once started, want none", g)
	}
	h.ok("deploy")
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish = %+v, want completed", f)
	}
	h.replayed()
}

// TestGatesAtBegin: gates given when the run begins count from the
// first schedule, and a gate that closes again does not stop a step
// already started.
func TestGatesAtBegin(t *testing.T) {
	h := newCoreHarness(t, gatedFlow, spec.Budgets{})
	h.decide(core.Begin{Gates: map[string]bool{"ci": true, "window": true}})
	h.ok("build")
	if got := h.started(); !slices.Contains(got, "deploy") {
		t.Fatalf("started %v, want deploy among them", got)
	}
	h.decide(core.GatesChanged{Gates: map[string]bool{}})
	h.expect("deploy", core.Running, 0, 1)
}

// TestGatesWaitingReport: the run's waiting note names the step and
// the closed gates.
func TestGatesWaitingReport(t *testing.T) {
	h := newCoreHarness(t, gatedFlow, spec.Budgets{})
	h.ok("build")
	h.ok("notify")
	var msg string
	for _, e := range h.events {
		if e.Type == core.EvRunWaiting {
			msg = string(e.Data)
		}
	}
	if !strings.Contains(msg, "deploy (ci, window)") {
		t.Errorf("run_waiting = %s, want it to name deploy (ci, window)", msg)
	}
}
