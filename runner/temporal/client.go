package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/spf13/afero"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// Engine is the Temporal engine (ops.Engine): it starts a run as a
// workflow on a Temporal server and follows it as a local run is
// followed — the same progress lines, the same events, the same exit
// codes — from the events its workflow answers QueryEvents with.
type Engine struct {
	Client    client.Client
	TaskQueue string
	// FS reads the workflow file and its prompt files.
	FS afero.Fs
	// Detach returns once the run started, with exit 0.
	Detach bool
	// PollEvery is how often the run is asked for new events; 0 means
	// 200 ms.
	PollEvery time.Duration
	// Now names a new run; nil means time.Now.
	Now func() time.Time
	// SessionHeartbeat is how long a session's activity may go without
	// beating before Temporal runs it again; 0 means a minute.
	SessionHeartbeat time.Duration
	// HistoryLimit is the history length past which a new run continues
	// as new; 0 means DefaultHistoryLimit.
	HistoryLimit int
	// ArtifactsWait is how long PrepareRestart waits for a run's worker
	// to look for the artifacts a start step keeps; 0 means
	// DefaultArtifactsWait.
	ArtifactsWait time.Duration

	// Prepare loads a workflow file for a run, as flow run does
	// (ops.Service.PrepareRun): flow run WORKFLOW --start-at-step needs
	// it.
	Prepare func(ops.RunRequest) (*ops.Launch, error)

	// prepared is what PrepareRestart found for the restart that
	// follows.
	prepared *prepared
}

// Name names the engine: flow's hints to steer a run say --engine
// temporal.
func (e *Engine) Name() string { return "temporal" }

// Run implements ops.Engine.
func (e *Engine) Run(ctx context.Context, opts spec.Options, att ops.Attach) (spec.Result, error) {
	switch {
	case opts.Resume:
		return e.restart(ctx, opts, att)
	}
	if opts.Workflow != nil && opts.Workflow.UsesWorktrees() {
		// A worktree lives on the worker that made it, and the merges of
		// items are not performed by the Temporal workflow yet.
		return spec.Result{}, ops.Unsupported("temporal", "workspace: worktree (docs/workspaces.md)")
	}
	if opts.RunID == "" {
		now := time.Now
		if e.Now != nil {
			now = e.Now
		}
		opts.RunID = spec.NewRunID(now())
	}
	if err := record.CheckRunID(opts.RunID); err != nil {
		return spec.Result{}, err
	}
	in, err := NewInput(e.FS, opts, e.TaskQueue)
	if err != nil {
		return spec.Result{}, err
	}
	in.SessionHeartbeat, in.StartAt, in.HistoryLimit = e.SessionHeartbeat, opts.StartAt, e.HistoryLimit
	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: opts.RunID, TaskQueue: e.TaskQueue, Memo: map[string]any{memoWorkflow: opts.Workflow.Name},
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// A run id is never taken over: not a run in flight, not one
		// that ended.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, WorkflowName, in)
	if err != nil {
		if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
			return spec.Result{}, ops.Usage("run %s already exists on Temporal; use another --run-id", opts.RunID)
		}
		return spec.Result{}, fmt.Errorf("start run %s on Temporal: %w", opts.RunID, err)
	}
	out := att.Output
	if e.Detach {
		fmt.Fprintf(out, "run %s started on Temporal (task queue %s); follow it with: flow status %s --engine temporal\n", opts.RunID, e.TaskQueue, opts.RunID)
		return spec.Result{RunID: opts.RunID, Status: core.RunRunning}, nil
	}
	return e.follow(ctx, opts, run, nil, true, att)
}

