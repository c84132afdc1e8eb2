package local

import (
	"strings"
	"time"

	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
)

// The run record and the decision core's vocabulary live in package
// core, which does no I/O; the driver speaks of them by these names.

// ShellArg returns s as one argument of a command line a person copies
// into a shell: as it is when it holds nothing a shell would expand or
// split, else in single quotes ('stories[login].review': [...] is a glob).
func ShellArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// newEvent builds an event (core.NewEvent).
func newEvent(at time.Time, typ, step string, data any) core.Event {
	return core.NewEvent(at, typ, step, data)
}

// holderOf names a lock's holder as the core does.
func holderOf(h runlock.Holder) core.Holder {
	return core.Holder{PID: h.PID, Host: h.Host, StartedAt: h.StartedAt}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
