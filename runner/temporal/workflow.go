package temporal

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// The workflow code: everything here runs inside Temporal's
// deterministic sandbox. It reads no file, no clock but workflow.Now,
// draws no random number but through workflow.SideEffect, and starts no
// goroutine but through workflow.Go (purity_test.go checks the files).

// maxPage bounds the events one QueryEvents answer carries.
const maxPage = 500

// driver is one segment of a run: from its start or continuation to
// its end or next continuation.
type driver struct {
	ctx  workflow.Context
	in   Input
	host Host
	wf   *config.Workflow
	plan *core.Plan
	core *core.Core
	st   *core.State
	// events are the events of this segment, for QueryEvents.
	events []core.Event
	// inbox holds the inputs the core has not yet decided, in the order
	// they came.
	inbox []core.Input
	// inflight counts the activities and retry timers whose inputs
	// have not come back.
	inflight int
	// awaiting holds the human steps waiting for a decision (an Update).
	awaiting map[core.StepKey]bool
	// draining is set when the run is to continue as new: no input is
	// decided until nothing is in flight.
	draining bool
	// cancelled is set once the workflow is cancelled: the run is
	// interrupted.
	cancelled bool
	done      bool
	result    Result
	// seq is the seq of the last event recorded; mirrorSeq that of the
	// last event the worker mirrored.
	seq, mirrorSeq int64
	// sessions are the sessions in flight, by step.
	sessions map[core.StepKey]core.StartSession
	// tails are the tails of the logs of the sessions that ended in
	// this segment, the last of each step, for QueryLogs.
	tails map[core.StepKey]LogTail
	// retries are the retries' waits of this segment, for QueryEvents.
	retries []RetryNote
	// gates are the gates of the gate-state file as last read, and
	// gateWarned the reason it could not be read last warned of.
	gates      map[string]bool
	gateWarned string
	// batched decides the inputs that wait together (decideAll); unset
	// in runs recorded before it was so.
	batched bool
	// wake is set when the loop is to look again though no input came:
	// a poll of the gate-state file added to the history (the run may
	// have to continue as new) and may have recorded a warning, which
	// the loop mirrors.
	wake bool
}

// Run is the workflow of a flow run.
func Run(ctx workflow.Context, in Input) (Result, error) {
	if err := checkSize("the run's input", in); err != nil {
		return Result{}, temporal.NewNonRetryableApplicationError(err.Error(), "refused", nil)
	}
	d := &driver{ctx: ctx, in: in, awaiting: map[core.StepKey]bool{}, tails: map[core.StepKey]LogTail{}, sessions: map[core.StepKey]core.StartSession{}}
	if err := d.handlers(); err != nil {
		return Result{}, err
	}
	if err := d.start(); err != nil {
		return Result{}, err
	}
	d.batched = workflow.GetVersion(ctx, versionBatched, workflow.DefaultVersion, 1) >= 1
	return d.loop()
}

