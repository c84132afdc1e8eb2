package local

import (
	"slices"
	"strings"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
)

// RetryPlan says what flow retry will do to a failed run (GitHub
// Actions' "re-run failed jobs", Argo's retry): every FAILED step, and
// every step that depends on one, goes back to PENDING with fresh
// attempts and its iterations kept; everything else is kept.
type RetryPlan struct {
	// Failed are the steps that failed; Rerun every step that runs
	// again (put back to PENDING) or runs for the first time (never
	// started), in workflow order; Kept the finished steps kept as they
	// are.
	Failed []string `json:"failed"`
	Rerun  []string `json:"rerun"`
	// Reset are the steps of Rerun that go back to PENDING: Rerun
	// without those that never started.
	Reset []string `json:"-"`
	Kept  []string `json:"kept"`
	// Capped are the failed steps that failed at an iteration budget:
	// they run again only with a higher one (flow retry --max-iterations).
	Capped []string `json:"capped,omitempty"`
}

// PlanRetry computes the plan of retrying the failed run st of wf.
func PlanRetry(wf *config.Workflow, st *core.State) RetryPlan {
	p := RetryPlan{Failed: []string{}, Rerun: []string{}, Kept: []string{}}
	rerun := map[string]bool{}
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		if s == nil || s.Status != core.Failed {
			continue
		}
		p.Failed = append(p.Failed, id)
		if strings.HasPrefix(deref(s.LastError), "max iterations reached") {
			p.Capped = append(p.Capped, id)
		}
		rerun[id] = true
		if k, inst := core.SplitKey(id); inst {
			// An instance runs again with what follows it in its item,
			// and its loop with what follows the loop.
			for _, d := range bodyDownstream(wf, k.Loop, k.Step) {
				rerun[core.Instance(k.Loop, k.Item, d)] = true
			}
			id = k.Loop
		}
		if wf.Step(id) != nil {
			for _, d := range wf.Downstream(id) {
				rerun[d] = true
			}
		}
	}
	for _, id := range st.StepOrder {
		switch {
		case rerun[id]:
			p.Rerun = append(p.Rerun, id)
			p.Reset = append(p.Reset, id)
		case st.Steps[id] != nil && st.Steps[id].Status == core.Pending:
			// Never started (after a failed step, or a failed item): it
			// runs as it would have.
			p.Rerun = append(p.Rerun, id)
		case st.Steps[id] != nil && st.Steps[id].Status.Done():
			p.Kept = append(p.Kept, id)
		}
	}
	slices.Sort(p.Capped)
	return p
}

// bodyDownstream lists the steps of loop's body that need step, directly
// or not, in body order.
func bodyDownstream(wf *config.Workflow, loop, step string) []string {
	l := wf.Step(loop)
	if l == nil || l.ForEach == nil {
		return nil
	}
	reached := map[string]bool{step: true}
	var out []string
	for _, b := range l.ForEach.Body {
		for _, n := range b.Needs {
			if reached[n] && !reached[b.ID] {
				reached[b.ID] = true
				out = append(out, b.ID)
			}
		}
	}
	return out
}
