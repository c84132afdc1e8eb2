package local

import (
	"time"

	"github.com/flow-run/flow/runner/core"
)

// The run record and the decision core's vocabulary live in package
// core, which does no I/O; the driver speaks of them by these names.

// newEvent builds an event (core.NewEvent).
func newEvent(at time.Time, typ string, step core.StepKey, data any) core.Event {
	return core.NewEvent(at, typ, step, data)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
