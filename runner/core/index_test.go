package core

import (
	"fmt"
	"testing"
)

// TestStepIndex: every step is found at its place, an id given twice
// is refused and keeps the first, and an id of no step is not found,
// whatever the number of steps (the table's size and its wrapping
// probes).
func TestStepIndex(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 100, 5000} {
		steps := make([]PlanStep, n, n+1)
		for i := range steps {
			steps[i].ID = fmt.Sprintf("s%d", i)
		}
		x := newStepIndex(len(steps) + 1)
		for i := range steps {
			if !x.add(steps, i) {
				t.Fatalf("n=%d: %s refused", n, steps[i].ID)
			}
		}
		if n > 0 {
			steps = append(steps, PlanStep{ID: "s0"})
			if x.add(steps, n) {
				t.Errorf("n=%d: a second s0 added", n)
			}
		}
		for i := 0; i < n; i++ {
			if j, ok := x.find(steps, fmt.Sprintf("s%d", i)); !ok || j != i {
				t.Errorf("n=%d: s%d found at %d, %v", n, i, j, ok)
			}
		}
		for _, id := range []string{"", "x", fmt.Sprintf("s%d", n+1)} {
			if j, ok := x.find(steps, id); ok {
				t.Errorf("n=%d: %q found at %d", n, id, j)
			}
		}
	}
	var none stepIndex
	if _, ok := none.find(nil, "a"); ok {
		t.Errorf("the zero index finds a step")
	}
}