// start opens the run on a worker (or takes over a continued one),
// parses its workflow and makes its core.
func (d *driver) start() error {
	ctx, in := d.ctx, d.in
	if in.Carried != nil {
		d.host = in.Carried.Host
	} else {
		// A restarted run goes on on the worker it ran on: its record
		// and its checkout are there.
		// A run moved on purpose goes to whichever worker of its task
		// queue opens it.
		queue := in.TaskQueue
		if r := in.Restart; r != nil && !r.Move {
			queue = r.Host.Queue
		}
		actx := workflow.WithActivityOptions(ctx, shortOptions(queue))
		req := OpenRequest{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, RunID: in.RunID, Source: in.Source,
			Invocation: in.Invocation, Vars: in.Vars, Budgets: in.Budgets, Reopen: in.Restart != nil}
		if r := in.Restart; r != nil && r.Move {
			req.Moved = &Moved{From: r.Host, State: r.State}
		}
		if err := workflow.ExecuteActivity(actx, ActivityOpen, req).Get(ctx, &d.host); err != nil {
			return err
		}
	}
	wf, err := ParseSource(d.host.Repo, in.Source, in.Invocation)
	if err != nil {
		return temporal.NewNonRetryableApplicationError("the run's workflow does not load: "+err.Error(), "refused", nil)
	}
	d.wf = wf
	now := workflow.Now(ctx)
	var begin *core.Begin
	if c := in.Carried; c != nil {
		d.st = &core.State{}
		if err := json.Unmarshal(c.State, d.st); err != nil {
			return fmt.Errorf("read the carried state: %w", err)
		}
		if d.plan, err = spec.NewPlanOf(wf, in.Budgets, d.st.Vars, now); err != nil {
			return temporal.NewNonRetryableApplicationError("resolve budgets: "+err.Error(), "refused", nil)
		}
		d.core = core.Restore(d.plan, d.st, c.Core)
		d.gates = maps.Clone(c.Core.Gates)
		d.seq, d.mirrorSeq = d.st.Seq, d.st.Seq
		for _, t := range c.Inputs {
			i, err := untag(t)
			if err != nil {
				return err
			}
			d.inbox = append(d.inbox, i)
		}
		// The waits of human steps are the driver's: they go on.
		for _, id := range d.st.StepOrder {
			if s := d.st.Steps[id]; s != nil && s.Status == core.WaitingOnHuman && !d.decidedInInbox(id) {
				d.await(id)
			}
		}
	} else if in.Restart != nil {
		if err := d.restart(wf, now); err != nil {
			return err
		}
		// The control state the last execution ended with holds, as a
		// local run's control.json does: a paused run stays paused.
		begin = &core.Begin{Control: in.Restart.Control}
	} else {
		st, evs, err := core.Open(wf, core.Opening{
			Now: now, Created: record.Created(wf, d.host.Repo, in.RunID, in.Vars),
			Runner: core.RunnerStarted{Host: d.host.Name}, StartAt: in.StartAt, Raise: in.Budgets.Raise,
		})
		if err != nil {
			return temporal.NewNonRetryableApplicationError(err.Error(), "refused", nil)
		}
		d.st = st
		d.record(evs, true)
		if d.plan, err = spec.NewPlanOf(wf, in.Budgets, st.Vars, now); err != nil {
			return temporal.NewNonRetryableApplicationError("resolve budgets: "+err.Error(), "refused", nil)
		}
		d.core = core.NewCore(d.plan)
		begin = &core.Begin{Control: core.Continuous}
	}
	d.core.HideSecrets(spec.Secrets(wf, in.Invocation.Env))
	if begin != nil {
		if d.usesGates() {
			if gates, ok := d.readGates(ctx); ok {
				d.gates = gates
			}
			begin.Gates = maps.Clone(d.gates)
		}
		d.inbox = append(d.inbox, *begin)
	}
	if d.usesGates() {
		workflow.Go(ctx, d.pollGates)
	}
	return nil
}

// restart takes over the state a run's last execution ended with
// through the run's lifecycle (core.Open), as every driver does: the
// edits of its workflow, the runner, the steps a start step or a retry
// resets, a raised budget.
func (d *driver) restart(wf *config.Workflow, now time.Time) error {
	in, r := d.in, d.in.Restart
	d.st = &core.State{}
	if err := json.Unmarshal(r.State, d.st); err != nil {
		return temporal.NewNonRetryableApplicationError("read the run's recorded state: "+err.Error(), "refused", nil)
	}
	d.seq, d.mirrorSeq = d.st.Seq, d.st.Seq
	o := core.Opening{
		Now: now, State: d.st, Digest: wf.Digest(), Vars: core.RunVars(wf.Vars, d.st),
		Runner:  core.RunnerStarted{Host: d.host.Name},
		StartAt: r.StartAt, Retry: r.Retry,
		MaxIterations: in.Budgets.MaxIterations, ForceMaxIterations: in.Budgets.ForceMaxIterations,
		Raise: in.Budgets.Raise,
	}
	if r.Move {
		o.Note = fmt.Sprintf("moved on purpose (--move) off worker %s (%s) to worker %s (%s): the run goes on in %s's checkout; its record before the move stays on %s",
			r.Host.Name, r.Host.Repo, d.host.Name, d.host.Repo, d.host.Name, r.Host.Name)
	}
	if d.st.RepoDir != d.host.Repo {
		// Its record and checkout are another repository's now (a run
		// moved to another worker): its paths are re-rooted there.
		dir := record.RunDir(d.host.Repo, in.RunID)
		o.Runner.RepoDir, o.Runner.ReportsDir, o.Runner.ManualInputsDir = d.host.Repo, path.Join(dir, record.ReportsDir), path.Join(dir, record.InputsDir)
	}
	_, evs, err := core.Open(wf, o)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "refused", nil)
	}
	d.record(evs, true)
	budgets := in.Budgets
	if b := d.st.BudgetRaised; b != nil {
		budgets.Raise = *b
	}
	if d.plan, err = spec.NewPlanOf(wf, budgets, d.st.Vars, now); err != nil {
		return temporal.NewNonRetryableApplicationError("resolve budgets: "+err.Error(), "refused", nil)
	}
	d.core = core.NewCore(d.plan)
	return nil
}

