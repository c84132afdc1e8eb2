package config

import (
	"hash/maphash"
	"math/bits"
)

// idIndex finds the top level's steps by id: an open-addressing table
// of places in Steps, 4 bytes a slot at most half full, where a
// map[string]int costs about 40 bytes a step (the core indexes a plan
// the same way). Of steps with the same id, the first is found.
type idIndex struct {
	steps []*Step
	seed  maphash.Seed
	// slots holds a step's place plus one, or 0 for an empty slot; its
	// length is a power of two.
	slots []int32
}

// newIDIndex indexes steps.
func newIDIndex(steps []*Step) *idIndex {
	x := &idIndex{steps: steps, seed: maphash.MakeSeed(), slots: make([]int32, 1<<bits.Len(uint(2*len(steps))))}
	mask := uint64(len(x.slots) - 1)
	for i, s := range steps {
		for h := maphash.String(x.seed, s.ID) & mask; ; h = (h + 1) & mask {
			if n := x.slots[h]; n == 0 {
				x.slots[h] = int32(i + 1)
				break
			} else if steps[n-1].ID == s.ID {
				break
			}
		}
	}
	return x
}

// find returns the place in Steps of the first step with the id, and
// whether there is one.
func (x *idIndex) find(id string) (int, bool) {
	mask := uint64(len(x.slots) - 1)
	for h := maphash.String(x.seed, id) & mask; ; h = (h + 1) & mask {
		switch n := x.slots[h]; {
		case n == 0:
			return 0, false
		case x.steps[n-1].ID == id:
			return int(n - 1), true
		}
	}
}
