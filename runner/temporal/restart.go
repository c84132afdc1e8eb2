package temporal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/afero"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// A run on Temporal goes on (flow resume, flow retry, --start-at-step)
// in one of two ways. While its workflow runs, flow resume only
// follows it again: the workflow never stopped; it waits for a
// decision or for flow continue. Once its workflow has ended
// (interrupted, failed, out of budget), a new execution of the same
// workflow id — the run id — starts from the state the last one ended
// with, on the worker that holds the run's record and checkout, and
// records what the local driver records when it takes a run over
// (runner_started, start_at, retry). Temporal's reset is not used: it
// goes back to a point of the history, not to a set of steps — with
// parallel steps and loop-backs no point of it is "this step and what
// depends on it pending, the rest kept", a retry's fresh attempts and
// new generation are no point of it either, and it discards the events
// after that point that the worker has already mirrored.

// recorded is a run on Temporal as its last execution has it.
type recorded struct {
	launch  LaunchReply
	status  StatusReply
	running bool
}

// lookup asks Temporal for a run: whether its workflow runs, what it
// was started with and its state. A run whose workflow has ended is
// asked too: a worker replays its history to answer.
func lookup(ctx context.Context, c client.Client, runID string) (recorded, error) {
	var r recorded
	desc, err := c.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return r, runError(runID, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetType().GetName() != WorkflowName {
		return r, ops.Usage("workflow %s on Temporal is not a flow run (its type is %s)", runID, info.GetType().GetName())
	}
	r.running = info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	for name, v := range map[string]any{QueryLaunch: &r.launch, QueryStatus: &r.status} {
		res, err := c.QueryWorkflow(ctx, runID, "", name)
		if err != nil {
			return r, fmt.Errorf("ask run %s on Temporal for its %s (is a flow worker serving its task queue?): %w", runID, name, err)
		}
		if err := res.Get(v); err != nil {
			return r, err
		}
	}
	if r.status.State == nil {
		return r, fmt.Errorf("run %s on Temporal has no state", runID)
	}
	return r, nil
}

// RestartRequest asks for a run on Temporal to go on: flow resume,
// flow retry, or flow run --start-at-step with the run named.
type RestartRequest struct {
	RunID string
	// Workflow, when set, is the workflow the command names (flow run
	// WORKFLOW --start-at-step): the run must be of it, and goes on with
	// its file as it is now.
	Workflow *config.Workflow
	// WorkflowPath, when set, is the file the run goes on with (flow
	// resume --workflow). With neither, the run's own workflow file is
	// looked for under Repo, by its path in the repository the run was
	// started from, and the run goes on with it when it is there.
	WorkflowPath string
	// Repo is the caller's repository: where the run's workflow file
	// and its prompt files are read.
	Repo    string
	StartAt core.StepKey
	Retry   bool
	NoWait  bool
	Budgets spec.Budgets
	// Invocation, when it gives flags, is put over the run's own.
	Invocation record.Invocation
	// Force goes on with a start step though kept steps' artifacts are
	// missing from the worker's checkout (--force).
	Force bool
	// Move moves the run off the worker its sessions are pinned to,
	// when that worker's host is lost (--move): to whichever worker of
	// the engine's task queue takes it. A workflow that runs is
	// terminated first; the steps that were running run again.
	Move bool
}

// prepared is what PrepareRestart found for the restart that follows:
// the source the run goes on with, and whether it moves.
type prepared struct {
	runID  string
	source Source
	move   bool
}

// PrepareRestart finds a run on Temporal and plans its going on as
// ops.PrepareResume plans a local run's: the run's workflow, and with
// a start step or a retry, what is kept and what runs again. A run that
// has ended is refused as locally (exit 8), a start step it does not
// have or a retry at an iteration budget is bad usage (2). A start
// step's plan lists the kept steps' artifacts missing from the run's
// worker's checkout, asked of that worker (CheckArtifacts), and is
// refused for them unless Force, as locally.
//
// The workflow is the run's file as it is now in the caller's
// repository (or the one the request names), as a local resume reads
// it; when the file or its prompt files changed since the run started,
// the run goes on with them, and the workflow code records the change
// as the local driver does (new steps PENDING, removed steps dropped,
// the new digest). A run whose file is not there goes on with the
// workflow it started with. The Engine keeps the source for the Run
// that follows.
func (e *Engine) PrepareRestart(ctx context.Context, req RestartRequest) (*ops.Launch, error) {
	rec, err := lookup(ctx, e.Client, req.RunID)
	if err != nil {
		return nil, err
	}
	in, host, st := rec.launch.Input, rec.launch.Host, rec.status.State
	inv := in.Invocation.Merge(req.Invocation)
	src, wf, err := e.restartSource(req, in, host, inv)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(wf, req.Invocation.Env); err != nil {
		return nil, err
	}
	e.prepared = &prepared{runID: req.RunID, source: src, move: req.Move}
	l := &ops.Launch{Workflow: wf, Options: spec.Options{Workflow: wf, Repo: host.Repo, RunID: req.RunID, Resume: true,
		NoWait: req.NoWait, Budgets: req.Budgets, Invocation: inv}}
	switch {
	case req.Retry:
		if st.Status != core.RunFailed {
			return nil, ops.Refused("run %s is %s, not failed: flow retry re-runs the failed steps of a failed run", req.RunID, st.Status)
		}
		p := core.PlanRetry(wf, st)
		if len(p.Capped) > 0 && req.Budgets.MaxIterations == 0 {
			return nil, ops.Usage("%v failed at their iteration budget; retry with a higher one: flow retry %s --max-iterations N --engine temporal", p.Capped, req.RunID)
		}
		l.RetryPlan, l.Options.Retry = &p, true
		l.Options.Budgets.ForceMaxIterations = req.Budgets.MaxIterations > 0
	case !req.StartAt.IsZero():
		p, err := spec.PlanStartAt(afero.NewMemMapFs(), wf, st, host.Repo, req.StartAt)
		if err != nil {
			return nil, ops.Usage("--start-at-step: %v", err)
		}
		l.Options.StartAt = req.StartAt
		l.Plan = &ops.StartAtPlan{Workflow: wf.Name, RunID: req.RunID, Step: req.StartAt, Kept: nonNil(p.Kept), Rerun: nonNil(p.Rerun),
			Missing: []ops.MissingArtifact{}}
		// A moved run's checkout is the one of the worker that takes it,
		// known once it does: its artifacts are not looked for.
		if !req.Move {
			missing, err := e.missingArtifacts(ctx, req, rec, src, inv)
			if err != nil && !req.Force {
				return nil, err
			}
			l.Plan.Missing = append(l.Plan.Missing, missing...)
			l.Plan.Refused = len(missing) > 0 && !req.Force
		}
	case st.Status.Terminal():
		return nil, ended(st)
	}
	return l, nil
}

// missingArtifacts asks the run's worker which artifacts of the steps
// a restart at req.StartAt keeps are missing from its checkout, as a
// local --start-at-step looks for them; a worker that does not answer
// within ArtifactsWait is an error that says how to go on without.
func (e *Engine) missingArtifacts(ctx context.Context, req RestartRequest, rec recorded, src Source, inv record.Invocation) ([]ops.MissingArtifact, error) {
	state, err := json.Marshal(rec.status.State)
	if err != nil {
		return nil, err
	}
	wait := e.ArtifactsWait
	if wait <= 0 {
		wait = DefaultArtifactsWait
	}
	host := rec.launch.Host
	id := fmt.Sprintf("%s.artifacts.%d", req.RunID, time.Now().UnixNano())
	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: rec.launch.Input.TaskQueue,
		WorkflowExecutionTimeout: wait + time.Minute}, CheckArtifactsName,
		CheckRequest{Queue: host.Queue, Wait: wait, Request: ArtifactsRequest{RunID: req.RunID, Source: src, Invocation: inv,
			State: state, StartAt: req.StartAt}})
	var reply ArtifactsReply
	if err == nil {
		err = run.Get(ctx, &reply)
	}
	if err != nil {
		return nil, ops.Usage("could not look for the kept steps' artifacts on worker %s (%s): %v; pass --force to go on without, or, if its host is lost, --move",
			host.Name, host.Repo, err)
	}
	out := []ops.MissingArtifact{}
	for _, m := range reply.Missing {
		out = append(out, ops.MissingArtifact{Step: m.Step, Path: m.Path})
	}
	return out, nil
}