// decidedInInbox reports whether a decision of step waits in the inbox.
func (d *driver) decidedInInbox(step core.StepKey) bool {
	for _, i := range d.inbox {
		if h, ok := i.(core.HumanDecision); ok && h.Step == step {
			return true
		}
	}
	return false
}

// loop decides the inputs as they come and performs the effects, until
// the run finishes or continues as new.
func (d *driver) loop() (Result, error) {
	for {
		if d.batched {
			if err := d.decideAll(); err != nil {
				return Result{}, err
			}
		}
		for len(d.inbox) > 0 && !d.draining && !d.batched {
			in := d.inbox[0]
			d.inbox = d.inbox[1:]
			dec := d.core.Decide(d.st, in, workflow.Now(d.ctx))
			d.record(dec.Events, true)
			if err := d.mirror(false); err != nil {
				return Result{}, err
			}
			for _, eff := range dec.Effects {
				d.perform(eff)
			}
			if d.done {
				break
			}
		}
		if d.done {
			if err := d.mirror(true); err != nil {
				return Result{}, err
			}
			return d.result, nil
		}
		if !d.draining && !d.cancelled && d.continueAsNew() {
			d.draining = true
		}
		if d.draining && d.inflight == 0 && workflow.AllHandlersFinished(d.ctx) {
			return Result{}, d.carry()
		}
		_ = workflow.Await(d.ctx, func() bool {
			if d.draining {
				return d.inflight == 0 && workflow.AllHandlersFinished(d.ctx)
			}
			return len(d.inbox) > 0 || d.wake || (!d.cancelled && d.ctx.Err() != nil)
		})
		if d.wake {
			d.wake = false
			if err := d.mirror(false); err != nil {
				return Result{}, err
			}
		}
		if !d.cancelled && d.ctx.Err() != nil {
			// Cancelled: the run is interrupted, as by SIGINT locally.
			// What follows runs on a context the cancellation does not
			// reach; the activities in flight are cancelled (their
			// sessions' process groups killed) and report their ends.
			d.cancelled, d.draining = true, false
			d.ctx, _ = workflow.NewDisconnectedContext(d.ctx)
			d.killSessions("the run was cancelled")
			d.inbox = append(d.inbox, core.Interrupt{})
		}
	}
}

// decideAll decides every input that waits, mirrors their events in one
// activity, then performs their effects: inputs that come together (a
// session's process and its end) cost one round trip to the worker,
// not one each. Deciding stops at the run's end.
func (d *driver) decideAll() error {
	var effs []core.Effect
	for len(d.inbox) > 0 && !d.draining && !d.finishing(effs) {
		in := d.inbox[0]
		d.inbox = d.inbox[1:]
		dec := d.core.Decide(d.st, in, workflow.Now(d.ctx))
		d.record(dec.Events, true)
		effs = append(effs, dec.Effects...)
	}
	if err := d.mirror(false); err != nil {
		return err
	}
	for _, eff := range effs {
		d.perform(eff)
	}
	return nil
}

// finishing reports whether effs end the run.
func (d *driver) finishing(effs []core.Effect) bool {
	for _, e := range effs {
		if _, ok := e.(core.Finish); ok {
			return true
		}
	}
	return false
}

// versionBatched gates deciding the inputs that wait together
// (decideAll): a run whose history was recorded before decides them one
// at a time, mirroring each, when it replays.
const versionBatched = "batched-decisions"

// continueAsNew reports whether the history is long enough that the
// run should continue as new.
func (d *driver) continueAsNew() bool {
	info := workflow.GetInfo(d.ctx)
	limit := d.in.HistoryLimit
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= limit
}

