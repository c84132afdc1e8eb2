//go:build linux

package proc

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"unsafe"
)

// sysProcAttr puts the session in its own process group and has the
// kernel kill it if the runner dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// enableSubreaper makes the runner the child subreaper of its
// descendants (PR_SET_CHILD_SUBREAPER): a process orphaned inside a
// session is reparented to the runner rather than to init, which lets
// the runner reap the session's escaped processes once it has killed
// them. The setting is process-wide and inherited by no child.
func enableSubreaper() error {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}

// awaitExit blocks until the main process has exited, leaving it
// unreaped so that its process group id cannot be reused while what is
// left of the session is ended, and returns the function that reaps it.
func awaitExit(cmd *exec.Cmd) (reap func() error) {
	waitExitedNoReap(cmd.Process.Pid)
	return cmd.Wait
}

// waitExitedNoReap blocks until pid has exited, leaving it a zombie. On
// an unexpected error it returns at once and the caller reaps as usual.
func waitExitedNoReap(pid int) {
	const pPID = 1     // idtype_t P_PID
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// zombie reports whether pid has exited but not been reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and
	// may itself hold spaces or parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}