// DefaultArtifactsWait is how long flow waits for a run's worker to
// look for the artifacts a restart keeps.
const DefaultArtifactsWait = 30 * time.Second

// restartSource returns the source a run goes on with and its workflow
// as the run's worker reads it: the file the request names or finds in
// the caller's repository when it differs from the run's, else the
// run's own.
func (e *Engine) restartSource(req RestartRequest, in Input, host Host, inv record.Invocation) (Source, *config.Workflow, error) {
	own, err := ParseSource(host.Repo, in.Source, inv)
	if err != nil {
		return Source{}, nil, ops.Usage("run %s: its workflow does not load: %v", req.RunID, err)
	}
	file := req.WorkflowPath
	if req.Workflow != nil {
		file = req.Workflow.File
	}
	if file == "" && req.Repo != "" && in.Source.Path != "" {
		p := filepath.Join(req.Repo, filepath.FromSlash(in.Source.Path))
		if ok, _ := afero.Exists(e.FS, p); !ok {
			return in.Source, own, nil
		}
		file = p
	}
	if file == "" {
		return in.Source, own, nil
	}
	repo := req.Repo
	if repo == "" {
		repo = filepath.Dir(file)
	}
	now, err := config.LoadWith(e.FS, file, inv.LoadOptions(repo))
	if err != nil {
		return Source{}, nil, core.Invalid("%w", err)
	}
	if now.Name != own.Name {
		return Source{}, nil, ops.Usage("run %s is a run of %s; %s is the workflow %s", req.RunID, own.Name, file, now.Name)
	}
	src, err := ReadSource(e.FS, now, repo)
	if err != nil {
		return Source{}, nil, err
	}
	if sameSource(src, in.Source) {
		return in.Source, own, nil
	}
	wf, err := ParseSource(host.Repo, src, inv)
	if err != nil {
		return Source{}, nil, ops.Usage("run %s: %s does not load as its worker reads it: %v", req.RunID, file, err)
	}
	return src, wf, nil
}