// carry continues the run as new, carrying its state, the core's
// bookkeeping and the inputs not yet decided.
func (d *driver) carry() error {
	if err := d.mirror(false); err != nil {
		return err
	}
	st, err := json.Marshal(d.st)
	if err != nil {
		return err
	}
	c := &Carried{Host: d.host, State: st, Core: d.core.Carry()}
	if d.in.Carried != nil {
		c.Segment = d.in.Carried.Segment + 1
	}
	for _, i := range d.inbox {
		t, err := tag(i)
		if err != nil {
			return err
		}
		c.Inputs = append(c.Inputs, t)
	}
	next := d.in
	next.Carried, next.Restart = c, nil
	if err := checkSize("the run's state", next); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "too_large", nil)
	}
	return workflow.NewContinueAsNewError(d.ctx, WorkflowName, next)
}

// record numbers events and keeps them; applied is false for events the
// core did not apply itself.
func (d *driver) record(evs []core.Event, applied bool) {
	for _, e := range evs {
		d.seq++
		e.Seq = d.seq
		if !applied {
			if err := core.Apply(d.st, e); err != nil {
				panic(fmt.Sprintf("apply %s: %v", e.Type, err)) // events built here always apply
			}
		}
		d.events = append(d.events, e)
	}
	d.st.Seq = d.seq
}

// mirror hands the worker the events it has not mirrored yet.
func (d *driver) mirror(final bool) error {
	var evs []core.Event
	for i := len(d.events) - 1; i >= 0 && d.events[i].Seq > d.mirrorSeq; i-- {
		evs = append([]core.Event{d.events[i]}, evs...)
	}
	if len(evs) == 0 && !final {
		return nil
	}
	actx := workflow.WithActivityOptions(d.ctx, shortOptions(d.host.Queue))
	req := MirrorRequest{RunID: d.in.RunID, Events: evs, Final: final}
	if err := workflow.ExecuteActivity(actx, ActivityMirror, req).Get(d.ctx, nil); err != nil {
		return fmt.Errorf("mirror the run's record on %s: %w", d.host.Name, err)
	}
	if len(evs) > 0 {
		d.mirrorSeq = evs[len(evs)-1].Seq
	}
	return nil
}

// perform turns one effect into an activity, a timer or a wait.
func (d *driver) perform(eff core.Effect) {
	switch e := eff.(type) {
	case core.Evaluate:
		runActivity(d, ActivityEvaluate, StepRequest{RunID: d.in.RunID, Step: e.Step}, func(err error, res WhenResultReply) core.Input {
			if err != nil {
				return core.WhenResult{Step: e.Step, Err: "evaluate on the worker: " + err.Error()}
			}
			return res.Result
		})
	case core.ExpandItems:
		runActivity(d, ActivityExpand, StepRequest{RunID: d.in.RunID, Step: e.Step}, func(err error, res ItemsReply) core.Input {
			if err != nil {
				return core.ItemsResult{Step: e.Step, Err: "evaluate the items on the worker: " + err.Error()}
			}
			return res.Result
		})
	case core.StartSession:
		d.session(e)
	case core.PrepareHuman:
		runActivity(d, ActivityPrepareHuman, PrepareRequest{RunID: d.in.RunID, Prepare: e}, func(err error, res core.HumanReady) core.Input {
			if err != nil {
				// The decision comes by Update: the file is only a
				// convenience for the worker's host.
				return core.HumanReady{Step: e.Step, Attempt: e.Attempt}
			}
			return res
		})
	case core.AwaitHuman:
		d.await(e.Step)
	case core.StartTimer:
		delay := e.Delay
		if s := d.wf.Step(stepOf(e.Step)); s != nil {
			if r := d.wf.StepRetry(s); r != nil && r.Jitter {
				var f float64
				_ = workflow.SideEffect(d.ctx, func(workflow.Context) any { return randFraction() }).Get(&f)
				delay = delay/2 + time.Duration(f*float64(delay/2+1))
			}
		}
		d.retries = append(d.retries, RetryNote{After: d.seq, Step: e.Step, Delay: delay})
		d.inflight++
		workflow.Go(d.ctx, func(ctx workflow.Context) {
			_ = workflow.NewTimer(ctx, delay).Get(ctx, nil)
			d.inflight--
			d.inbox = append(d.inbox, core.TimerFired{Step: e.Step})
		})
	case core.StartCleanup:
		runActivity(d, ActivityCleanup, CleanupRequest{RunID: d.in.RunID, Cleanup: e}, func(err error, res core.CleanupDone) core.Input {
			if err != nil {
				return core.CleanupDone{Failed: true, Error: err.Error()}
			}
			return res
		})
	case core.SetControl, core.Idle:
		// The core's state holds control; an idle run waits for Updates.
	case core.Finish:
		d.done = true
		d.result = Result{RunID: d.in.RunID, Status: e.Status, ExitCode: e.ExitCode, Reason: e.Reason, RunDir: record.RunDir(d.host.Repo, d.in.RunID)}
	}
}

