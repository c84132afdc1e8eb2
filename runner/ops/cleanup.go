package ops

import (
	"context"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// runWorkflow loads the workflow a recorded run goes on with: its own
// file (found again under repo when the run was copied), read as the
// run's invocation says.
func (s *Service) runWorkflow(repo string, ref record.RunRef) (*config.Workflow, error) {
	path, err := LocateWorkflow(s.FS, ref.State, repo)
	if err != nil {
		return nil, err
	}
	inv, err := record.ReadInvocation(s.FS, ref.Dir)
	if err != nil {
		return nil, Usage("run %s: %v", ref.ID, err)
	}
	return s.loadInvoked(path, repo, inv)
}

// checkCleanup refuses run_cleanup for a run whose workflow declares no
// cleanup session (ExitRefused): there is nothing to run.
func (s *Service) checkCleanup(repo string, ref record.RunRef) error {
	wf, err := s.runWorkflow(repo, ref)
	if err != nil {
		return err
	}
	if wf.Cleanup == nil {
		return Refused("run %s: its workflow %s declares no cleanup session (cleanup:); flow cleanup has nothing to run", ref.ID, wf.File)
	}
	return nil
}

// cleanupFinished runs the cleanup session of a finished run (flow
// cleanup on a completed or failed run): it records the human's wish
// (desired_state run_cleanup), and a runner takes the run for that one
// session (spec.Options.CleanupOnly), printing its progress on the
// Service's Stdout. The run's status stays as it is; the result's
// Cleanup says how the session ended.
func (l *Local) cleanupFinished(ctx context.Context, req ControlRequest) (ControlResult, error) {
	s := l.Service
	repo, ref, err := s.openRun(req.Repo, req.RunID)
	if err != nil {
		return ControlResult{}, err
	}
	launch, err := s.PrepareResume(ResumeRequest{Repo: repo, RunID: ref.ID})
	if err != nil {
		return ControlResult{}, err
	}
	if launch.Workflow.Cleanup == nil {
		return ControlResult{}, Refused("run %s: its workflow %s declares no cleanup session (cleanup:); flow cleanup has nothing to run", ref.ID, launch.Workflow.File)
	}
	by := s.Who(req.By)
	now := s.clock().Now()
	if err := record.SetDesired(s.FS, ref.Dir, core.RunCleanup, by, req.Note, now, true); err != nil {
		return ControlResult{}, err
	}
	launch.Options.CleanupOnly = true
	res, err := s.Start(ctx, launch, Attach{})
	if err != nil {
		return ControlResult{}, err
	}
	return ControlResult{RunID: ref.ID, DesiredState: core.RunCleanup, By: by, Note: req.Note, RunnerLive: true, Cleanup: &res}, nil
}
