package config

import (
	"math/rand/v2"
	"testing"
)

// TestReachOrder: the walk bounded by the steps' order answers as the
// plain walk does, on random graphs of needs, the order of the file
// unrelated to the order of the needs.
func TestReachOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := 1 + rng.IntN(30)
		place := rng.Perm(n) // a node depends only on nodes placed before it
		deps := make([][]int, n)
		for i := range n {
			for j := range n {
				if place[j] < place[i] && rng.IntN(4) == 0 {
					deps[i] = append(deps[i], j)
				}
			}
		}
		bounded := &reach{deps: deps, order: topoOrder(deps), mark: make([]int, n)}
		plain := &reach{deps: deps, mark: make([]int, n)}
		if bounded.order == nil {
			t.Fatalf("round %d: no order for a graph without a cycle", round)
		}
		for i := range n {
			for j := range n {
				if got, want := bounded.needs(i, j), plain.needs(i, j); got != want {
					t.Fatalf("round %d: needs(%d, %d) = %v, want %v (deps %v)", round, i, j, got, want, deps)
				}
			}
		}
	}
	if topoOrder([][]int{{1}, {0}}) != nil {
		t.Error("an order for a cycle")
	}
}
