package core

import (
	"slices"
	"strings"
)

// The gates of a gate-state file (docs/concepts.md, "Gates of a gate-state file"): names an outside process
// opens and closes, such as a CI check or a release window. A step that
// names gates starts only once every one of them is open; until then it
// is PENDING with waiting_gates, and a run with nothing else to do waits
// (Idle with Gated) rather than fail.

// GatesChanged reports the gates of the gate-state file as they are
// now, and whether each is open; a gate not named is closed.
type GatesChanged struct {
	Gates map[string]bool
}

// GatesWaiting is the data of EvGatesWaiting: the gates, still closed,
// that keep a step from starting.
type GatesWaiting struct {
	Gates []string `json:"gates"`
}

// closedGates lists the gates of ps that are not open.
func (c *Core) closedGates(ps *PlanStep) []string {
	var closed []string
	for _, g := range ps.gates() {
		if !c.gates[g] {
			closed = append(closed, g)
		}
	}
	return closed
}

// gateClosed reports whether a ready step is kept back by closed gates,
// and records it as waiting for them when it is not already.
func (c *Core) gateClosed(x *decider, ps *PlanStep) bool {
	if len(ps.gates()) == 0 {
		return false
	}
	closed := c.closedGates(ps)
	if len(closed) == 0 {
		delete(c.gated, ps.ID)
		return false
	}
	if c.gated == nil {
		c.gated = map[string][]string{}
	}
	c.gated[ps.ID] = closed
	if s := x.st.Steps[Key(ps.ID)]; s != nil && !slices.Equal(s.WaitingGates, closed) {
		x.emit(EvGatesWaiting, Key(ps.ID), GatesWaiting{Gates: closed})
	}
	return true
}

// gatesChanged takes the gates as they are now: the steps kept back by
// gates are looked at again.
func (c *Core) gatesChanged(in GatesChanged) {
	c.gates = in.Gates
	for id := range c.gated {
		c.mark(Key(id))
	}
	clear(c.gated)
	c.idle = false
}

// gatedSteps lists the steps kept back by gates, in plan order.
func (c *Core) gatedSteps() []StepKey {
	var out []StepKey
	for _, ps := range c.plan.Steps {
		if _, ok := c.gated[ps.ID]; ok {
			out = append(out, Key(ps.ID))
		}
	}
	return out
}

// gatesReport says which steps wait for which gates: "deploy (ci,
// review)".
func (c *Core) gatesReport(*State) string {
	var parts []string
	for _, id := range c.gatedSteps() {
		parts = append(parts, id.String()+" ("+strings.Join(c.gated[id.Step], ", ")+")")
	}
	return strings.Join(parts, "; ")
}
