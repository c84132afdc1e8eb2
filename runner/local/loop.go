package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/spec"
)

// loop feeds the core until the run finishes, idles with NoWait, or is
// interrupted; then it says in control.json that the runner stopped.
func (x *run) loop(ctx context.Context) (spec.Result, error) {
	res, err := x.drive(ctx)
	x.controlStopped(res, err)
	if err == nil && x.finished {
		x.ended(ctx)
	}
	return res, err
}

// drive is loop's work: it feeds the core until the run finishes,
// idles with NoWait, or is interrupted.
func (x *run) drive(ctx context.Context) (spec.Result, error) {
	sessCtx, cancelSessions := context.WithCancel(context.WithoutCancel(ctx))
	x.sessCtx = sessCtx
	x.stopped = make(chan struct{})
	x.ws()
	// On the way out: stop delivering inputs, stop sessions, wait for
	// their goroutines.
	defer x.sessions.Wait()
	defer cancelSessions()
	defer close(x.stopped)

	control, err := x.readControl()
	if err != nil {
		return spec.Result{}, err
	}
	if err := x.controlStarted(control); err != nil {
		return spec.Result{}, err
	}
	x.queue = append(x.queue, core.Begin{Control: control, Gates: x.startGates(), DailySpent: x.dailySpent()})
	heartbeat := x.r.Clock.After(x.r.HeartbeatEvery)
	var poll, snap <-chan time.Time
	done := ctx.Done()
	for {
		for len(x.queue) > 0 {
			in := x.queue[0]
			x.queue = x.queue[1:]
			d := x.core.Decide(x.st, in, x.r.Clock.Now())
			x.queueEvents(d.Events)
			x.hold = true
			err := x.persist(d.Durable())
			x.hold = false
			if err != nil {
				cancelSessions()
				return spec.Result{}, err
			}
			x.announceAll(d.Events)
			x.notifyOf(d.Events)
			for _, e := range d.Events {
				if e.Type == core.EvHumanInput {
					x.archiveManualInput(e.Step)
				}
			}
			for _, eff := range d.Effects {
				res, stop, err := x.perform(eff)
				if err != nil {
					cancelSessions()
					return spec.Result{}, err
				}
				if stop {
					x.awaitNotices()
					if err := x.snapshot(); err != nil {
						return spec.Result{}, err
					}
					return res, nil
				}
			}
		}
		if len(x.awaiting) > 0 || x.core.Paused() || x.usesGates() || x.mergesWaiting() {
			if poll == nil {
				poll = x.r.Clock.After(x.r.PollEvery)
			}
		} else {
			poll = nil
		}
		// A change not yet in run_state.json is written there within
		// snapshotEvery, even when nothing else happens meanwhile.
		if x.dirty && snap == nil {
			snap = x.r.Clock.After(max(x.snapshotEvery()-x.r.Clock.Now().Sub(x.lastSnap), 0))
		}
		select {
		case in := <-x.inputs:
			if err := x.enqueue(in); err != nil {
				return spec.Result{}, err
			}
		case <-done:
			done = nil
			if x.core.Running() > 0 {
				x.printf("stopping: the sessions in flight get SIGTERM and %s to end (interrupt again to stop at once)\n", x.r.KillGrace)
			}
			cancelSessions()
			x.queue = append(x.queue, core.Interrupt{})
		case d := <-x.noticeResults():
			x.noticed(d)
			if err := x.persist(false); err != nil {
				return spec.Result{}, err
			}
		case <-heartbeat:
			heartbeat = x.r.Clock.After(x.r.HeartbeatEvery)
			// A lock file deleted by hand is put back, so that flow
			// status names the live runner again.
			if x.lock != nil {
				_ = x.lock.Restore()
			}
			if err := x.beat(x.r.Clock.Now()); err != nil {
				return spec.Result{}, err
			}
		case <-poll:
			poll = nil
			if err := x.pollWaiting(); err != nil {
				return spec.Result{}, err
			}
		case <-snap:
			snap = nil
			if x.dirty {
				if err := x.snapshot(); err != nil {
					return spec.Result{}, err
				}
			}
		}
	}
}

