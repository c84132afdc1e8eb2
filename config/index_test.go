package config

import (
	"fmt"
	"testing"
)

// TestIDIndex: every id is found at the place of its first step,
// whatever the order and number of steps; an id of no step is not.
func TestIDIndex(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 100} {
		var steps []*Step
		for i := range n {
			steps = append(steps, &Step{ID: fmt.Sprintf("s%d", (i*37)%n)})
		}
		// Twice each id: the first is found.
		dup := append(steps[:len(steps):len(steps)], steps...)
		x := newIDIndex(dup)
		for i, s := range steps {
			if j, ok := x.find(s.ID); !ok || j != i {
				t.Errorf("n=%d: find(%s) = %d, %v; want %d", n, s.ID, j, ok, i)
			}
		}
		for _, id := range []string{"", "s", fmt.Sprintf("s%d", n), "zz"} {
			if j, ok := x.find(id); ok {
				t.Errorf("n=%d: find(%q) = %d, want none", n, id, j)
			}
		}
	}
}