// follow prints the run's progress until it ends, or, with NoWait,
// until it waits on a human or is paused; from, when set, is the state
// of the run the follower attaches to: what follows it is printed.
// With started, run is an execution just started from that state: its
// state is not the run's until it has recorded its first event. An
// interrupt (ctx) cancels the workflow, which interrupts the run as
// SIGINT does locally; its end is still followed.
func (e *Engine) follow(ctx context.Context, opts spec.Options, run client.WorkflowRun, from *core.State, started bool, att ops.Attach) (spec.Result, error) {
	every := e.PollEvery
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	ann := local.NewAnnouncer(opts.Workflow, opts, att.Output)
	var after int64
	seen := !started
	if from != nil {
		ann.From(from)
		after = from.Seq
		if !started && att.Ask != nil && !opts.NoWait {
			// Attached to a run that waits already: ask, as for a wait
			// it sees begin.
			for _, id := range from.StepOrder {
				if s := from.Steps[id]; s != nil && s.Status == core.WaitingOnHuman {
					e.ask(context.WithoutCancel(ctx), opts, id, ann.HumanMessage(id), att)
				}
			}
		}
	}
	bg := context.WithoutCancel(ctx)
	type ended struct {
		res Result
		err error
	}
	end := make(chan ended, 1)
	go func() {
		var res Result
		err := run.Get(bg, &res)
		end <- ended{res, err}
	}()
	pull := func() error {
		for {
			page, err := queryEvents(bg, e.Client, opts.RunID, "", after)
			if err != nil {
				return err
			}
			if n := len(page.Events); n > 0 && page.Events[0].Seq > after+1 {
				// The run continued as new since the last look: the
				// events in between are the earlier executions'.
				missed, err := earlierEvents(bg, e.Client, opts.RunID, after, page.Events[0].Seq)
				if err != nil {
					return err
				}
				page.Events = append(missed, page.Events...)
			}
			for _, ev := range page.Events {
				if err := ann.Event(ev); err != nil {
					return err
				}
				if msg, ok := ann.HumanWait(ev); ok && att.Ask != nil && !opts.NoWait {
					e.ask(bg, opts, ev.Step, msg, att)
				}
				if ev.Type == core.EvWorkflowChanged {
					var wc core.WorkflowChanged
					if json.Unmarshal(ev.Data, &wc) == nil {
						fmt.Fprintf(att.Output, "workflow changed since the run last ran (%s -> %s)\n", shortDigest(wc.From), shortDigest(wc.To))
					}
				}
				if att.Events != nil {
					att.Events(ev)
				}
				after, seen = ev.Seq, true
				for _, r := range page.Retries {
					if r.After == ev.Seq {
						ann.Retrying(r.Step, r.Delay)
					}
				}
			}
			if len(page.Events) < maxPage {
				return nil
			}
		}
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	done := ctx.Done()
	for {
		select {
		case <-done:
			done = nil
			if err := e.Client.CancelWorkflow(bg, opts.RunID, ""); err != nil {
				return spec.Result{}, fmt.Errorf("interrupt run %s: %w", opts.RunID, err)
			}
		case x := <-end:
			_ = pull() // the last events, when the workflow still answers
			if x.err != nil {
				return spec.Result{}, fmt.Errorf("run %s on Temporal: %w", opts.RunID, x.err)
			}
			return spec.Result{RunID: opts.RunID, RunDir: x.res.RunDir, Status: x.res.Status, ExitCode: x.res.ExitCode,
				Reason: x.res.Reason, State: ann.State()}, nil
		case <-tick.C:
			if err := pull(); err != nil {
				continue // a query the server could not answer now is asked again
			}
			st := ann.State()
			if !opts.NoWait || !seen {
				break
			}
			switch st.Status {
			case core.RunWaitingOnHuman:
				var waiting []core.StepKey
				for _, id := range st.StepOrder {
					if s := st.Steps[id]; s != nil && s.Status == core.WaitingOnHuman {
						waiting = append(waiting, id)
					}
				}
				reason := fmt.Sprintf("waiting on a human: %v", waiting)
				if len(waiting) == 0 {
					// Nothing waits on a human: the run waits for gates, and
					// ends here as a local one does.
					var gated []string
					for _, id := range st.StepOrder {
						if s := st.Steps[id]; s != nil && s.Status == core.Pending && len(s.WaitingGates) > 0 {
							gated = append(gated, id.String())
						}
					}
					reason = "waiting on gates: " + strings.Join(gated, ", ")
				}
				return spec.Result{RunID: opts.RunID, Status: st.Status, ExitCode: int(ops.ExitHuman), Reason: reason, State: st}, nil
			case core.RunPaused:
				return spec.Result{RunID: opts.RunID, Status: st.Status, ExitCode: int(ops.ExitPaused), Reason: "paused", State: st}, nil
			}
		}
	}
}

// queryEvents asks execution exec of a run ("" for its latest) for its
// events after seq after.
func queryEvents(ctx context.Context, c client.Client, runID, exec string, after int64) (EventsPage, error) {
	var page EventsPage
	v, err := c.QueryWorkflow(ctx, runID, exec, QueryEvents, after)
	if err != nil {
		return page, err
	}
	err = v.Get(&page)
	return page, err
}

// earlierEvents returns the events of a run after seq after and before
// seq before that its latest execution does not hold: those of the
// executions it continued as new from, each asked in turn, going back
// from the latest until one holds the event after after (a closed
// execution answers queries: a worker replays its history).
func earlierEvents(ctx context.Context, c client.Client, runID string, after, before int64) ([]core.Event, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return nil, err
	}
	exec := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	got := map[int64]core.Event{}
	for exec != "" {
		it := c.GetWorkflowHistory(ctx, runID, exec, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		if !it.HasNext() {
			break
		}
		first, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("read the history of run %s: %w", runID, err)
		}
		exec = first.GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if exec == "" {
			break
		}
		low := before
		for from := after; ; {
			page, err := queryEvents(ctx, c, runID, exec, from)
			if err != nil {
				return nil, fmt.Errorf("ask an earlier execution of run %s for its events: %w", runID, err)
			}
			for _, ev := range page.Events {
				if ev.Seq < before {
					got[ev.Seq] = ev
					low = min(low, ev.Seq)
				}
			}
			if len(page.Events) < maxPage {
				break
			}
			from = page.Events[len(page.Events)-1].Seq
		}
		if low <= after+1 {
			break
		}
	}
	out := make([]core.Event, 0, len(got))
	for seq := after + 1; seq < before; seq++ {
		if ev, ok := got[seq]; ok {
			out = append(out, ev)
		}
	}
	return out, nil
}

