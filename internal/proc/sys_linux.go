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

// reap waits for the main process to exit, kills what is left of its
// group while the unreaped main process still holds the group id, and
// then reaps it.
func reap(cmd *exec.Cmd) error {
	pid := cmd.Process.Pid
	waitExitedNoReap(pid)
	_ = signalGroup(pid, syscall.SIGKILL)
	return cmd.Wait()
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
