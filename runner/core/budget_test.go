package core_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
)

// spend ends a session of step reporting what it used.
func (h *coreHarness) spend(step string, cost float64, tokens int64) []core.Effect {
	return h.decide(core.SessionDone{Step: keytest.K(step), Outcome: core.Outcome{Attempt: h.st.Steps[keytest.K(step)].Attempts,
		Usage: &core.AgentUsage{CostUSD: cost, TokensIn: tokens, Sessions: 1}, AgentSession: "sess-" + step}, Gate: &core.GateFacts{}})
}

func budgetPlan(t *testing.T, run core.Budget, step core.Budget) *core.Plan {
	t.Helper()
	steps := []core.PlanStep{
		{ID: "a", Kind: core.KindAgent, MaxAttempts: 1, MaxIterations: 4},
		{ID: "b", Kind: core.KindAgent, Needs: []string{"a"}, Extra: &core.PlanExtra{Budget: step}, MaxAttempts: 1, MaxIterations: 4},
		{ID: "c", Kind: core.KindAgent, Needs: []string{"b"}, MaxAttempts: 1, MaxIterations: 4},
	}
	plan, err := core.NewPlan(steps, 1)
	if err != nil {
		t.Fatal(err)
	}
	plan.Budget = run
	return plan
}

// TestBudgetStopsTheRun: usage is summed per step and for the run; once
// the run's cost budget is reached no session starts, the run ends
// budget_exceeded (exit 6), and a new core over a higher budget goes
// on where it stopped.
func TestBudgetStopsTheRun(t *testing.T) {
	h := newPlanHarness(t, budgetPlan(t, core.Budget{CostUSD: 1}, core.Budget{}))
	h.spend("a", 0.6, 100)
	if got := h.started(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("started %v", got)
	}
	h.spend("b", 0.5, 50)
	if got := h.started(); len(got) != 0 {
		t.Fatalf("started %v after the budget ran out", got)
	}
	f := h.finish()
	if f == nil || f.ExitCode != 6 || f.Status != core.RunBudgetExceeded || !strings.Contains(f.Reason, "the run's cost_usd budget is spent (1.1 of 1)") ||
		!strings.Contains(f.Reason, "flow resume r1 --budget-cost N") {
		t.Fatalf("finish %+v", f)
	}
	if u := h.st.Usage; u == nil || u.Sessions != 2 || u.TokensIn != 150 || h.st.Steps[core.Key("b")].Usage.CostUSD != 0.5 || h.st.Steps[core.Key("b")].AgentSession != "sess-b" {
		t.Errorf("usage: run %+v, b %+v", u, h.st.Steps[core.Key("b")])
	}
	if h.st.Status != core.RunBudgetExceeded || h.st.Status.Terminal() {
		t.Errorf("status %s", h.st.Status)
	}
	h.replayed()

	// Resumed with the same budget: it stops again at once.
	h.core = core.NewCore(h.plan)
	h.decide(core.Begin{})
	if f := h.finish(); f == nil || f.ExitCode != 6 || len(h.started()) != 0 {
		t.Fatalf("resumed with the spent budget: %+v, started %v", f, h.started())
	}
	// With a higher one it goes on.
	h.plan.Budget.CostUSD = 5
	h.core = core.NewCore(h.plan)
	h.decide(core.Begin{})
	if got := h.started(); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("resumed with a higher budget: started %v", got)
	}
	h.spend("c", 0.1, 1)
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish %+v", f)
	}
	h.replayed()
}

// TestStepBudget: a step's budget counts that step's sessions only; a
// body step's counts all its items' instances together.
func TestStepBudget(t *testing.T) {
	h := newPlanHarness(t, budgetPlan(t, core.Budget{}, core.Budget{Sessions: 1}))
	h.spend("a", 0, 0)
	h.spend("b", 0, 0)
	if f := h.finish(); f == nil || f.ExitCode != 6 || !strings.Contains(f.Reason, "step b's sessions budget is spent (1 of 1)") {
		t.Fatalf("finish %+v", f)
	}

	plan := loopPlan(t, 2, false)
	plan.Step("implement").Extra = &core.PlanExtra{Budget: core.Budget{Tokens: 300}}
	h = newPlanHarness(t, plan)
	h.ok("breakdown")
	h.items("stories", "a", "b", "c")
	h.spend(inst("stories", "a", "implement"), 0, 200)
	h.spend(inst("stories", "b", "implement"), 0, 200)
	if f := h.finish(); f != nil {
		t.Fatalf("the run ended with sessions in flight: %+v", f)
	}
	// b's review did not start; a's, in flight, finishes.
	h.expect(inst("stories", "b", "review"), core.Pending, 0, 0)
	h.ok(inst("stories", "a", "review"))
	if got := h.started(); len(got) != 0 {
		t.Fatalf("started %v after implement's budget ran out", got)
	}
	if f := h.finish(); f == nil || f.ExitCode != 6 || !strings.Contains(f.Reason, "step implement's tokens budget is spent (400 of 300)") {
		t.Fatalf("finish %+v", f)
	}
	h.replayed()
}
