package core

import "slices"

// A loop-back from an item of a loop, in a workflow that follows
// agent_orchestrator's contract (Plan.ResumeItems), resumes at that
// item: the loop of the failed gate, and the target when it is a loop,
// keep the items before it as they are and run the others again,
// rather than running every item again as flow's own format does.

// ItemResume is, in a GateFailure, the loops that go on at an item
// rather than run all their items again.
type ItemResume struct {
	// From is the index of the first item run again.
	From int `json:"from"`
	// Loops are the loop steps that resume; each stays RUNNING.
	Loops []string `json:"loops"`
}

// from is the index of the first item of loop that runs again: From
// for a loop that resumes, 0 for any other.
func (r *ItemResume) from(loop string) int {
	if r == nil || !slices.Contains(r.Loops, loop) {
		return 0
	}
	return r.From
}

// itemResume says which loops a loop-back from instance gk resumes at
// its item, or nil when none does.
func (c *Core) itemResume(st *State, gk StepKey, target StepKey, reset []StepKey) *ItemResume {
	if !c.plan.ResumeItems {
		return nil
	}
	ls := st.Steps[Key(gk.Loop)]
	if ls == nil {
		return nil
	}
	from := slices.IndexFunc(ls.Items, func(it Item) bool { return it.Key == gk.Item })
	if from < 0 {
		return nil
	}
	r := &ItemResume{From: from}
	for _, id := range []StepKey{target, Key(gk.Loop)} {
		if id.IsInstance() {
			continue
		}
		ps, s := c.plan.Step(id.Step), st.Steps[id]
		if ps != nil && ps.ForEach != nil && s != nil && s.LoopIndex != nil && slices.Contains(reset, id) && !slices.Contains(r.Loops, id.Step) {
			r.Loops = append(r.Loops, id.Step)
		}
	}
	if len(r.Loops) == 0 {
		return nil
	}
	return r
}

// instancesFrom returns the keys of the instances of a loop step's
// items from index from on.
func (c *Core) instancesFrom(st *State, loop string, from int) []StepKey {
	ps := c.plan.Step(loop)
	ls := st.Steps[Key(loop)]
	if ps == nil || ps.ForEach == nil || ls == nil {
		return nil
	}
	var out []StepKey
	for i, it := range ls.Items {
		if i < from {
			continue
		}
		for _, b := range ps.ForEach.Body {
			if id := Instance(loop, it.Key, b); st.Steps[id] != nil {
				out = append(out, id)
			}
		}
	}
	return out
}

// resumeLoop goes on with a loop step a loop-back reset, from item
// from: RUNNING, its attempts as they were, the items before from as
// they are and the others PENDING.
func resumeLoop(st *StepState, from, attempts int) {
	st.Status, st.Attempts, st.EndedAt = Running, attempts, nil
	done := 0
	for i := range st.Items {
		it := &st.Items[i]
		if i >= from {
			it.Status, it.Error = Pending, ""
		}
		if it.Status.finished() {
			done++
		}
	}
	st.LoopIndex = intp(done)
}
