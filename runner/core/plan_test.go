package core

import "testing"

// TestPlanSharesOptions: NewPlan gives every step options, one
// PlanOptions to the steps whose options are equal, and keeps what each
// step set.
func TestPlanSharesOptions(t *testing.T) {
	steps := []PlanStep{
		{ID: "a", PlanOptions: &PlanOptions{MaxAttempts: 1, MaxIterations: 5}},
		{ID: "b", Needs: []string{"a"}, PlanOptions: &PlanOptions{MaxAttempts: 1, MaxIterations: 5}},
		{ID: "c", Needs: []string{"b"}, PlanOptions: &PlanOptions{MaxAttempts: 1, MaxIterations: 5, LoopTarget: "a", HasGate: true}},
		{ID: "d", Needs: []string{"c"}},
		{ID: "e", Needs: []string{"d"}},
	}
	p, err := NewPlan(steps, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c, d, e := p.Step("a"), p.Step("b"), p.Step("c"), p.Step("d"), p.Step("e")
	if a.PlanOptions != b.PlanOptions || d.PlanOptions != e.PlanOptions {
		t.Error("steps with equal options do not share them")
	}
	if c.PlanOptions == a.PlanOptions || c.LoopTarget != "a" || !c.HasGate || a.LoopTarget != "" || a.MaxIterations != 5 {
		t.Errorf("options mixed up: a %+v, c %+v", *a.PlanOptions, *c.PlanOptions)
	}
	if d.PlanOptions == nil || *d.PlanOptions != (PlanOptions{}) {
		t.Errorf("a step without options: %+v", d.PlanOptions)
	}
}
