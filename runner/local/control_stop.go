package local

import (
	"fmt"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// control.json's current_state says what the runner does, and the
// runner alone writes it: continuous when it starts to run sessions,
// the mode it is in at each change (SetControl), and pause when it
// stops — whether the run completed, failed, was interrupted, waits on
// a human with no runner, or ran out of a budget — since then no
// session runs (docs/operating-runs.md has the mapping). Its
// desired_state is the humans': the runner writes it only when the file
// has none (a missing file means continuous), and to end a one-shot
// state (run_once, run_cleanup) it carried out.

// controlStarted records that the runner starts with desired state
// desired: continuous when it will run sessions as they come. Other
// states are recorded by the core as it takes them up (SetControl).
func (x *run) controlStarted(desired core.ControlState) error {
	if desired != core.Continuous {
		return nil
	}
	return record.ReportControl(x.rec, x.dir, x.r.Clock.Now(), func(c *record.Control) {
		if c.DesiredState == "" {
			c.DesiredState = core.Continuous
		}
		c.CurrentState = core.Continuous
	})
}

// controlStopped records that the runner stopped: current_state pause.
// It does its best: the run's record is already written, and a failure
// to write control.json is said on the run's output, not returned.
func (x *run) controlStopped(res spec.Result, err error) {
	if x.log == nil {
		return
	}
	werr := record.ReportControl(x.rec, x.dir, x.r.Clock.Now(), func(c *record.Control) {
		if c.DesiredState == "" {
			c.DesiredState = core.Continuous
		}
		c.CurrentState = core.Pause
	})
	if werr != nil && err == nil {
		x.printf("warning: the runner stopped (%s) but could not say so in control.json: %v\n", stopWord(res), werr)
	}
}

// stopWord says in a word or two why a runner stopped.
func stopWord(res spec.Result) string {
	if res.Status == "" {
		return "an error"
	}
	return fmt.Sprintf("run %s", res.Status)
}
