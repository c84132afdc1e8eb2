package local

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/suggest"
	"github.com/flow-run/flow/runner/core"
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

// PlanStartAt computes the plan of restarting st at step: a step of
// the top level (a loop step runs all its items again, its list
// evaluated afresh), or one item's instance of a body step
// ("stories[login].review": that item runs again from there, and what
// follows the loop runs again after it).
func PlanStartAt(fsys afero.Fs, wf *config.Workflow, st *core.State, repo, step string) (StartAtPlan, error) {
	reset, err := StartAtReset(wf, st, step)
	if err != nil {
		return StartAtPlan{}, err
	}
	p := StartAtPlan{Step: step, Rerun: reset}
	if k, inst := core.SplitKey(step); inst {
		// The instance's loop runs again for its item.
		p.Rerun = append([]string{k.Loop}, p.Rerun...)
	}
	rerun := setOf(p.Rerun)
	for _, id := range st.StepOrder {
		if rerun[id] {
			continue
		}
		ss := st.Steps[id]
		k, _ := core.SplitKey(id)
		s := wf.Step(k.Step)
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

// StartAtSkipped lists, in their order, the steps of a new run started
// at step (flow run --start-at-step) that do not run: those that are
// neither step nor downstream of it.
func StartAtSkipped(wf *config.Workflow, step string, steps []string) []string {
	rerun := setOf(wf.Downstream(step))
	rerun[step] = true
	var skipped []string
	for _, id := range steps {
		if !rerun[id] {
			skipped = append(skipped, id)
		}
	}
	return skipped
}

// setOf returns the set of ids: looking each step of a run up in a list
// of thousands would take time in the square of the run's size.
func setOf(ids []string) map[string]bool {
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// StartAtReset lists the steps and instances a restart at step resets,
// in the order the run records them: step and what depends on it, with
// every instance of a loop among them; for an instance, what follows it
// in its item and what follows its loop.
func StartAtReset(wf *config.Workflow, st *core.State, step string) ([]string, error) {
	k, inst := core.SplitKey(step)
	var top []string
	var out []string
	switch s := wf.Step(k.Step); {
	case !inst && s != nil && s.Loop != "":
		return nil, fmt.Errorf("%q is a step of the body of loop %q: start at %s to run all its items again, or at %s[KEY].%s for one item", step, s.Loop, s.Loop, s.Loop, step)
	case !inst && s != nil:
		top = append([]string{step}, wf.Downstream(step)...)
	case inst:
		if _, err := core.ParseStepKey(step); err != nil {
			return nil, err
		}
		if st == nil || st.Steps[step] == nil {
			msg := fmt.Sprintf("the run has no instance %s (its loop's items are recorded when the loop starts)", step)
			if st != nil {
				if c, ok := suggest.Closest(step, st.StepOrder); ok {
					msg += fmt.Sprintf("; did you mean %s?", ShellArg(c))
				}
			}
			return nil, errors.New(msg)
		}
		out = append(out, step)
		for _, d := range bodyDownstream(wf, k.Loop, k.Step) {
			if id := core.Instance(k.Loop, k.Item, d); st.Steps[id] != nil {
				out = append(out, id)
			}
		}
		top = wf.Downstream(k.Loop)
	default:
		return nil, fmt.Errorf("unknown step %q", step)
	}
	out = append(out, top...)
	if st != nil {
		for _, id := range top {
			if s := wf.Step(id); s != nil && s.ForEach != nil {
				out = append(out, instancesOf(st, id)...)
			}
		}
	}
	return out, nil
}

// instancesOf lists the instances of a loop that st records, in its
// order.
func instancesOf(st *core.State, loop string) []string {
	var out []string
	prefix := loop + "["
	for _, id := range st.StepOrder {
		if strings.HasPrefix(id, prefix) {
			out = append(out, id)
		}
	}
	return out
}