// send delivers an input from a goroutine to the loop, unless the loop
// has ended.
func (x *run) send(in core.Input) {
	if p, ok := in.(core.SessionPID); ok && x.sessionStarted != nil {
		x.sessionStarted(p)
	}
	if x.r.Serial && x.serialSession {
		// A serial session runs on the loop's goroutine.
		if err := x.enqueue(in); err != nil && x.serialErr == nil {
			x.serialErr = err
		}
		return
	}
	select {
	case x.inputs <- in:
	case <-x.stopped:
	}
}

// queueOnLoop is send for the loop's own goroutine, which must not
// wait for itself to take the input.
func (x *run) queueOnLoop(in core.Input) {
	if p, ok := in.(core.SessionPID); ok && x.sessionStarted != nil {
		x.sessionStarted(p)
	}
	x.queue = append(x.queue, in)
}

// enqueue queues an input for the core. Between sessions the runner
// reads control.json, so a pause asked for during a session holds the
// next one.
func (x *run) enqueue(in core.Input) error {
	switch in.(type) {
	case core.SessionDone, core.CleanupDone, core.TimerFired:
		desired, err := x.readControl()
		if err != nil {
			return err
		}
		x.controlChange(desired)
	}
	x.queue = append(x.queue, x.sessionEnded(in))
	return nil
}

// perform carries out one effect. stop is true when the run ends here.
func (x *run) perform(eff core.Effect) (spec.Result, bool, error) {
	switch e := eff.(type) {
	case core.Evaluate:
		x.queue = append(x.queue, x.evaluate(e.Step))
	case core.ExpandItems:
		x.queue = append(x.queue, x.expandItems(e.Step))
	case core.StartSession:
		if err := x.ensureState(); err != nil {
			return spec.Result{}, false, err
		}
		x.startSession(e)
		if err := x.serialErr; err != nil {
			return spec.Result{}, false, err
		}
	case core.PrepareHuman:
		// The decision goes to manual_inputs/<run>__<step>.json, where
		// agent_orchestrator's contract puts it;
		// its directory is there for whoever writes it by hand.
		path := x.names.ManualInput(e.Step)
		if err := x.rec.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return spec.Result{}, false, fmt.Errorf("create manual inputs directory: %w", err)
		}
		x.queue = append(x.queue, core.HumanReady{Step: e.Step, Attempt: e.Attempt, ManualInputPath: path})
	case core.AwaitHuman:
		if x.awaiting[e.Step] {
			break // already waiting (a new core over an edited workflow)
		}
		// A message or timeout that cannot be evaluated fails the step,
		// as any other expression does: nobody is asked a question that
		// cannot be said, nor made to wait for ever.
		if why := x.humanExprError(e.Step); why != "" {
			x.queue = append(x.queue, core.HumanDecision{Step: e.Step, Err: why})
			break
		}
		// A decision may already be there (approved while no runner ran).
		in, timedOut, err := x.checkHuman(e.Step)
		if err == nil && (in != nil || timedOut) {
			d := core.HumanDecision{Step: e.Step, TimedOut: timedOut}
			if in != nil {
				d.Input = *in
			}
			x.queue = append(x.queue, d)
			break
		}
		x.awaiting[e.Step] = true
		// The directory is there for whoever writes the decision by hand.
		if err := x.rec.MkdirAll(filepath.Dir(e.ManualInputPath), 0o755); err != nil {
			return spec.Result{}, false, fmt.Errorf("create manual inputs directory: %w", err)
		}
		msg := x.humanMessage(e.Step)
		quoted := " "
		if msg != "" {
			quoted = fmt.Sprintf(": %q ", msg)
		}
		x.printf("%s: waiting on a human%s(flow approve %s %s, or flow reject)\n", e.Step, quoted, x.st.RunID, core.ShellArg(e.Step.String()))
		// Whoever decides reads the wait (its manual_input_path) from
		// run_state.json: it is there before anyone is asked.
		if err := x.snapshot(); err != nil {
			return spec.Result{}, false, err
		}
		x.ask(e, msg)
	case core.StartTimer:
		if s := x.stepOf(e.Step); s != nil {
			if r := x.wf.StepRetry(s); r != nil && r.Jitter {
				// Full jitter over the upper half keeps retries of many
				// runs from hitting a shared service in step.
				e.Delay = e.Delay/2 + rand.N(e.Delay/2+1)
			}
		}
		x.printf("%s: retrying in %s\n", e.Step, e.Delay)
		x.sessions.Add(1)
		go func() {
			defer x.sessions.Done()
			select {
			case <-x.r.Clock.After(e.Delay):
			case <-x.sessCtx.Done():
			}
			x.send(core.TimerFired{Step: e.Step})
		}()
	case core.SetControl:
		if err := x.writeControlCurrent(e.Desired, e.Current, e.Note); err != nil {
			return spec.Result{}, false, err
		}
	case core.StartCleanup:
		// Cleanup sessions are numbered over the whole run: the core
		// has counted this one.
		x.cleanupN = e.N - 1
		x.startCleanup()
	case core.MergeItem:
		x.startMerge(x.mergeJobOf(e))
	case core.MergeStep:
		x.startMerge(x.stepMergeJob(e))
	case core.Idle:
		if len(x.queue) > 0 {
			return spec.Result{}, false, nil
		}
		if !x.opts.NoWait {
			// A run that waits, or pauses, is in run_state.json at once.
			return spec.Result{}, false, x.snapshot()
		}
		res := x.result(core.RunWaitingOnHuman, core.ExitHuman, "waiting on a human: "+strings.Join(core.KeyStrings(e.Waiting), ", "))
		switch {
		case e.Paused && len(e.Waiting) == 0:
			res = x.result(core.RunPaused, core.ExitPaused, "paused")
		case len(e.Waiting) == 0 && len(e.Gated) == 0 && len(e.Merges) > 0:
			res.Reason = "waiting for the checkout to take the merge of " + strings.Join(e.Merges, ", ") + "; flow resume tries again"
		case len(e.Waiting) == 0 && len(e.Gated) > 0:
			res.Reason = "waiting on gates: " + strings.Join(core.KeyStrings(e.Gated), ", ")
		}
		// The record says what the process exits with.
		x.emit(newEvent(x.r.Clock.Now(), core.EvRunnerExited, core.StepKey{}, core.RunnerExited{ExitCode: res.ExitCode, Reason: res.Reason}))
		if err := x.snapshot(); err != nil {
			return spec.Result{}, false, err
		}
		return res, true, nil
	case core.Finish:
		if e.Reason == core.AlreadyEnded {
			x.printf("run %s had already %s (exit %d); to run steps again: flow run %s --start-at-step STEP\n",
				x.st.RunID, e.Status, e.ExitCode, x.st.WorkflowFile)
		} else {
			x.releaseWorkspaces(e.Status)
			// A run that stopped (interrupted, out of a budget) goes on
			// when resumed: it has not finished.
			x.finished = e.Status.Terminal()
		}
		return x.result(e.Status, e.ExitCode, e.Reason), true, nil
	}
	return spec.Result{}, false, nil
}

