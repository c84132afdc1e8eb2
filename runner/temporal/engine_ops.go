package temporal

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
)

// The Temporal engine's operations other than Run (ops.Engine): each is
// a query, an Update or a cancellation of the run's workflow, whose id
// is the run id.

// Restart implements ops.Engine. flow run WORKFLOW --start-at-step
// (req.Workflow set) restarts the newest run of the workflow on the
// server, or, when it has none, starts a new run at the step.
func (e *Engine) Restart(ctx context.Context, req ops.RestartRequest) (*ops.Launch, error) {
	if req.By != "" {
		return nil, ops.Unsupported("temporal", "--by (a run on Temporal has its server's history)")
	}
	var fresh *ops.Launch
	if req.WorkflowFile != "" {
		if e.Prepare == nil {
			return nil, ops.Unsupported("temporal", "run --start-at-step")
		}
		var err error
		fresh, err = e.Prepare(ops.RunRequest{Workflow: req.WorkflowFile, Repo: req.Repo, RunID: req.RunID, Vars: req.Vars,
			NoWait: req.NoWait, Budgets: req.Budgets, Invocation: req.Invocation})
		if err != nil {
			return nil, err
		}
		req.Repo = fresh.Options.Repo
	}
	runID := req.RunID
	if runID == "" {
		name := ""
		if fresh != nil {
			name = fresh.Workflow.Name
		}
		var err error
		if runID, err = NewestRun(ctx, e.Client, name); err != nil {
			return nil, err
		}
	}
	if runID == "" && fresh != nil {
		return freshAt(fresh, req.StartAt)
	}
	var wf *config.Workflow
	if fresh != nil {
		wf = fresh.Workflow
	}
	if runID == "" {
		return nil, ops.Usage("no run on Temporal to go on with")
	}
	wfPath := req.WorkflowPath
	if wfPath != "" && !filepath.IsAbs(wfPath) {
		wfPath = filepath.Join(req.Repo, wfPath)
	}
	return e.PrepareRestart(ctx, RestartRequest{RunID: runID, Workflow: wf, WorkflowPath: wfPath,
		Repo: req.Repo, StartAt: req.StartAt, Retry: req.Retry, NoWait: req.NoWait, Budgets: req.Budgets,
		Invocation: req.Invocation, Move: req.Move, Force: req.Force})
}

// freshAt makes l, the launch of a new run, start at step: the
// workflow has no run on the server yet.
func freshAt(l *ops.Launch, k core.StepKey) (*ops.Launch, error) {
	wf, step := l.Workflow, k.String()
	if k.IsInstance() {
		return nil, ops.Usage("--start-at-step %s: no run of %s to restart; a new run starts at a step of the top level (its loops' items are known once they start)", step, wf.Name)
	}
	if wf.Step(k.Step) == nil {
		return nil, ops.Usage("--start-at-step: unknown step %q", step)
	}
	l.Options.StartAt = k
	l.Plan = &ops.StartAtPlan{Workflow: wf.Name, Step: k, NewRun: true, Kept: []core.StepKey{}, Rerun: []core.StepKey{}, Missing: []ops.MissingArtifact{}}
	return l, nil
}

// Newest implements ops.Engine: the newest run on the server (of
// workflow, when given); repo plays no part.
func (e *Engine) Newest(ctx context.Context, _, workflow string) (string, error) {
	return NewestRun(ctx, e.Client, workflow)
}

// Runs implements ops.Engine: the runs on the server, newest first, by
// its visibility API (repo plays no part). A running run's status is
// asked of its workflow; a closed one's is its result (a workflow
// that ended otherwise — terminated, cancelled, timed out — is
// interrupted: flow resume --engine temporal continues it).
func (e *Engine) Runs(ctx context.Context, _ string) (ops.RunList, error) {
	return ListRuns(ctx, e.Client)
}

// runOrNewest returns runID, or the newest run on the server.
func (e *Engine) runOrNewest(ctx context.Context, runID string) (string, error) {
	if runID != "" {
		return runID, nil
	}
	id, err := NewestRun(ctx, e.Client, "")
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", ops.Usage("no run on Temporal; start one with flow run WORKFLOW --engine temporal")
	}
	return id, nil
}

// Status implements ops.Engine with the run's status query.
func (e *Engine) Status(ctx context.Context, _, runID string) (ops.Status, error) {
	id, err := e.runOrNewest(ctx, runID)
	if err != nil {
		return ops.Status{}, err
	}
	return Status(ctx, e.Client, id)
}

// Watch implements ops.Engine.
func (e *Engine) Watch(ctx context.Context, _, runID string, opts ops.WatchOptions, fn func(ops.Update) error) error {
	id, err := e.runOrNewest(ctx, runID)
	if err != nil {
		return err
	}
	return Watch(ctx, e.Client, id, opts.Interval, opts, fn)
}

