package local

import (
	"time"

	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// The run record and the decision core's vocabulary live in package
// core, which does no I/O; the driver speaks of them by these names.

// newEvent builds an event (core.NewEvent).
func newEvent(at time.Time, typ string, step core.StepKey, data any) core.Event {
	return core.NewEvent(at, typ, step, data)
}

// holderOf names a lock's holder as the core does.
func holderOf(h runlock.Holder) record.Holder {
	return record.Holder{PID: h.PID, Host: h.Host, StartedAt: h.StartedAt}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
