package core

import (
	"maps"
	"slices"
)

// Carry is the core's bookkeeping beyond the durable state: what it
// has asked the driver for and not yet heard back about, and how the
// run is being held. A driver that moves a run to a fresh process in
// the middle of a decision sequence — Temporal's continue-as-new, where
// Begin would reconcile every running step — carries it beside the
// state and gives both to Restore, so that the restored core decides
// exactly as the one it replaces would have. The driver must have
// nothing of the core's in flight when it takes a Carry, beyond the
// inputs it carries along too (sessions and timers ended, their inputs
// not yet decided).
type Carry struct {
	Evaluating   []StepKey           `json:"evaluating,omitempty"`
	Preparing    []StepKey           `json:"preparing,omitempty"`
	Waiting      []StepKey           `json:"waiting,omitempty"`
	Expanding    []StepKey           `json:"expanding,omitempty"`
	Cleaning     bool                `json:"cleaning,omitempty"`
	HaltCode     int                 `json:"halt_code,omitempty"`
	HaltReason   string              `json:"halt_reason,omitempty"`
	Control      ControlState        `json:"control,omitempty"`
	OnceUsed     bool                `json:"once_used,omitempty"`
	OnceStep     StepKey             `json:"once_step,omitzero"`
	Idle         bool                `json:"idle,omitempty"`
	Finished     bool                `json:"finished,omitempty"`
	Approvals    map[StepKey]Outcome `json:"approvals,omitempty"`
	AutoApproved []StepKey           `json:"auto_approved,omitempty"`
	Gates        map[string]bool     `json:"gates,omitempty"`
	Gated        map[string][]string `json:"gated,omitempty"`
}

// Carry returns the core's bookkeeping, for Restore.
func (c *Core) Carry() Carry {
	keys := func(m map[StepKey]bool) []StepKey {
		out := make([]StepKey, 0, len(m))
		for k, v := range m {
			if v {
				out = append(out, k)
			}
		}
		slices.SortFunc(out, CompareKeys)
		return out
	}
	return Carry{
		Evaluating: keys(c.evaluating), Preparing: keys(c.preparing), Waiting: keys(c.waiting), Expanding: keys(c.expanding),
		Cleaning: c.cleaning, HaltCode: c.haltCode, HaltReason: c.haltReason, Control: c.control,
		OnceUsed: c.onceUsed, OnceStep: c.onceStep, Idle: c.idle, Finished: c.finished,
		Approvals: maps.Clone(c.approvals), AutoApproved: keys(c.autoApproved),
		Gates: maps.Clone(c.gates), Gated: maps.Clone(c.gated),
	}
}

// Restore returns a core for plan that takes over the run st from the
// core whose Carry cr is, without a Begin: nothing is reconciled, and
// the steps running in st are the sessions whose ends the driver still
// has to give it.
func Restore(plan *Plan, st *State, cr Carry) *Core {
	c := NewCore(plan)
	set := func(m map[StepKey]bool, ids []StepKey) {
		for _, id := range ids {
			m[id] = true
		}
	}
	set(c.evaluating, cr.Evaluating)
	set(c.preparing, cr.Preparing)
	set(c.waiting, cr.Waiting)
	set(c.expanding, cr.Expanding)
	set(c.autoApproved, cr.AutoApproved)
	c.cleaning, c.haltCode, c.haltReason = cr.Cleaning, cr.HaltCode, cr.HaltReason
	c.control = cr.Control
	if c.control == "" {
		c.control = Continuous
	}
	c.onceUsed, c.onceStep, c.idle, c.finished = cr.OnceUsed, cr.OnceStep, cr.Idle, cr.Finished
	if cr.Approvals != nil {
		c.approvals = maps.Clone(cr.Approvals)
	}
	c.gates, c.gated = maps.Clone(cr.Gates), maps.Clone(cr.Gated)
	for id, s := range st.Steps {
		if s.Status == Running {
			if id.IsInstance() {
				c.instRunning++
			} else {
				c.running++
			}
		}
	}
	for _, id := range st.StepOrder {
		if s := st.Steps[id]; s != nil && s.WaitingFor != nil {
			c.waiters[*s.WaitingFor] = append(c.waiters[*s.WaitingFor], id)
		}
	}
	c.markAll()
	return c
}
