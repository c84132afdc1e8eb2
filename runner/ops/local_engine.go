package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// The local engine's operations other than Run: they read and change
// the run's record on this machine through the Service.

// Restart implements Engine: flow resume, flow retry, and flow run
// WORKFLOW --start-at-step (req.Workflow set: the newest run of the
// workflow, or a new run at the step when it has none).
func (l *Local) Restart(_ context.Context, req RestartRequest) (*Launch, error) {
	s := l.Service
	if req.WorkflowFile != "" {
		return s.PrepareRun(RunRequest{Workflow: req.WorkflowFile, Repo: req.Repo, RunID: req.RunID, Vars: req.Vars,
			StartAt: req.StartAt, Force: req.Force, NoWait: req.NoWait, Budgets: req.Budgets, Invocation: req.Invocation, By: req.By,
			AcceptEdits: req.AcceptEdits})
	}
	if req.Move {
		return nil, Usage("--move is for runs on Temporal: a local run goes on in its own checkout")
	}
	return s.PrepareResume(ResumeRequest{Repo: req.Repo, RunID: req.RunID, Workflow: req.WorkflowPath, StartAt: req.StartAt,
		Force: req.Force, NoWait: req.NoWait, Budgets: req.Budgets, Invocation: req.Invocation, Retry: req.Retry, By: req.By,
		AcceptEdits: req.AcceptEdits, Takeover: req.Takeover})
}

// Newest implements Engine: the most recently active run of repo (of
// workflow, when given).
func (l *Local) Newest(_ context.Context, repo, workflow string) (string, error) {
	dir, err := l.Service.Repo(repo)
	if err != nil {
		return "", err
	}
	ref, err := record.FindRun(l.Service.FS, dir, "", workflow)
	if errors.Is(err, record.ErrNoRun) {
		return "", nil
	}
	return ref.ID, err
}

// Runs implements Engine: the runs recorded in the repository.
func (l *Local) Runs(_ context.Context, repo string) (RunList, error) {
	return l.Service.ListRuns(repo)
}

// Status implements Engine.
func (l *Local) Status(_ context.Context, repo, runID string) (Status, error) {
	return l.Service.Status(repo, runID)
}

// Watch implements Engine.
func (l *Local) Watch(ctx context.Context, repo, runID string, opts WatchOptions, fn func(Update) error) error {
	return l.Service.Watch(ctx, repo, runID, opts, fn)
}

// Logs implements Engine: the step's latest session log (every one,
// each under a header, with All), followed with Follow. A step that ran
// and printed nothing is said so on notes.
func (l *Local) Logs(ctx context.Context, req LogsRequest, out, notes io.Writer) error {
	s := l.Service
	if req.Step.IsZero() {
		runID, step, asStep := s.runOrStep(req.Repo, req.RunID)
		dir, ref, err := s.openRun(req.Repo, runID)
		if err != nil {
			return err
		}
		k, perr := core.ParseStepKey(step)
		switch {
		case step == "":
			return noStep("logs", ref)
		case asStep && (perr != nil || ref.State.Steps[k] == nil && step != "cleanup" && step != record.CleanupSession):
			return s.notRunNorStep(dir, step, ref)
		}
		req.RunID, req.Step = ref.ID, k
	}
	logs, err := s.Logs(req.Repo, req.RunID, req.Step, req.All)
	if err != nil {
		return err
	}
	if req.JSON {
		return s.logsJSON(ctx, logs, req.Follow, out)
	}
	if len(logs.Logs) == 0 {
		fmt.Fprintf(notes, "step %s of run %s printed no output\n", logs.Step, logs.RunID)
		return nil
	}
	for i, lf := range logs.Logs {
		if req.All {
			fmt.Fprintf(out, "==> %s <==\n", lf.Name)
		}
		if req.Follow && i == len(logs.Logs)-1 {
			return s.Follow(ctx, logs, out)
		}
		if err := s.CopyLog(out, lf); err != nil {
			return err
		}
	}
	return nil
}

// topSteps lists the steps of the top level of st, in order.
func topSteps(st *core.State) []string {
	var ids []string
	for _, id := range st.StepOrder {
		if !id.IsInstance() {
			ids = append(ids, id.String())
		}
	}
	return ids
}

// Decide implements Engine.
func (l *Local) Decide(_ context.Context, req DecideRequest) (Decision, error) {
	return l.Service.Decide(req)
}

// Control implements Engine: Service.Control, except that flow cleanup
// on a finished run runs the cleanup session (cleanupFinished).
func (l *Local) Control(ctx context.Context, req ControlRequest) (ControlResult, error) {
	if req.State == core.RunCleanup {
		_, ref, err := l.Service.openTarget(req.Repo, req.RunID, "cleanup")
		if err != nil {
			return ControlResult{}, err
		}
		if ref.State.Status.Terminal() {
			req.RunID = ref.ID
			return l.cleanupFinished(ctx, req)
		}
	}
	return l.Service.Control(req)
}

// Cancel implements Engine: it signals the live runner of the run
// (SIGTERM, as a terminal's interrupt does), which stops its sessions,
// records the run interrupted and exits 130. A run no live runner holds
// has nothing to stop (ExitRefused): it stays as it is, resumable; a
// runner on another host is out of reach (ExitRefused, naming it).
func (l *Local) Cancel(_ context.Context, req CancelRequest) (CancelResult, error) {
	s := l.Service
	_, ref, err := s.openTarget(req.Repo, req.RunID, "cancel")
	if err != nil {
		return CancelResult{}, err
	}
	st := ref.State
	if st.Status.Terminal() {
		return CancelResult{}, Refused("run %s has already %s: there is nothing to cancel", ref.ID, st.Status)
	}
	h, live := record.LiveRunner(s.FS, ref.Dir, st, s.clock().Now(), s.alive())
	if !live {
		return CancelResult{}, Refused("run %s is %s and no runner holds it: there is nothing to cancel (it stays resumable: flow resume %s)",
			ref.ID, st.Status, ref.ID)
	}
	runner := fmt.Sprintf("pid %d on %s", h.PID, h.Host)
	if h.Host != s.Host {
		return CancelResult{}, Refused("run %s is run by %s, another host: cancel it there (flow cancel %s)", ref.ID, runner, ref.ID)
	}
	if s.Signal == nil {
		return CancelResult{}, Unsupported("local", "cancel")
	}
	if err := s.Signal(h.PID, syscall.SIGTERM); err != nil {
		return CancelResult{}, fmt.Errorf("cancel run %s: signal its runner (%s): %w", ref.ID, runner, err)
	}
	return CancelResult{RunID: ref.ID, Runner: runner, By: s.Who(req.By)}, nil
}

var _ Engine = (*Local)(nil)
