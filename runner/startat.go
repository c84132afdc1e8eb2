package runner

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

// StartAtPlan says what flow run --start-at-step will do to a run.
type StartAtPlan struct {
	Step string
	// Kept are the finished steps kept as they are; Rerun the steps
	// reset to PENDING.
	Kept  []string
	Rerun []string
	// Missing lists kept steps' declared artifacts that are not in the
	// repository.
	Missing []MissingArtifact
}

// MissingArtifact is a declared artifact of a kept step that is gone.
type MissingArtifact struct {
	Step string
	Path string
}

// PlanStartAt computes the plan of restarting st at step.
func PlanStartAt(fsys afero.Fs, wf *config.Workflow, st *State, repo, step string) (StartAtPlan, error) {
	if wf.Step(step) == nil {
		return StartAtPlan{}, fmt.Errorf("unknown step %q", step)
	}
	p := StartAtPlan{Step: step, Rerun: append([]string{step}, wf.Downstream(step)...)}
	for _, s := range wf.Steps {
		if slices.Contains(p.Rerun, s.ID) {
			continue
		}
		ss := st.Steps[s.ID]
		if ss == nil || !ss.Status.Done() {
			continue
		}
		p.Kept = append(p.Kept, s.ID)
		arts := slices.Clone(ss.Artifacts)
		for _, a := range s.Artifacts {
			if v, ok := a.Compiled().Static(); ok && !slices.Contains(arts, v) {
				arts = append(arts, v)
			}
		}
		if ss.Status != Completed {
			continue
		}
		for _, a := range arts {
			path := a
			if !filepath.IsAbs(path) {
				path = filepath.Join(repo, a)
			}
			if ok, _ := afero.Exists(fsys, path); !ok {
				p.Missing = append(p.Missing, MissingArtifact{Step: s.ID, Path: a})
			}
		}
	}
	return p, nil
}