// sameSource reports whether two sources are the same files.
func sameSource(a, b Source) bool {
	if a.Path != b.Path || !bytes.Equal(a.Data, b.Data) || len(a.Prompts) != len(b.Prompts) {
		return false
	}
	for p, d := range a.Prompts {
		if o, ok := b.Prompts[p]; !ok || !bytes.Equal(d, o) {
			return false
		}
	}
	return true
}

// ended refuses to resume a run that has ended, as locally.
func ended(st *core.State) error {
	if st.Status == core.RunFailed {
		return ops.Refused("run %s has already failed (exit %d); to run its failed steps again: flow retry %s --engine temporal; or from a step: flow resume %s --engine temporal --start-at-step STEP",
			st.RunID, st.ExitCode, st.RunID, st.RunID)
	}
	return ops.Refused("run %s has already %s (exit %d); to run steps again: flow resume %s --engine temporal --start-at-step STEP",
		st.RunID, st.Status, st.ExitCode, st.RunID)
}

// restart makes a run on Temporal go on (Run with opts.Resume): it
// follows a run whose workflow runs (flow resume), and starts a new
// execution from the recorded state of one that has ended. A start
// step for a run whose workflow runs but has stopped — it waits on a
// human, or is paused, and no session runs — first interrupts that
// workflow; one with a session running is refused (exit 7), as a run
// held by a live runner is locally.
func (e *Engine) restart(ctx context.Context, opts spec.Options, att ops.Attach) (spec.Result, error) {
	rec, err := lookup(ctx, e.Client, opts.RunID)
	if err != nil {
		return spec.Result{}, err
	}
	st := rec.status.State
	prev := rec.launch.Input
	src := prev.Source
	if p := e.prepared; p != nil && p.runID == opts.RunID {
		src = p.source
	}
	move := e.prepared != nil && e.prepared.runID == opts.RunID && e.prepared.move
	edited := !sameSource(src, prev.Source)
	working := rec.status.Liveness.State == record.LiveWorking
	if move {
		if st.Status.Terminal() && !opts.Retry && opts.StartAt.IsZero() {
			return spec.Result{}, ended(st)
		}
		if rec, err = e.leave(ctx, opts.RunID, rec, att); err != nil {
			return spec.Result{}, err
		}
		st = rec.status.State
	} else if !opts.Retry && opts.StartAt.IsZero() {
		if rec.running && (!edited || working) {
			if edited {
				fmt.Fprintf(att.Output, "run %s goes on with the workflow it runs: a session runs; to take the edited workflow, pause it (flow pause %s --engine temporal) and resume it once it is paused\n",
					opts.RunID, opts.RunID)
			}
			e.noteUnserved(ctx, opts.RunID, rec.launch.Host, att)
			run := e.Client.GetWorkflow(ctx, opts.RunID, "")
			return e.follow(ctx, opts, run, st, false, att)
		}
		if !rec.running && st.Status.Terminal() {
			return spec.Result{}, ended(st)
		}
	}
	if rec.running && !move {
		if opts.Retry {
			return spec.Result{}, ops.Refused("run %s is %s, not failed: flow retry re-runs the failed steps of a failed run", opts.RunID, st.Status)
		}
		if working {
			return spec.Result{}, &ops.ExitError{Code: ops.ExitHeld, Err: fmt.Errorf(
				"run %s is in flight on Temporal (%s); pause it (flow pause %s --engine temporal) and restart it once it is paused, or, if its worker's host is lost, move it: flow resume %s --engine temporal --move",
				opts.RunID, rec.status.Liveness.Reason, opts.RunID, opts.RunID)}
		}
		// Nothing runs: the workflow is interrupted, and the run goes on
		// from where it ended.
		if err := e.Client.CancelWorkflow(ctx, opts.RunID, ""); err != nil {
			return spec.Result{}, fmt.Errorf("interrupt run %s: %w", opts.RunID, err)
		}
		var res Result
		if err := e.Client.GetWorkflow(ctx, opts.RunID, "").Get(ctx, &res); err != nil {
			var canceled *temporal.CanceledError
			if !errors.As(err, &canceled) {
				return spec.Result{}, fmt.Errorf("interrupt run %s: %w", opts.RunID, err)
			}
		}
		if rec, err = lookup(ctx, e.Client, opts.RunID); err != nil {
			return spec.Result{}, err
		}
		st = rec.status.State
	}
	state, err := json.Marshal(st)
	if err != nil {
		return spec.Result{}, err
	}
	if !move {
		e.noteUnserved(ctx, opts.RunID, rec.launch.Host, att)
	}
	in := Input{RunID: opts.RunID, Source: src, Invocation: opts.Invocation, Vars: prev.Vars, Budgets: opts.Budgets,
		TaskQueue: e.TaskQueue, HistoryLimit: prev.HistoryLimit, SessionHeartbeat: prev.SessionHeartbeat,
		Restart: &Restart{Host: rec.launch.Host, State: state, StartAt: opts.StartAt, Retry: opts.Retry,
			Control: rec.status.Control, Move: move}}
	if e.SessionHeartbeat > 0 {
		in.SessionHeartbeat = e.SessionHeartbeat
	}
	if err := checkSize("the run's recorded state", in); err != nil {
		return spec.Result{}, ops.Usage("%v", err)
	}
	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: opts.RunID, TaskQueue: e.TaskQueue, Memo: map[string]any{memoWorkflow: opts.Workflow.Name},
		// The run's own id, once its last execution has ended.
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, WorkflowName, in)
	if err != nil {
		if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
			return spec.Result{}, &ops.ExitError{Code: ops.ExitHeld, Err: fmt.Errorf("run %s was started again meanwhile; follow it: flow resume %s --engine temporal", opts.RunID, opts.RunID)}
		}
		return spec.Result{}, fmt.Errorf("restart run %s on Temporal: %w", opts.RunID, err)
	}
	if e.Detach {
		fmt.Fprintf(att.Output, "run %s goes on on Temporal (task queue %s); follow it with: flow resume %s --engine temporal\n", opts.RunID, e.TaskQueue, opts.RunID)
		return spec.Result{RunID: opts.RunID, Status: core.RunRunning}, nil
	}
	return e.follow(ctx, opts, run, st, true, att)
}

