package local

import (
	"errors"
	"maps"
	"time"

	"github.com/flow-run/flow/runner/core"
)

// A runner that waits on a human takes edits of its workflow file as a
// paused run that goes on does (reload): when the file changes while
// the run waits, and when a decision arrives, the runner reloads it if
// no session is in flight — a new core over the new plan takes the run
// from its state, new steps and vars are recorded — and says the
// waiting steps' messages again, rendered with the vars as they are
// now. An edit it cannot take is said, never dropped in silence: one
// that does not load, or one that weakens the run's gates and was not
// accepted (flow resume --accept-edits) — the run goes on with the
// workflow as it was — or one made while sessions run (taken once none
// does, or at the next flow continue or flow resume).

// fileStamp is what tells that a workflow file was written: its size
// and modification time.
type fileStamp struct {
	size int64
	mod  time.Time
}

// workflowStamp returns the stamp of the run's workflow file now, or
// the zero stamp when it cannot be read.
func (x *run) workflowStamp() fileStamp {
	fi, err := x.r.FS.Stat(x.wf.File)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{size: fi.Size(), mod: fi.ModTime()}
}

// sessionsInFlight reports whether a session runs: a step or an
// instance RUNNING (a loop step runs no session of its own).
func (x *run) sessionsInFlight() bool {
	if x.core.Running() > 0 {
		return true
	}
	for _, s := range x.st.Steps {
		if s != nil && s.Status == core.Running && s.LoopIndex == nil {
			return true
		}
	}
	return false
}

// reloadWhileWaiting takes an edit of the workflow file made while the
// run waits on a human (see above). decided is true when a decision
// has just arrived: an edit not yet taken is then said even when the
// file's stamp did not change since it was last looked at. It reports
// whether a new core took the run (its Begin is queued).
func (x *run) reloadWhileWaiting(decided bool) bool {
	if x.wf.File == "" || x.core.Paused() {
		return false // a paused run takes edits when it goes on
	}
	stamp := x.workflowStamp()
	if stamp == x.wfStamp && !(decided && x.editPending) {
		return false
	}
	x.wfStamp = stamp
	if x.sessionsInFlight() {
		if !x.editPending {
			x.editPending = true
			x.warn(core.StepKey{}, "the workflow file changed while sessions run: the edit is not applied yet; it is taken once no session runs while the run waits, or at flow continue or flow resume")
		}
		return false
	}
	x.editPending = false
	control := x.core.Control()
	changed, err := x.reload()
	if err != nil {
		if msg := err.Error(); x.warned["reload"] != msg {
			x.warned["reload"] = msg
			var weak *weakenedError
			if errors.As(err, &weak) {
				x.warn(core.StepKey{}, "the edit of the workflow file is not applied, and the run goes on with the workflow as it was: "+msg+"; undo the edit, or let a person apply it: flow resume "+x.st.RunID+" --accept-edits")
			} else {
				x.warn(core.StepKey{}, "the edited workflow does not load; the edit is not applied, and the run goes on with the workflow as it was:\n"+msg)
			}
		}
		return false
	}
	delete(x.warned, "reload")
	if !changed {
		return false
	}
	x.queue = append(x.queue, core.Begin{Control: control, Gates: maps.Clone(x.gates)})
	for step := range x.awaiting {
		if msg := x.humanMessage(step); msg != "" {
			x.printf("%s: the workflow changed; still waiting on a human: %q\n", step, msg)
		} else {
			x.printf("%s: the workflow changed; still waiting on a human\n", step)
		}
	}
	return true
}

// noteWorkflowStamp remembers the workflow file's stamp as the run
// loaded it.
func (x *run) noteWorkflowStamp() { x.wfStamp = x.workflowStamp() }
