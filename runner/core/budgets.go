package core

import "slices"

// A restart at a step (--start-at-step) and a retry reopen loops: a
// gate step they run again loops back to its target with what is left
// of the target's iteration budget. They restart those budgets: the
// target's iteration_base becomes its iteration_count, and its gate
// counts iterations from there (iteration_count - iteration_base), so
// that a loop restarted after three of its four iterations has four
// again rather than one. The iterations themselves are kept: logs and
// the record still number them from the run's start.

// LoopBudget is a loop whose iteration budget a restart or a retry
// restarts: the gate step that runs again, its loop-back target, and
// the iterations the target had used before.
type LoopBudget struct {
	Gate   StepKey `json:"gate"`
	Target StepKey `json:"target"`
	Used   int     `json:"used"`
}

// ReopenedLoops lists the loops a restart or a retry that resets the
// steps of reset reopens, in the order of reset: each gate step in
// reset with a loop-back (a body step's target is its item's instance),
// whose target has used iterations that the restart keeps — a target
// outside reset, or, with keep (a retry keeps the iterations of the
// steps it resets), any target. A target whose budget already starts
// at its count is not listed.
func ReopenedLoops(sh Shape, st *State, reset []StepKey, keep bool) []LoopBudget {
	var out []LoopBudget
	seen := map[StepKey]bool{}
	for _, id := range reset {
		target := sh.LoopTarget(id.Step)
		if target == "" {
			continue
		}
		t := Key(target)
		if loop, _ := sh.StepLoop(target); id.IsInstance() && loop == id.Loop {
			t = Instance(id.Loop, id.Item, target)
		}
		ts := st.Steps[t]
		if ts == nil || seen[t] || !keep && slices.Contains(reset, t) || ts.IterationCount == ts.IterationBase {
			continue
		}
		seen[t] = true
		out = append(out, LoopBudget{Gate: id, Target: t, Used: ts.IterationCount - ts.IterationBase})
	}
	return out
}

// restartBudgets sets the iteration base of each listed target to its
// iteration count: its budget starts afresh.
func restartBudgets(s *State, targets []StepKey) {
	for _, id := range targets {
		if st := s.Steps[id]; st != nil {
			st.IterationBase = st.IterationCount
		}
	}
}

// targetsOf lists the targets of loops.
func targetsOf(loops []LoopBudget) []StepKey {
	var ids []StepKey
	for _, l := range loops {
		ids = append(ids, l.Target)
	}
	return ids
}