// noteUnserved says, before a run goes on on its worker, that no
// worker has asked for that worker's tasks lately: the run will wait
// for it, and --move is the way on if its host is lost.
func (e *Engine) noteUnserved(ctx context.Context, runID string, host Host, att ops.Attach) {
	if l, ok := unserved(ctx, e.Client, runID, host, time.Now()); ok {
		fmt.Fprintf(att.Output, "note: %s\n", l.Reason)
	}
}

// leave readies a run to move off its worker (--move): a workflow that
// runs is terminated — its worker is lost, so nothing of it can be
// interrupted or cleaned up — and the state it ended with is asked
// again. One that has ended is left as it is.
func (e *Engine) leave(ctx context.Context, runID string, rec recorded, att ops.Attach) (recorded, error) {
	host := rec.launch.Host
	fmt.Fprintf(att.Output, "run %s moves off worker %s (%s): the worker of task queue %s that takes it goes on with it in its own checkout\n",
		runID, host.Name, host.Repo, e.TaskQueue)
	if !rec.running {
		return rec, nil
	}
	reason := fmt.Sprintf("flow --move: run %s moves off worker %s", runID, host.Name)
	if err := e.Client.TerminateWorkflow(ctx, runID, "", reason); err != nil {
		return rec, fmt.Errorf("end run %s's workflow to move it: %w", runID, err)
	}
	var res Result
	_ = e.Client.GetWorkflow(ctx, runID, "").Get(ctx, &res) // terminated: its error says so
	return lookup(ctx, e.Client, runID)
}