// Logs implements ops.Engine: a run on Temporal keeps the tail of each
// step's last session (every step's when req.Step is ""); Follow
// follows one step's session.
func (e *Engine) Logs(ctx context.Context, req ops.LogsRequest, out, notes io.Writer) error {
	if req.All {
		return ops.Unsupported("temporal", "logs --all (a run on Temporal keeps the tail of each step's last session)")
	}
	if req.JSON {
		return ops.Unsupported("temporal", "logs --json")
	}
	id, err := e.runOrNewest(ctx, req.RunID)
	if err != nil {
		return err
	}
	step := req.Step.String()
	if req.Follow {
		if req.Step.IsZero() {
			return ops.Usage("logs --follow follows one step's session: flow logs %s STEP --follow --engine temporal", id)
		}
		return FollowLogs(ctx, e.Client, id, req.Step, 0, out, notes)
	}
	tails, err := Logs(ctx, e.Client, id, req.Step)
	if err != nil {
		return err
	}
	if len(tails) == 0 {
		if req.Step.IsZero() {
			fmt.Fprintf(notes, "run %s has no session's output on Temporal yet\n", id)
		} else {
			fmt.Fprintf(notes, "step %s of run %s printed no output\n", step, id)
		}
		return nil
	}
	for _, t := range tails {
		if req.Step.IsZero() {
			fmt.Fprintf(out, "==> %s (iteration %d, attempt %d) <==\n", t.Step, t.Iteration, t.Attempt)
		}
		if int64(len(t.Tail)) < t.Size {
			fmt.Fprintf(notes, "%s: the last %d of %d bytes; the whole log is %s on %s\n", t.Step, len(t.Tail), t.Size, t.Log, t.Host)
		}
		fmt.Fprint(out, t.Tail)
	}
	return nil
}

// Decide implements ops.Engine with the run's decide Update: the answer
// says whether this decision won.
func (e *Engine) Decide(ctx context.Context, req ops.DecideRequest) (ops.Decision, error) {
	id, err := e.runOrNewest(ctx, req.RunID)
	if err != nil {
		return ops.Decision{}, err
	}
	if !req.Approve && req.Reason == "" {
		return ops.Decision{}, ops.Usage("reject needs --reason\ntry: flow reject %s %s --reason 'why'", id, core.ShellArg(req.Step.String()))
	}
	in := core.HumanInput{Approved: req.Approve, By: req.By, Input: req.Input, Reason: req.Reason}
	d, err := Decide(ctx, e.Client, id, DecideRequest{Step: req.Step, Input: in})
	if err != nil {
		return ops.Decision{}, err
	}
	return ops.Decision{RunID: d.RunID, Step: d.Step.String(), Approved: d.Approved, By: d.By}, nil
}

// Control implements ops.Engine with the run's control Update.
func (e *Engine) Control(ctx context.Context, req ops.ControlRequest) (ops.ControlResult, error) {
	if req.RunID == "" {
		return ops.ControlResult{}, ops.Usage("a run on Temporal is steered by its id: give the RUN_ID")
	}
	if req.State == core.RunCleanup {
		// A finished run's workflow has ended: nothing is left on
		// Temporal to run its cleanup session.
		if st, err := Status(ctx, e.Client, req.RunID); err == nil && st.State != nil && st.State.Status.Terminal() {
			return ops.ControlResult{}, ops.Unsupported("temporal", "cleanup of a finished run (run it while the run goes on, or paused)")
		}
	}
	if err := Control(ctx, e.Client, req.RunID, req.State); err != nil {
		return ops.ControlResult{}, err
	}
	return ops.ControlResult{RunID: req.RunID, DesiredState: req.State, By: req.By, Note: req.Note, RunnerLive: true}, nil
}

// Cancel implements ops.Engine: the run's workflow is cancelled, which
// kills its sessions' process groups on their workers and records the
// run interrupted (resumable with flow resume --engine temporal).
func (e *Engine) Cancel(ctx context.Context, req ops.CancelRequest) (ops.CancelResult, error) {
	if req.RunID == "" {
		return ops.CancelResult{}, ops.Usage("a run on Temporal is cancelled by its id: give the RUN_ID")
	}
	st, err := Status(ctx, e.Client, req.RunID)
	if err != nil {
		return ops.CancelResult{}, err
	}
	if st.State != nil && st.State.Status.Terminal() {
		return ops.CancelResult{}, ops.Refused("run %s has already %s: there is nothing to cancel", req.RunID, st.State.Status)
	}
	if err := e.Client.CancelWorkflow(ctx, req.RunID, ""); err != nil {
		return ops.CancelResult{}, runError(req.RunID, err)
	}
	return ops.CancelResult{RunID: req.RunID, Runner: "workflow " + req.RunID + " on Temporal", By: req.By}, nil
}

var _ ops.Engine = (*Engine)(nil)