// runActivity runs an activity beside the loop; answer turns its end
// into the core's input.
func runActivity[T any](d *driver, name string, req any, answer func(error, T) core.Input) {
	d.inflight++
	ctx := workflow.WithActivityOptions(d.ctx, shortOptions(d.host.Queue))
	f := workflow.ExecuteActivity(ctx, name, req)
	workflow.Go(d.ctx, func(gctx workflow.Context) {
		var res T
		err := f.Get(gctx, &res)
		d.inflight--
		d.inbox = append(d.inbox, answer(err, res))
	})
}

// session runs a step's session as an activity: its process, then its
// end, come back as inputs. A session its worker hands back (the
// worker was stopped, HandedBack) is recorded and runs again, on
// whichever worker takes it.
func (d *driver) session(e core.StartSession) {
	d.inflight++
	d.sessions[e.Step] = e
	ctx := workflow.WithActivityOptions(d.ctx, sessionOptions(d.host.Queue, d.in.SessionHeartbeat))
	f := workflow.ExecuteActivity(ctx, ActivitySession, SessionRequest{RunID: d.in.RunID, Start: e})
	workflow.Go(d.ctx, func(gctx workflow.Context) {
		var res SessionReply
		err := f.Get(gctx, &res)
		d.inflight--
		delete(d.sessions, e.Step)
		var canceled *temporal.CanceledError
		switch {
		case errors.As(err, &canceled):
			d.inbox = append(d.inbox, core.SessionDone{Step: e.Step, Outcome: core.Outcome{Attempt: e.Attempt}, Interrupted: true})
		case err != nil:
			d.inbox = append(d.inbox, core.SessionDone{Step: e.Step, Outcome: core.Outcome{Attempt: e.Attempt},
				Facts: core.SessionFacts{ExitCode: -1, Err: "the session's activity failed on the worker: " + err.Error()}})
		case res.HandedBack != nil && !d.cancelled:
			msg := fmt.Sprintf("%s's session (iteration %d, attempt %d) was handed back by worker %s: %s; it runs again on another worker",
				e.Step, e.Iteration, e.Attempt, res.HandedBack.Host, res.HandedBack.Reason)
			d.record([]core.Event{core.NewEvent(workflow.Now(gctx), core.EvWarning, e.Step, core.Note{Message: msg})}, false)
			d.wake = true
			d.session(e)
		case res.HandedBack != nil:
			d.inbox = append(d.inbox, core.SessionDone{Step: e.Step, Outcome: core.Outcome{Attempt: e.Attempt}, Interrupted: true})
		default:
			if t := res.Tail; t != nil {
				d.tails[e.Step] = *t
			}
			if res.PID != nil {
				d.inbox = append(d.inbox, *res.PID)
			}
			d.inbox = append(d.inbox, res.Done)
		}
	})
}