func (x *run) result(status core.RunStatus, code int, reason string) spec.Result {
	return spec.Result{RunID: x.st.RunID, RunDir: x.dir, Status: status, ExitCode: code, Reason: x.redact.String(reason), State: x.st}
}

// announceAll announces a decision's events, appended and held back
// from Runner.OnEvent (x.held): each is handed to OnEvent just before
// its line is printed, so that what OnEvent prints about an event (a
// CI service's group around a session) comes in order with the lines
// of the events before and after it. Events appended before the
// decision's, announced when they were made, go first.
func (x *run) announceAll(evs []core.Event) {
	held := x.held
	x.held = nil
	if x.r.OnEvent == nil || len(held) < len(evs) {
		for _, e := range held {
			x.r.OnEvent(e)
		}
		for _, e := range evs {
			x.announce(e)
		}
		return
	}
	before := len(held) - len(evs)
	for _, e := range held[:before] {
		x.r.OnEvent(e)
	}
	for i, e := range evs {
		x.r.OnEvent(held[before+i])
		x.announce(e)
	}
}

// announce prints a line of progress for the events a person cares
// about.
func (x *run) announce(e core.Event) {
	s := x.st.Steps[e.Step]
	switch e.Type {
	case core.EvStepStarted:
		if st := x.stepOf(e.Step); st != nil && st.Kind == config.KindConsensus {
			break // it runs no session: its decision is the next line
		}
		x.printf("%s: started (attempt %d, iteration %d)\n", e.Step, s.Attempts, s.IterationCount)
	case core.EvStepCompleted:
		x.printf("%s: completed\n", e.Step)
	case core.EvStepSkipped:
		x.printf("%s: skipped (%s)\n", e.Step, s.SkipReason)
	case core.EvGateFailed:
		var d core.GateFailure
		_ = jsonUnmarshal(e.Data, &d)
		x.printf("%s: %s\n", e.Step, "gate failed: "+d.Reason)
		if !d.Target.IsZero() {
			x.printf("%s: looping back to %s (iteration %d)\n", e.Step, d.Target, x.st.Steps[d.Target].IterationCount)
		} else if s != nil && s.Status == core.Failed {
			x.printf("%s: FAILED: %s\n", e.Step, deref(s.LastError))
			x.showEvidence(e.Step, s)
		}
	case core.EvAttemptFailed:
		// The same decision may have started the next attempt already:
		// the event, not the state, says which attempt failed.
		var d core.Outcome
		_ = jsonUnmarshal(e.Data, &d)
		x.printf("%s: attempt %d failed: %s\n", e.Step, d.Attempt, d.Error)
	case core.EvStepFailed:
		x.printf("%s: FAILED: %s\n", e.Step, deref(s.LastError))
		x.showEvidence(e.Step, s)
	case core.EvLoopItems:
		keys := make([]string, len(s.Items))
		for i, it := range s.Items {
			keys[i] = it.Key
		}
		x.printf("%s: %s%s\n", e.Step, plural(len(keys), "1 item", fmt.Sprintf("%d items", len(keys))), listed(keys))
	case core.EvItemFinished:
		var d core.ItemEvent
		_ = jsonUnmarshal(e.Data, &d)
		if d.Status == core.Failed {
			x.printf("%s[%s]: item FAILED: %s\n", e.Step, d.Key, d.Error)
		} else {
			x.printf("%s[%s]: item %s (%d/%d)\n", e.Step, d.Key, strings.ToLower(string(d.Status)), derefInt(s.LoopIndex), len(s.Items))
		}
	case core.EvStepInterrupted:
		x.printf("%s: interrupted\n", e.Step)
	case core.EvGatesWaiting:
		x.printf("%s: waiting for gates to open: %s (%s)\n", e.Step, strings.Join(s.WaitingGates, ", "), x.opts.Invocation.GateStateFile)
	case core.EvStepRemoved:
		x.printf("%s: removed from the workflow; dropped from the run\n", e.Step)
	case core.EvStepAdded:
		x.printf("%s: new in the workflow; added to the run\n", e.Step)
	case core.EvReconciled:
		x.printf("%s: was running when the last runner died; it runs again\n", e.Step)
	case core.EvRunFinished:
		var d core.RunFinished
		_ = jsonUnmarshal(e.Data, &d)
		if d.Reason != "" {
			x.printf("run %s %s: %s\n", x.st.RunID, d.Status, d.Reason)
		} else {
			x.printf("run %s %s\n", x.st.RunID, d.Status)
		}
	case core.EvRunInterrupted:
		x.printf("run %s interrupted; resume with: flow resume %s\n", x.st.RunID, x.st.RunID)
	case core.EvBudgetExceeded:
		var d core.BudgetExceeded
		_ = jsonUnmarshal(e.Data, &d)
		whose := "the run's"
		if !d.Step.IsZero() {
			whose = "step " + d.Step.String() + "'s"
		}
		x.printf("budget: %s %s budget is spent (%s of %s); no session starts until it is raised\n", whose, d.What, fmtNum(d.Used), fmtNum(d.Limit))
	case core.EvRunPaused:
		if !x.opts.NoWait { // with --no-wait the run ends here, and says how to go on
			x.printf("run %s is paused; it waits: flow continue %s to go on\n", x.st.RunID, x.st.RunID)
		}
	case core.EvWarning:
		var d core.Note
		_ = jsonUnmarshal(e.Data, &d)
		x.printf("warning: %s\n", d.Message)
	case core.EvItemMerge, core.EvStepMerge:
		x.announceWorkspace(e)
	}
}

