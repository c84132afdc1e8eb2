package local

import (
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// readControl returns the desired state for the runner. A missing file
// means continuous; a malformed file or unknown state means pause, with
// a warning event, and the file is rewritten valid.
func (x *run) readControl() (core.ControlState, error) {
	c, err := record.ReadControlIn(x.root)
	if err == nil && c == nil {
		return core.Continuous, nil
	}
	if err == nil {
		return c.DesiredState, nil
	}
	now := x.r.Clock.Now()
	x.warn(core.StepKey{}, err.Error()+"; treated as pause")
	cur := x.core.Control()
	if cur == "" {
		cur = core.Pause
	}
	if werr := record.UpdateControl(x.rec, x.dir, now, func(c *record.Control) {
		*c = record.Control{DesiredState: core.Pause, CurrentState: cur, SetBy: "flow", Note: "rewritten: " + err.Error()}
	}); werr != nil {
		return "", werr
	}
	return core.Pause, nil
}

// writeControlCurrent records what the runner does. Desired is written
// too only when the runner itself ends a one-shot state (run_once and
// run_cleanup turn into pause), and then only if no human changed it
// meanwhile.
func (x *run) writeControlCurrent(desired, current core.ControlState, note string) error {
	return record.UpdateControl(x.rec, x.dir, x.r.Clock.Now(), func(c *record.Control) {
		if desired == core.Pause && (c.DesiredState == core.RunOnce || c.DesiredState == core.RunCleanup || c.DesiredState == "") {
			c.DesiredState = core.Pause
			c.SetBy = "flow"
			c.Note = note
		}
		if c.DesiredState == "" {
			c.DesiredState = desired
		}
		c.CurrentState = current
	})
}
