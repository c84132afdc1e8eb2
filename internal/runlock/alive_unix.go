//go:build unix

package runlock

import (
	"errors"
	"os"
	"syscall"
)

// ProcessAlive reports whether the holder's process may still be running.
// On this host it asks the kernel (kill with signal 0; a process that
// exists but belongs to another user counts as alive). For a holder on
// another host it cannot know and answers true.
func ProcessAlive(h Holder) bool {
	host, err := os.Hostname()
	if err != nil || h.Host != host {
		return true
	}
	if h.PID <= 0 {
		return false
	}
	err = syscall.Kill(h.PID, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
