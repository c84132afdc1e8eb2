package spec

import (
	"path/filepath"
	"slices"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
)

// StartAtPlan says what flow run --start-at-step will do to a run.
type StartAtPlan struct {
	Step core.StepKey
	// Kept are the finished steps kept as they are; Rerun the steps
	// reset to PENDING.
	Kept  []core.StepKey
	Rerun []core.StepKey
	// Missing lists kept steps' declared artifacts that are not in the
	// repository.
	Missing []MissingArtifact
	// Budgets are the loops the restart reopens, whose iteration
	// budgets start afresh (core.ReopenedLoops).
	Budgets []core.LoopBudget
}

// MissingArtifact is a declared artifact of a kept step that is gone.
type MissingArtifact struct {
	Step core.StepKey
	Path string
}

// PlanStartAt computes the plan of restarting st at step: a step of
// the top level (a loop step runs all its items again, its list
// evaluated afresh), or one item's instance of a body step
// ("stories[login].review": that item runs again from there, and what
// follows the loop runs again after it).
func PlanStartAt(fsys afero.Fs, wf *config.Workflow, st *core.State, repo string, step core.StepKey) (StartAtPlan, error) {
	reset, err := core.StartAtReset(wf, st, step)
	if err != nil {
		return StartAtPlan{}, err
	}
	p := StartAtPlan{Step: step, Rerun: reset, Budgets: core.ReopenedLoops(wf, st, reset, false)}
	if step.IsInstance() {
		// The instance's loop runs again for its item.
		p.Rerun = append([]core.StepKey{core.Key(step.Loop)}, p.Rerun...)
	}
	rerun := make(map[core.StepKey]bool, len(p.Rerun))
	for _, id := range p.Rerun {
		rerun[id] = true
	}
	for _, id := range st.StepOrder {
		if rerun[id] {
			continue
		}
		ss := st.Steps[id]
		s := wf.Step(id.Step)
		if ss == nil || s == nil || !ss.Status.Done() {
			continue
		}
		p.Kept = append(p.Kept, id)
		arts := slices.Clone(ss.Artifacts)
		for _, a := range s.Artifacts {
			if v, ok := a.Compiled().Static(); ok && !slices.Contains(arts, v) {
				arts = append(arts, v)
			}
		}
		if ss.Status != core.Completed {
			continue
		}
		for _, a := range arts {
			path := a
			if !filepath.IsAbs(path) {
				path = filepath.Join(repo, a)
			}
			if ok, _ := afero.Exists(fsys, path); !ok {
				p.Missing = append(p.Missing, MissingArtifact{Step: id, Path: a})
			}
		}
	}
	return p, nil
}
