//go:build unix

package runlock

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// ProcessAlive reports whether the holder's process may still be running.
// On this host it asks the kernel (kill with signal 0; a process that
// exists but belongs to another user counts as alive); a process that
// has exited but is not reaped yet (a zombie, where /proc tells) is
// not alive. For a holder on another host it cannot know and answers
// true.
func ProcessAlive(h Holder) bool {
	host, err := os.Hostname()
	if err != nil || h.Host != host {
		return true
	}
	if h.PID <= 0 {
		return false
	}
	err = syscall.Kill(h.PID, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(h.PID)
}

// zombie reports whether /proc says pid has exited and waits to be
// reaped; without /proc it cannot tell, and says no.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}