// ask asks at the terminal for a decision on step, which waits on a
// human, as a local run asks, and sends the answer as flow approve or
// flow reject would; the run goes on by itself once it is decided. The
// question runs in its own goroutine, which is not waited for: a read
// of the terminal cannot be cancelled, and the process may exit while
// it waits (the step decided elsewhere, say).
func (e *Engine) ask(ctx context.Context, opts spec.Options, step core.StepKey, msg string, att ops.Attach) {
	q := ops.NewQuestion(opts.Workflow, opts.RunID, step, msg)
	go func() {
		in, ok := att.Ask(q)
		if !ok {
			return
		}
		if _, err := Decide(ctx, e.Client, opts.RunID, DecideRequest{Step: step, Input: in}); err != nil {
			fmt.Fprintf(att.Output, "%s: your answer was not recorded: %v\n", step, err)
		}
	}()
}

// Decide decides a human step of a run on Temporal by Update: it
// returns whether the decision won; a decision that cannot win (the
// step was decided already, or does not wait) is refused (exit 8).
func Decide(ctx context.Context, c client.Client, runID string, req DecideRequest) (Decided, error) {
	var d Decided
	err := update(ctx, c, runID, UpdateDecide, req, &d)
	if updateEnded(err) {
		// The run's workflow has ended: it takes no Update, and the
		// refusal is the one it would have given, from its last state.
		if st, serr := Status(ctx, c, runID); serr == nil && st.State != nil {
			return d, ops.Refused("%v", decisionRefused(st.State, runID, req.Step, true))
		}
		return d, runError(runID, err)
	}
	return d, err
}

// updateEnded reports whether err is an Update's on a workflow that
// has ended (or never was): the server finds no running execution.
func updateEnded(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// Control changes the desired control state of a run on Temporal by
// Update.
func Control(ctx context.Context, c client.Client, runID string, desired core.ControlState) error {
	var s string
	err := update(ctx, c, runID, UpdateControl, ControlRequest{Desired: desired}, &s)
	if updateEnded(err) {
		if st, serr := Status(ctx, c, runID); serr == nil && st.State != nil {
			return ops.Refused("run %s has already %s", runID, st.State.Status)
		}
		return runError(runID, err)
	}
	return err
}

// update sends an Update to a run's workflow. An error that says the
// workflow has ended (updateEnded) is returned as the server gave it.
func update(ctx context.Context, c client.Client, runID, name string, arg, result any) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: runID, UpdateName: name, Args: []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, result)
	}
	if updateEnded(err) {
		return err
	}
	return runError(runID, err)
}

// RunState returns the state of run id, asked of its workflow (a
// worker answers for a closed one): the Engine is an ops.StateReader,
// so that flow run --junit reports a run on Temporal.
func (e *Engine) RunState(ctx context.Context, id string) (*core.State, error) {
	st, err := Status(ctx, e.Client, id)
	if err != nil {
		return nil, err
	}
	return st.State, nil
}

// Status asks a run on Temporal for its status: the shape of flow
// status --json.
func Status(ctx context.Context, c client.Client, runID string) (ops.Status, error) {
	v, err := c.QueryWorkflow(ctx, runID, "", QueryStatus)
	if err != nil {
		return ops.Status{}, runError(runID, err)
	}
	var r StatusReply
	if err := v.Get(&r); err != nil {
		return ops.Status{}, err
	}
	st := ops.Status{State: r.State, Liveness: r.Liveness, RunDir: r.RunDir, At: time.Now()}
	if st.Liveness.State == record.LiveWorking {
		if l, ok := unserved(ctx, c, runID, r.Host, st.At); ok {
			st.Liveness = l
		}
		runningPIDs(ctx, c, runID, st.State)
	}
	return st, nil
}

// runningPIDs records on st the processes of the sessions that run, as
// their activities last beat: the workflow learns a session's pid when
// it ends. A server that cannot say leaves st as it is.
func runningPIDs(ctx context.Context, c client.Client, runID string, st *core.State) {
	if st == nil {
		return
	}
	desc, err := c.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return
	}
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityType().GetName() != ActivitySession || pa.GetHeartbeatDetails() == nil {
			continue
		}
		var t LogTail
		if converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &t) != nil || t.PID == 0 {
			continue
		}
		if s := st.Steps[t.Step]; s != nil && s.Status == core.Running && s.PID == 0 &&
			s.IterationCount == t.Iteration && s.Attempts == t.Attempt {
			s.PID = t.PID
		}
	}
}

