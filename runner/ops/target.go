package ops

import (
	"fmt"
	"strings"

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
		return "", record.RunRef{}, core.Usage("flow %s needs a RUN_ID: no run of %s is %s\ntry: flow runs", verb, dir, what)
	}
	var b strings.Builder
	for _, h := range found {
		fmt.Fprintf(&b, "\n  %s  %s  %s", h.ID, h.State.Status, h.State.WorkflowName)
	}
	return "", record.RunRef{}, core.Usage("flow %s needs a RUN_ID: %d runs of %s are %s:%s\ntry: flow %s %s",
		verb, len(found), dir, what, b.String(), verb, found[0].ID)
}

// unfinished reports whether a run with status st is one a command may
// change without naming it: it has not finished.
func unfinished(st core.RunStatus) bool { return !st.Terminal() }

// failedRun reports whether a run with status st is one flow retry may
// retry without naming it.
func failedRun(st core.RunStatus) bool { return st == core.RunFailed }
