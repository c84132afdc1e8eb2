//go:build unix && !linux

package proc

import (
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// endSession kills what is left of the session's group. Without /proc
// there is no marker to look for, so a process that left the group
// escapes.
func endSession(_ afero.Fs, _ *mainSet, pgid int, _ string, _ bool, _ time.Time, _ *sweep) {
	_ = signalGroup(pgid, syscall.SIGKILL)
}

// sweep would hold the processes found of a session.
type sweep struct{}

// termEscaped does nothing: without /proc the session's escaped
// processes cannot be found.
func termEscaped(afero.Fs, *mainSet, int, string) *sweep { return nil }

// KillMarked kills nothing and returns 0: without /proc the processes
// that carry a marker cannot be found.
func KillMarked(string) int { return 0 }
