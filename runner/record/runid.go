package record

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
)

// ErrNoRun is returned when a run does not exist.
var ErrNoRun = errors.New("no such run")

// HeldError says a run is held by a live runner: the one its lock
// names (its Token is not needed to say who it is).
type HeldError struct {
	RunID  string
	Holder runlock.Holder
}

func (e *HeldError) Error() string {
	since := ""
	if !e.Holder.StartedAt.IsZero() {
		since = " since " + e.Holder.StartedAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("run %s is held by a live runner (pid %d on %s%s); wait for it, or stop it first",
		e.RunID, e.Holder.PID, e.Holder.Host, since)
}

// MaxRunID is the longest run id: a run id names a directory, and every
// name on disk stays under 255 bytes (docs/architecture.md, "The
// record").
const MaxRunID = 64

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckRunID returns an error wrapping core.ErrInvalid unless id is a
// valid run id: [A-Za-z0-9][A-Za-z0-9._-]{0,63}, and not "." or "..".
// A run id names a directory under .agents/runs, so nothing else may
// pass: no path separators, no leading dash (it would read as a flag),
// no spaces or control characters.
func CheckRunID(id string) error {
	if len(id) <= MaxRunID && runIDPattern.MatchString(id) && id != "." && id != ".." {
		return nil
	}
	shown := id
	if len(shown) > MaxRunID+16 {
		shown = shown[:MaxRunID+16] + "..."
	}
	why := "a run id is 1 to 64 characters of letters, digits, '.', '_' and '-', starting with a letter or digit"
	switch {
	case id == "":
		return core.Invalid("empty run id: %s", why)
	case len(id) > MaxRunID:
		return core.Invalid("run id %q is %d bytes long: %s", shown, len(id), why)
	case strings.ContainsAny(id, `/\`):
		return core.Invalid("run id %q contains a path separator: %s", shown, why)
	}
	return core.Invalid("invalid run id %q: %s", shown, why)
}