// killSessions asks the workers of the sessions in flight to end them
// at once (ActivityKill on their control queue): the cancellation of
// their activities reaches a worker only when the activity next beats.
// A run recorded before this was so does not send them.
func (d *driver) killSessions(reason string) {
	if workflow.GetVersion(d.ctx, versionKillSessions, workflow.DefaultVersion, 1) < 1 {
		return
	}
	keys := make([]core.StepKey, 0, len(d.sessions))
	for k := range d.sessions {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, core.CompareKeys)
	actx := workflow.WithActivityOptions(d.ctx, workflow.ActivityOptions{
		TaskQueue:              ControlQueue(d.host.Queue),
		ScheduleToStartTimeout: time.Minute,
		StartToCloseTimeout:    time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	for _, k := range keys {
		e := d.sessions[k]
		// Nothing waits for the kill: the session's end comes back
		// through its own activity.
		workflow.ExecuteActivity(actx, ActivityKill, KillRequest{Session: sessionOf(d.in.RunID, e), Reason: reason})
	}
}

// versionKillSessions gates the kills a cancelled run sends its
// sessions' workers (workflow.GetVersion): a run whose history was
// recorded before sends none when it replays.
const versionKillSessions = "kill-sessions"

// await waits for a human's decision of step: an Update, or its
// human.timeout. A worker evaluates the step's message and a timeout
// given as an expression, as a local runner does when the step starts
// to wait: either failing to evaluate fails the step (HumanWait). A run
// recorded before that was so (versionHumanWait) evaluates only an
// expression's timeout, and waits without one when it cannot.
func (d *driver) await(step core.StepKey) {
	if d.awaiting[step] || d.decidedInInbox(step) {
		return
	}
	d.awaiting[step] = true
	s := d.wf.Step(stepOf(step))
	ss := d.st.Steps[step]
	if s == nil || s.Human == nil || ss == nil || ss.StartedAt == nil {
		return
	}
	h := s.Human
	asks := workflow.GetVersion(d.ctx, versionHumanWait, workflow.DefaultVersion, 1) >= 1
	noTimeout := h.Timeout == nil || h.Timeout.Expr == nil && h.Timeout.D <= 0
	if noTimeout && (!asks || h.Message == nil) {
		return
	}
	started := ss.StartedAt.Time
	// still reports whether the step still waits as it did when await
	// began (not decided, not run again meanwhile).
	still := func() bool {
		cur := d.st.Steps[step]
		return d.awaiting[step] && cur != nil && cur.StartedAt != nil && cur.StartedAt.Time.Equal(started)
	}
	workflow.Go(d.ctx, func(ctx workflow.Context) {
		var timeout time.Duration
		if h.Timeout != nil {
			timeout = h.Timeout.D
		}
		actx := workflow.WithActivityOptions(ctx, shortOptions(d.host.Queue))
		switch {
		case asks:
			var reply HumanWaitReply
			d.inflight++
			err := workflow.ExecuteActivity(actx, ActivityHumanWait, StepRequest{RunID: d.in.RunID, Step: step}).Get(ctx, &reply)
			d.inflight--
			if err != nil {
				return
			}
			if reply.Err != "" {
				if still() {
					delete(d.awaiting, step)
					d.inbox = append(d.inbox, core.HumanDecision{Step: step, Err: reply.Err})
				}
				return
			}
			timeout = reply.Timeout
		case h.Timeout.Expr != nil:
			d.inflight++
			err := workflow.ExecuteActivity(actx, ActivityHumanTimeout, StepRequest{RunID: d.in.RunID, Step: step}).Get(ctx, &timeout)
			d.inflight--
			if err != nil {
				return
			}
		}
		if timeout <= 0 {
			return
		}
		left := started.Add(timeout).Sub(workflow.Now(ctx))
		if left > 0 {
			if err := workflow.NewTimer(ctx, left).Get(ctx, nil); err != nil {
				return
			}
		}
		if !still() {
			return
		}
		delete(d.awaiting, step)
		d.inbox = append(d.inbox, core.HumanDecision{Step: step, TimedOut: true})
	})
}

// versionHumanWait gates the evaluation of a waiting human step's
// message and timeout together (ActivityHumanWait), which fails the
// step when either cannot be evaluated (workflow.GetVersion).
const versionHumanWait = "human-wait"

// stepOf returns the workflow step of a step key.
func stepOf(key core.StepKey) string { return key.Step }

// shortOptions are the options of the activities that do not run a
// session: opening the run, mirroring it, evaluating.
func shortOptions(queue string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           queue,
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 10},
	}
}

// sessionOptions are the options of a session's activity: it may run
// long, beats while it runs (a session whose worker stops beating for
// heartbeat, 0 meaning a minute, is run again), and is waited for when
// cancelled (its process group is killed first).
func sessionOptions(queue string, heartbeat time.Duration) workflow.ActivityOptions {
	if heartbeat <= 0 {
		heartbeat = time.Minute
	}
	return workflow.ActivityOptions{
		TaskQueue:           queue,
		StartToCloseTimeout: 7 * 24 * time.Hour,
		HeartbeatTimeout:    heartbeat,
		WaitForCancellation: true,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 3},
	}
}
