package core

import (
	"hash/maphash"
	"math/bits"
)

// stepIndex finds a plan's steps by id: an open-addressing table of step
// numbers, 4 bytes a slot at most half full, where a map[string]int
// costs about 40 bytes a step. The ids themselves are the steps'.
type stepIndex struct {
	seed maphash.Seed
	// slots holds a step's number plus one, or 0 for an empty slot; its
	// length is a power of two.
	slots []int32
}

// newStepIndex returns an empty index with room for n steps.
func newStepIndex(n int) stepIndex {
	size := 1 << bits.Len(uint(2*n))
	return stepIndex{seed: maphash.MakeSeed(), slots: make([]int32, size)}
}

// find returns the number of the step of steps with the id, and whether
// there is one.
func (x *stepIndex) find(steps []PlanStep, id string) (int, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(x.slots) - 1)
	for h := maphash.String(x.seed, id) & mask; ; h = (h + 1) & mask {
		switch n := x.slots[h]; {
		case n == 0:
			return 0, false
		case steps[n-1].ID == id:
			return int(n - 1), true
		}
	}
}

// add adds step i of steps, unless a step with its id is there already;
// it reports whether it added it. The index must have been made with
// room for every step added.
func (x *stepIndex) add(steps []PlanStep, i int) bool {
	id := steps[i].ID
	mask := uint64(len(x.slots) - 1)
	for h := maphash.String(x.seed, id) & mask; ; h = (h + 1) & mask {
		switch n := x.slots[h]; {
		case n == 0:
			x.slots[h] = int32(i + 1)
			return true
		case steps[n-1].ID == id:
			return false
		}
	}
}