// NewestRun returns the id of the newest run of the workflow named
// name on Temporal (the one flow run --start-at-step restarts; any
// workflow's when name is ""), or ""
// when the newest runs there are none of it.
func NewestRun(ctx context.Context, c client.Client, name string) (string, error) {
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 200,
		Query: fmt.Sprintf("WorkflowType = '%s'", WorkflowName)})
	if err != nil {
		return "", fmt.Errorf("list runs on Temporal: %w", err)
	}
	newest, at := "", time.Time{}
	for _, ex := range resp.GetExecutions() {
		p, ok := ex.GetMemo().GetFields()[memoWorkflow]
		if !ok {
			continue
		}
		var got string
		if err := converter.GetDefaultDataConverter().FromPayload(p, &got); err != nil || name != "" && got != name {
			continue
		}
		if t := ex.GetStartTime().AsTime(); newest == "" || t.After(at) {
			newest, at = ex.GetExecution().GetWorkflowId(), t
		}
	}
	return newest, nil
}

// maxListed bounds the runs ListRuns lists: the newest.
const maxListed = 200

// ListRuns lists the runs on Temporal, newest first (at most
// maxListed): a running run's status is its status query's, a closed
// run's its workflow's result.
func ListRuns(ctx context.Context, c client.Client) (ops.RunList, error) {
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: maxListed,
		Query: fmt.Sprintf("WorkflowType = '%s'", WorkflowName)})
	if err != nil {
		return ops.RunList{}, fmt.Errorf("list runs on Temporal: %w", err)
	}
	out := ops.RunList{Runs: []ops.RunSummary{}}
	for _, ex := range resp.GetExecutions() {
		id := ex.GetExecution().GetWorkflowId()
		r := ops.RunSummary{RunID: id, CreatedAt: core.Time{Time: ex.GetStartTime().AsTime().UTC()}.String()}
		if p, ok := ex.GetMemo().GetFields()[memoWorkflow]; ok {
			_ = converter.GetDefaultDataConverter().FromPayload(p, &r.Workflow)
		}
		if t := ex.GetCloseTime(); t != nil && t.IsValid() && !t.AsTime().IsZero() {
			r.UpdatedAt = core.Time{Time: t.AsTime().UTC()}.String()
		}
		switch ex.GetStatus() {
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			st, err := Status(ctx, c, id)
			switch {
			case err != nil:
				r.Error = err.Error()
			case st.State != nil:
				r.Status, r.ExitCode, r.Usage = string(st.State.Status), st.State.ExitCode, st.State.Usage
				if st.State.UpdatedAt != nil {
					r.UpdatedAt = st.State.UpdatedAt.String()
				}
			}
		case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			var res Result
			if err := c.GetWorkflow(ctx, id, ex.GetExecution().GetRunId()).Get(ctx, &res); err != nil {
				r.Error = err.Error()
			} else {
				r.Status, r.ExitCode, r.Dir = string(res.Status), res.ExitCode, res.RunDir
			}
		default:
			r.Status = string(core.RunInterrupted)
		}
		out.Runs = append(out.Runs, r)
	}
	slices.SortStableFunc(out.Runs, func(a, b ops.RunSummary) int { return strings.Compare(b.CreatedAt, a.CreatedAt) })
	return out, nil
}

