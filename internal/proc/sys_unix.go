//go:build unix && !linux

package proc

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts the session in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// reap waits for the main process and then kills what is left of its
// group. Between the two the group id could in principle be reused; on
// these systems there is no portable way to wait without reaping.
func reap(cmd *exec.Cmd) error {
	err := cmd.Wait()
	_ = signalGroup(cmd.Process.Pid, syscall.SIGKILL)
	return err
}

// zombie reports whether pid has exited but not been reaped; without
// /proc it cannot tell, and says no.
func zombie(int) bool { return false }
