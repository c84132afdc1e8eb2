//go:build unix && !linux

package proc

import (
	"context"
	"os"
	"syscall"
)

// outputPipe returns a pipe for a session's output.
func outputPipe() (r, w *os.File, err error) { return os.Pipe() }

// sysProcAttr puts the session in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// enableSubreaper does nothing: only Linux has child subreapers.
func enableSubreaper() error { return nil }

// awaitExit waits for the main process and returns its outcome. Between
// this and the group kill that follows, the group id could in principle
// be reused; on these systems there is no portable way to wait without
// reaping.
func awaitExit(cmd *mainProc) (reap func() error) {
	err := cmd.wait()
	return func() error { return err }
}

// orphansGoToLeader says no: only Linux has child subreapers.
func orphansGoToLeader() bool { return false }

// zombie reports whether pid has exited but not been reaped; without
// /proc it cannot tell, and says no.
func zombie(int) bool { return false }

// newExitWaiter returns the waiter of a session's main process: a
// goroutine of its own.
func newExitWaiter(ctx context.Context, cmd *mainProc) exitWaiter {
	return newChanWaiter(ctx, cmd)
}

// Private does nothing here: the guard it gives on Linux
// (PR_SET_DUMPABLE) has no portable equivalent.
func Private() error { return nil }