// LostAfter is how long a run's worker may go without asking for its
// host queue's tasks before flow status says the run waits for a worker
// that may be lost: a live worker asks again at least every minute or
// so (a long poll).
const LostAfter = 2 * time.Minute

// unserved says, of a run pinned to one worker's host queue, that no
// worker has asked for that queue's tasks for LostAfter: the run waits
// for that worker, and a move is the way on if its host is lost. ok is
// false when a worker serves the queue, the run is not pinned to one
// (the workers share the repository), or the server cannot say.
func unserved(ctx context.Context, c client.Client, runID string, host Host, now time.Time) (record.Liveness, bool) {
	if !strings.Contains(host.Queue, "@") {
		return record.Liveness{}, false
	}
	resp, err := c.DescribeTaskQueue(ctx, host.Queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return record.Liveness{}, false
	}
	var last time.Time
	for _, p := range resp.GetPollers() {
		if t := p.GetLastAccessTime().AsTime(); t.After(last) {
			last = t
		}
	}
	return lostLiveness(runID, host, last, now)
}

// lostLiveness is the liveness of a run whose host queue a worker last
// asked for at last (zero: none in the server's memory).
func lostLiveness(runID string, host Host, last, now time.Time) (record.Liveness, bool) {
	if !last.IsZero() && now.Sub(last) < LostAfter {
		return record.Liveness{}, false
	}
	since := "in the server's memory"
	if !last.IsZero() {
		since = "for " + now.Sub(last).Round(time.Second).String()
	}
	return record.Liveness{State: record.LiveStale, Reason: fmt.Sprintf(
		"no worker has asked for the tasks of worker %s (%s) %s: the run waits for it; if its host is lost, flow resume %s --engine temporal --move moves the run to another worker",
		host.Name, host.Queue, since, runID)}, true
}

// Watch shows a run on Temporal as flow status --watch shows a local
// one: it asks for its status every interval (a second when 0) and
// reports it when it changed, or at every look with every, until the
// run is over (done, stopped) or ctx ends.
func Watch(ctx context.Context, c client.Client, runID string, interval time.Duration, opts ops.WatchOptions, fn func(ops.Update) error) error {
	if interval <= 0 {
		interval = time.Second
	}
	var w ops.StatusWatch
	var starting time.Time
	for {
		st, err := Status(ctx, c, runID)
		if err != nil && strings.Contains(err.Error(), errStarting.Error()) {
			// A watch of a run just started (--detach) waits for a
			// worker to take it, for a while.
			if starting.IsZero() {
				starting = time.Now()
			}
			if time.Since(starting) < StartingWait && sleep(ctx, interval) {
				continue
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if u, report := w.Next(st, opts.Every); report {
			if opts.Tails > 0 {
				u.Tails = runningTails(ctx, c, runID, st.State, opts.Tails)
			}
			if err := fn(u); err != nil {
				return err
			}
		}
		if st.Over() {
			return nil
		}
		if !sleep(ctx, interval) {
			return nil
		}
	}
}

// StartingWait is how long a watch waits for a worker to take a run
// that has just started before it says the run is starting.
const StartingWait = 30 * time.Second

// runningTails returns the last n lines of the output of each running
// session of run runID, as its activity last beat (a watch on a
// terminal shows them, as it shows a local run's).
func runningTails(ctx context.Context, c client.Client, runID string, st *core.State, n int) []ops.Tail {
	if st == nil {
		return nil
	}
	tails, err := Logs(ctx, c, runID, core.StepKey{})
	if err != nil {
		return nil
	}
	var out []ops.Tail
	for _, t := range tails {
		s := st.Steps[t.Step]
		if s == nil || s.Status != core.Running || t.Tail == "" || s.IterationCount != t.Iteration || s.Attempts != t.Attempt {
			continue
		}
		lines := strings.Split(strings.TrimRight(t.Tail, "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		out = append(out, ops.Tail{Step: t.Step.String(), Log: path.Base(t.Log), Lines: lines})
	}
	return out
}

// sleep waits for d, and reports false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// runError gives a Temporal error flow's exit code: an unknown run is
// bad usage (2), a refused Update is refused (8).
func runError(runID string, err error) error {
	if err == nil {
		return nil
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return ops.Usage("no run %s on Temporal", runID)
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return ops.Refused("%s", app.Message())
	}
	return fmt.Errorf("run %s on Temporal: %w", runID, err)
}

// shortDigest shortens a workflow's digest as the local driver prints
// it.
func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
