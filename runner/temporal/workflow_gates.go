package temporal

import (
	"maps"

	"go.temporal.io/sdk/workflow"

	"github.com/flow-run/flow/runner/core"
)

// The gate-state file (flow run --gate-state-file) on Temporal: the
// file is on the run's worker, so the workflow reads it there with a
// short activity, as the run starts and then every GatePoll of
// workflow time while a step waits for gates, and hands the core the
// gates when they changed. A file that cannot be read is warned of
// once and changes nothing, as locally.

// usesGates reports whether the run reads a gate-state file: one is
// given and a step of the workflow waits on gates.
func (d *driver) usesGates() bool {
	if d.in.Invocation.GateStateFile == "" {
		return false
	}
	for _, s := range d.wf.AllSteps() {
		if len(s.Gates()) > 0 {
			return true
		}
	}
	return false
}

// gated reports whether a step waits for gates.
func (d *driver) gated() bool {
	for _, id := range d.st.StepOrder {
		if s := d.st.Steps[id]; s != nil && s.Status == core.Pending && len(s.WaitingGates) > 0 {
			return true
		}
	}
	return false
}

// readGates reads the gate-state file on the run's worker; ok is false
// when it could not be read (a warning says why, once).
func (d *driver) readGates(ctx workflow.Context) (map[string]bool, bool) {
	actx := workflow.WithActivityOptions(ctx, shortOptions(d.host.Queue))
	var reply GatesReply
	err := workflow.ExecuteActivity(actx, ActivityGates, GatesRequest{RunID: d.in.RunID, Path: d.in.Invocation.GateStateFile, Compat: d.wf.Compat}).Get(ctx, &reply)
	if err != nil {
		reply.Err = "read the gate-state file on " + d.host.Name + ": " + err.Error()
	}
	if reply.Err != "" {
		if reply.Err != d.gateWarned {
			d.gateWarned = reply.Err
			d.record([]core.Event{core.NewEvent(workflow.Now(ctx), core.EvWarning, core.StepKey{}, core.Note{Message: reply.Err})}, false)
		}
		return nil, false
	}
	d.gateWarned = ""
	if reply.Gates == nil {
		reply.Gates = map[string]bool{}
	}
	return reply.Gates, true
}

// pollGates reads the gate-state file every GatePoll while a step
// waits for gates, until the run ends or continues as new (the next
// segment polls on).
func (d *driver) pollGates(ctx workflow.Context) {
	every := d.in.GatePoll
	if every <= 0 {
		every = DefaultGatePoll
	}
	over := func() bool { return d.done || d.draining || d.cancelled }
	for {
		if err := workflow.Await(ctx, func() bool { return over() || d.gated() }); err != nil || over() {
			return
		}
		if err := workflow.NewTimer(ctx, every).Get(ctx, nil); err != nil || over() {
			return
		}
		d.inflight++
		gates, ok := d.readGates(ctx)
		d.inflight--
		if ok && !maps.Equal(gates, d.gates) {
			d.gates = gates
			d.inbox = append(d.inbox, core.GatesChanged{Gates: maps.Clone(gates)})
		}
		d.wake = true
	}
}
