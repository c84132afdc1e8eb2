package ops

import (
	"fmt"
	"strings"

	"github.com/flow-run/flow/internal/suggest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// A command that changes a run — approve, reject, pause, continue,
// run-once, cleanup, cancel, resume, retry — acts on the run it names.
// Given none, it acts only when exactly one run of the repository is
// one it could act on: for retry a failed run, for the others a run
// that has not finished (live, waiting on a human, paused, interrupted,
// out of a budget). With none or several it lists them and refuses
// (ExitUsage): "the newest run" is a reader's default (flow status,
// flow logs), never a writer's, since with two runs live it is a guess.

// openTarget resolves repo and the run a changing command named verb
// acts on: id, or when id is "" the one run that fits (see above).
func (s *Service) openTarget(repo, id, verb string) (string, record.RunRef, error) {
	if id != "" {
		return s.openRun(repo, id)
	}
	dir, err := s.Repo(repo)
	if err != nil {
		return "", record.RunRef{}, err
	}
	heads, err := record.ListRunHeads(s.FS, dir)
	if err != nil {
		return "", record.RunRef{}, err
	}
	fits, what := unfinished, "live or waiting (not finished)"
	if verb == "retry" {
		fits, what = failedRun, "failed"
	}
	var found []record.RunHead
	for _, h := range heads {
		if h.State != nil && fits(h.State.Status) {
			found = append(found, h)
		}
	}
	if len(found) == 1 {
		return s.openRun(dir, found[0].ID)
	}
	if len(found) == 0 {
		return "", record.RunRef{}, Usage("flow %s needs a RUN_ID: no run of %s is %s\ntry: flow runs", verb, dir, what)
	}
	var b strings.Builder
	for _, h := range found {
		fmt.Fprintf(&b, "\n  %s  %s  %s", h.ID, h.State.Status, h.State.WorkflowName)
	}
	return "", record.RunRef{}, Usage("flow %s needs a RUN_ID: %d runs of %s are %s:%s\ntry: flow %s %s",
		verb, len(found), dir, what, b.String(), verb, found[0].ID)
}

// unfinished reports whether a run with status st is one a command may
// change without naming it: it has not finished.
func unfinished(st core.RunStatus) bool { return !st.Terminal() }

// failedRun reports whether a run with status st is one flow retry may
// retry without naming it.
func failedRun(st core.RunStatus) bool { return st == core.RunFailed }

// A command that takes RUN_ID STEP (flow logs, approve, reject) given
// one argument reads it as the run when the repository has a run of
// that id, else as the step of the run it takes without an id: the
// newest run for flow logs, the one unfinished run for approve and
// reject. Given no step, it lists the steps it could take.

// runOrStep reads the one argument of a command that takes RUN_ID
// STEP: it returns arg as the run id when repo has a run of that id,
// else as the step (asStep set).
func (s *Service) runOrStep(repo, arg string) (runID, step string, asStep bool) {
	if arg == "" {
		return "", "", false
	}
	if record.CheckRunID(arg) == nil {
		if dir, err := s.Repo(repo); err == nil {
			if _, err := record.FindRun(s.FS, dir, arg, ""); err == nil {
				return arg, "", false
			}
		}
	}
	return "", arg, true
}

// noStep is the error of flow verb given a run but no step: it lists
// the run's steps that verb takes (for approve and reject, those that
// wait on a human), and how to name one.
func noStep(verb string, ref record.RunRef) error {
	var steps []string
	what := "has"
	if verb == "logs" {
		steps = topSteps(ref.State)
	} else {
		what = "waits on"
		for _, id := range ref.State.StepOrder {
			if ss := ref.State.Steps[id]; ss != nil && ss.Status == core.WaitingOnHuman {
				steps = append(steps, id.String())
			}
		}
	}
	if len(steps) == 0 && verb == "logs" {
		return Usage("flow logs needs a STEP, and run %s has none", ref.ID)
	}
	if len(steps) == 0 {
		return Usage("flow %s needs a STEP, and no step of run %s waits on a human (the run is %s)\ntry: flow status %s", verb, ref.ID, ref.State.Status, ref.ID)
	}
	quoted := make([]string, len(steps))
	for i, id := range steps {
		quoted[i] = core.ShellArg(id)
	}
	return Usage("flow %s needs a STEP; run %s %s: %s\ntry: flow %s %s %s", verb, ref.ID, what, strings.Join(quoted, ", "), verb, ref.ID, quoted[0])
}

// notRunNorStep is the error of a command given one argument, arg,
// that names neither a run of dir nor a step of run ref (the run it
// took): with a did-you-mean of either, and the run's steps.
func (s *Service) notRunNorStep(dir, arg string, ref record.RunRef) error {
	msg := fmt.Sprintf("%q is neither a run of %s nor a step of run %s", arg, dir, ref.ID)
	if c, ok := suggest.Closest(arg, core.KeyStrings(ref.State.StepOrder)); ok {
		msg += fmt.Sprintf(" (did you mean step %q?)", c)
	} else if ids, _ := record.RunIDs(s.FS, dir); len(ids) > 0 {
		if c, ok := suggest.Closest(arg, ids); ok {
			msg += fmt.Sprintf(" (did you mean run %q?)", c)
		}
	}
	return Usage("%s; its steps: %s\ntry: flow runs", msg, strings.Join(topSteps(ref.State), ", "))
}