// The bounds of the evidence shown under a failed step when its
// sessions' output was not shown live.
const (
	shownEvidenceLines = 10
	shownEvidenceLine  = 500
)

// showEvidence prints, under a failed step, the last lines of the
// output that failed it and the command that prints all of it, when the
// sessions' output is not shown live (not a terminal, not CI): without
// them the failure would say only its reason. Lines the error already
// ends with are not shown twice.
func (x *run) showEvidence(step core.StepKey, s *core.StepState) {
	if x.r.Live || s == nil || strings.TrimSpace(s.Evidence) == "" {
		return
	}
	lines := strings.Split(strings.TrimRight(s.Evidence, "\n"), "\n")
	if len(lines) > shownEvidenceLines {
		lines = lines[len(lines)-shownEvidenceLines:]
	}
	logs := fmt.Sprintf("flow logs %s %s", x.st.RunID, core.ShellArg(step.String()))
	if strings.HasSuffix(strings.TrimRight(deref(s.LastError), "\n"), strings.Join(lines, "\n")) {
		x.printf("%s: all of its output: %s\n", step, logs)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: the last lines of its output (all of it: %s):\n", step, logs)
	for _, l := range lines {
		if len(l) > shownEvidenceLine {
			n := shownEvidenceLine
			for n > 0 && !utf8.RuneStart(l[n]) {
				n--
			}
			l = l[:n] + "…"
		}
		fmt.Fprintf(&b, "  %s\n", strings.TrimRight(l, "\r"))
	}
	x.printf("%s", b.String())
}

// pollWaiting looks at the manual input files of waiting steps, their
// human timeouts, and control.json.
func (x *run) pollWaiting() error {
	if len(x.awaiting) > 0 {
		x.reloadWhileWaiting(false)
	}
	var decisions []core.Input
	for step := range x.awaiting {
		in, timedOut, err := x.checkHuman(step)
		if err != nil {
			x.warn(step, err.Error())
			continue
		}
		if in != nil || timedOut {
			delete(x.awaiting, step)
			d := core.HumanDecision{Step: step, TimedOut: timedOut}
			if in != nil {
				d.Input = *in
			}
			decisions = append(decisions, d)
		}
	}
	if len(decisions) > 0 {
		// An edit not taken yet is taken, or said, before the decision.
		x.reloadWhileWaiting(true)
		x.queue = append(x.queue, decisions...)
	}
	if x.usesGates() {
		x.pollGates()
	}
	x.pollMerges()
	desired, err := x.readControl()
	if err != nil {
		return err
	}
	x.controlChange(desired)
	return nil
}

// controlChange hands the core a new desired state of control.json.
// A paused run that goes on, with no session in flight, first takes the
// workflow file as it is now (see reload); an edit that does not load
// keeps it paused.
func (x *run) controlChange(desired core.ControlState) {
	cur := x.core.Control()
	if desired == cur {
		return
	}
	if cur == core.Pause && desired != core.Pause && x.core.Running() == 0 {
		changed, err := x.reload()
		if err != nil {
			if msg := err.Error(); x.warned["reload"] != msg {
				x.warned["reload"] = msg
				var weak *weakenedError
				if errors.As(err, &weak) {
					x.warn(core.StepKey{}, "the edit of the workflow file is not applied, and the run stays paused: "+msg+"; undo the edit, or let a person apply it: flow resume "+x.st.RunID+" --accept-edits")
				} else {
					x.warn(core.StepKey{}, "the edited workflow does not load; the run stays paused until it does:\n"+msg)
				}
			}
			return
		}
		delete(x.warned, "reload")
		if changed {
			// A new core over the new plan takes the run from its state.
			x.queue = append(x.queue, core.Begin{Control: desired, Gates: maps.Clone(x.gates)})
			return
		}
	}
	x.queue = append(x.queue, core.ControlChanged{Desired: desired})
}

// listed lists keys for a line of progress: ": a, b, c", the first ten.
func listed(keys []string) string {
	switch {
	case len(keys) == 0:
		return ""
	case len(keys) > 10:
		return ": " + strings.Join(keys[:10], ", ") + fmt.Sprintf(", … (%d more)", len(keys)-10)
	}
	return ": " + strings.Join(keys, ", ")
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// fmtNum writes a number without a needless fraction.
func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
