package temporal

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// handlers registers the run's queries and Updates. They read the
// driver's state; an Update that is refused leaves no trace in the
// history.
func (d *driver) handlers() error {
	if err := workflow.SetQueryHandler(d.ctx, QueryStatus, d.status); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(d.ctx, QueryEvents, d.eventsAfter); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(d.ctx, QueryLaunch, d.launch); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(d.ctx, QueryLogs, d.logs); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(d.ctx, UpdateDecide, d.decide,
		workflow.UpdateHandlerOptions{Validator: d.validDecision}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(d.ctx, UpdateControl, d.control,
		workflow.UpdateHandlerOptions{Validator: d.validControl})
}

// status answers QueryStatus.
func (d *driver) status() (StatusReply, error) {
	if d.st == nil || d.st.RunID == "" {
		return StatusReply{}, errStarting
	}
	r := StatusReply{State: d.st, Liveness: d.liveness(), RunDir: record.RunDir(d.host.Repo, d.in.RunID), Host: d.host}
	if d.core != nil {
		r.Control = d.core.Control()
	}
	return r, nil
}

// liveness says what the driver of the run is doing, in the words of
// record.Live: Temporal holds the run, so it is never dead or stale.
func (d *driver) liveness() record.Liveness {
	st := d.st
	switch st.Status {
	case core.RunCompleted, core.RunFailed:
		return record.Liveness{State: record.LiveDone, Reason: "the run " + string(st.Status)}
	case core.RunPaused:
		return record.Liveness{State: record.LiveStopped, Reason: "paused; flow continue --engine temporal goes on"}
	case core.RunInterrupted:
		return record.Liveness{State: record.LiveStopped, Reason: "interrupted"}
	case core.RunBudgetExceeded:
		return record.Liveness{State: record.LiveStopped, Reason: "a budget ran out"}
	}
	for _, id := range st.StepOrder {
		if s := st.Steps[id]; s != nil && s.Status == core.Running && s.LoopIndex == nil {
			return record.Liveness{State: record.LiveWorking, Hook: id, Reason: "a session runs on " + d.host.Name}
		}
	}
	for _, id := range st.StepOrder {
		if s := st.Steps[id]; s != nil && s.Status == core.WaitingOnHuman {
			return record.Liveness{State: record.LiveStopped, Hook: id, Reason: "waiting on a human"}
		}
	}
	// A run that waits for the gates of its gate-state file waits as
	// one that waits on a human does: nothing runs until they open.
	if st.Status == core.RunWaitingOnHuman {
		for _, id := range st.StepOrder {
			if s := st.Steps[id]; s != nil && s.Status == core.Pending && len(s.WaitingGates) > 0 {
				return record.Liveness{State: record.LiveStopped, Hook: id, Reason: fmt.Sprintf("waiting for gates to open: %s (%s)",
					strings.Join(s.WaitingGates, ", "), d.in.Invocation.GateStateFile)}
			}
		}
	}
	return record.Liveness{State: record.LiveWorking, Reason: "Temporal drives the run"}
}

// eventsAfter answers QueryEvents.
func (d *driver) eventsAfter(after int64) (EventsPage, error) {
	page := EventsPage{Events: []core.Event{}, Done: d.done}
	for _, e := range d.events {
		if e.Seq > after {
			page.Events = append(page.Events, e)
			if len(page.Events) == maxPage {
				page.Done = false
				break
			}
		}
	}
	if n := len(page.Events); n > 0 {
		first, last := page.Events[0].Seq, page.Events[n-1].Seq
		for _, r := range d.retries {
			if r.After >= first && r.After <= last {
				page.Retries = append(page.Retries, r)
			}
		}
	}
	return page, nil
}

// launch answers QueryLaunch.
func (d *driver) launch() (LaunchReply, error) {
	if d.host.Queue == "" {
		return LaunchReply{}, errStarting
	}
	in := d.in
	in.Carried, in.Restart = nil, nil
	return LaunchReply{Input: in, Host: d.host}, nil
}

// logs answers QueryLogs.
func (d *driver) logs() (LogsReply, error) {
	r := LogsReply{Tails: []LogTail{}}
	if d.st == nil {
		return r, nil
	}
	for _, id := range d.st.StepOrder {
		if t, ok := d.tails[id]; ok {
			r.Tails = append(r.Tails, t)
		}
	}
	return r, nil
}

// validDecision refuses a decision that cannot win: the step is not
// waiting on a human (it was decided already, or never waited).
func (d *driver) validDecision(req DecideRequest) error {
	if d.st == nil || d.st.RunID == "" {
		return errStarting
	}
	if d.st.Steps[req.Step] != nil && !d.done && !d.st.Status.Terminal() &&
		d.st.Steps[req.Step].Status == core.WaitingOnHuman && !d.decidedInInbox(req.Step) {
		// The state is the truth: the wait may be recorded before the
		// driver has performed it (the worker mirrors the record first).
		return nil
	}
	return decisionRefused(d.st, d.in.RunID, req.Step, d.done)
}

// decisionRefused says why a decision of step cannot win in a run
// whose state is st (done: its workflow has ended), one whose step does
// not wait on a human: the step was decided already, or never waited.
func decisionRefused(st *core.State, runID string, step core.StepKey, done bool) error {
	s := st.Steps[step]
	switch {
	case s == nil:
		return fmt.Errorf("run %s has no step %s", runID, step)
	case done || st.Status.Terminal():
		return fmt.Errorf("run %s has already %s", runID, st.Status)
	case s.Human != nil:
		by := s.Human.By
		if by == "" {
			by = "a human"
		}
		verb := "rejected"
		if s.Human.Approved {
			verb = "approved"
		}
		return fmt.Errorf("step %s was already %s by %s; it is %s", step, verb, by, s.Status)
	}
	return fmt.Errorf("step %s is not waiting on a human; it is %s", step, s.Status)
}

// decide hands the core a human's decision.
func (d *driver) decide(ctx workflow.Context, req DecideRequest) (Decided, error) {
	if err := d.validDecision(req); err != nil {
		return Decided{}, err
	}
	in := req.Input
	if in.At == "" {
		in.At = workflow.Now(ctx).UTC().Format(time.RFC3339)
	}
	record.FillInputs(d.wf.Step(stepOf(req.Step)), &in)
	delete(d.awaiting, req.Step)
	d.inbox = append(d.inbox, core.HumanDecision{Step: req.Step, Input: in})
	return Decided{RunID: d.in.RunID, Step: req.Step, Approved: in.Approved, By: in.By}, nil
}

// validControl refuses control of a run that has ended, and states
// that are none.
func (d *driver) validControl(req ControlRequest) error {
	switch req.Desired {
	case core.Continuous, core.Pause, core.RunOnce, core.RunCleanup:
	default:
		return fmt.Errorf("unknown control state %q", req.Desired)
	}
	if d.done || d.st != nil && d.st.Status.Terminal() {
		return fmt.Errorf("run %s has already %s", d.in.RunID, d.st.Status)
	}
	return nil
}

// control hands the core a new desired control state.
func (d *driver) control(_ workflow.Context, req ControlRequest) (string, error) {
	if err := d.validControl(req); err != nil {
		return "", err
	}
	d.inbox = append(d.inbox, core.ControlChanged{Desired: req.Desired})
	return string(req.Desired), nil
}

// errStarting answers a query or an Update that comes before the run's
// workflow has read its workflow file: a first workflow task, which a
// worker runs, has not been done yet.
var errStarting = errors.New("the run is starting")