// memoWorkflow is the memo that names a run's workflow, so that the
// newest run of a workflow is found (NewestRun).
const memoWorkflow = "flow.workflow"

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Logs returns the tails of the logs of a run's sessions on Temporal,
// the last session of each step (or of step alone): those still
// running as their activities last beat, the others as their
// activities returned. A run continued as new keeps only the tails of
// the sessions since; the whole logs are on the worker (LogTail.Log).
func Logs(ctx context.Context, c client.Client, runID string, step core.StepKey) ([]LogTail, error) {
	var reply LogsReply
	v, err := c.QueryWorkflow(ctx, runID, "", QueryLogs)
	if err != nil {
		return nil, runError(runID, err)
	}
	if err := v.Get(&reply); err != nil {
		return nil, err
	}
	desc, err := c.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return nil, runError(runID, err)
	}
	tails := reply.Tails
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityType().GetName() != ActivitySession || pa.GetHeartbeatDetails() == nil {
			continue
		}
		var t LogTail
		if err := converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &t); err != nil || t.Step.IsZero() {
			continue
		}
		replaced := false
		for i := range tails {
			if tails[i].Step == t.Step {
				tails[i], replaced = t, true
			}
		}
		if !replaced {
			tails = append(tails, t)
		}
	}
	if step.IsZero() {
		return tails, nil
	}
	for _, t := range tails {
		if t.Step == step {
			return []LogTail{t}, nil
		}
	}
	var st StatusReply
	if v, err := c.QueryWorkflow(ctx, runID, "", QueryStatus); err == nil && v.Get(&st) == nil && st.State != nil && st.State.Steps[step] == nil {
		return nil, ops.Usage("run %s has no step %s", runID, step)
	}
	return nil, nil
}
