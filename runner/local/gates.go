package local

import (
	"maps"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// usesGates reports whether any step of the run's workflow waits on
// gates of a gate-state file (found when the workflow is set, since the
// loop asks after every input).
func (x *run) usesGates() bool {
	return x.gated && x.opts.Invocation.GateStateFile != ""
}

// hasGates reports whether any step of wf waits on gates.
func hasGates(wf *config.Workflow) bool {
	for _, s := range wf.AllSteps() {
		if len(s.Gates()) > 0 {
			return true
		}
	}
	return false
}

// readGates reads the gate-state file; ok is false when it cannot be
// read or parsed (err says why), and gates then are not to change.
func (x *run) readGates() (gates map[string]bool, ok bool, err error) {
	gates, err = record.ReadGateFileAs(x.r.FS, x.opts.Invocation.GateStateFile, x.wf.Compat)
	return gates, err == nil, err
}

// pollGates reads the gate-state file and hands the core the gates
// when they changed.
func (x *run) pollGates() {
	gates, ok, err := x.readGates()
	if err != nil {
		if msg := err.Error(); x.warned["gates"] != msg {
			x.warned["gates"] = msg
			x.warn(core.StepKey{}, msg)
		}
		return
	}
	delete(x.warned, "gates")
	if ok && !maps.Equal(gates, x.gates) {
		x.gates = gates
		x.queue = append(x.queue, core.GatesChanged{Gates: maps.Clone(gates)})
	}
}

// startGates reads the gates as the run starts, for Begin.
func (x *run) startGates() map[string]bool {
	if !x.usesGates() {
		return nil
	}
	gates, ok, err := x.readGates()
	if err != nil {
		x.warned["gates"] = err.Error()
		x.warn(core.StepKey{}, err.Error())
	}
	if ok {
		x.gates = gates
	}
	return maps.Clone(x.gates)
}
