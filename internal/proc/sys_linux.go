//go:build linux

package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// outputPipe returns a pipe for a session's output: the read end in
// the runtime's poller, the write end blocking, as the session's
// processes expect it. os.Pipe makes both ends non-blocking and
// registers both with the poller, and exec then makes the write end
// blocking again: five system calls more per session.
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if err := syscall.SetNonblock(p[0], true); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

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
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// orphansGoToLeader reports whether the kernel reparents an orphan to
// the first live thread of its child subreaper's thread group — the
// main thread, which the Go runtime never lets exit — rather than
// possibly to another of its threads. Linux does since 3.19
// (find_new_reaper calls find_alive_thread, which walks the thread
// group from its leader); on an older kernel, or one whose release
// cannot be read, every thread's list of children must be read.
func orphansGoToLeader() bool {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return false
	}
	b := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return releaseAtLeast(string(b), 3, 19)
}

// releaseAtLeast reports whether a kernel release such as
// "6.8.0-45-generic" is major.minor or later.
func releaseAtLeast(release string, major, minor int) bool {
	majorStr, rest, ok := strings.Cut(release, ".")
	if !ok {
		return false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		rest = rest[:end]
	}
	ma, err1 := strconv.Atoi(majorStr)
	mi, err2 := strconv.Atoi(rest)
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// awaitExit blocks until the main process has exited, leaving it
// unreaped so that its process group id cannot be reused while what is
// left of the session is ended, and returns the function that reaps it.
// It is the waiter of last resort (newExitWaiter), used only where no
// pidfd could be opened, so it blocks in waitid at once.
func awaitExit(cmd *mainProc) (reap func() error) {
	waitExitedNoReapBlocking(cmd.p.Pid)
	return cmd.wait
}

// waitExitedNoReap blocks until pid has exited, leaving it a zombie. On
// an unexpected error it returns at once and the caller reaps as usual.
//
// It waits on a pidfd through the runtime's poller, so that no thread
// is held in a blocking waitid for the session's life; where pidfds are
// not available (Linux before 5.3) it blocks in waitid.
func waitExitedNoReap(pid int) {
	if waitPidfd(pid) {
		return
	}
	waitExitedNoReapBlocking(pid)
}

// waitExitedNoReapBlocking blocks in waitid until pid has exited,
// leaving it a zombie.
func waitExitedNoReapBlocking(pid int) {
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

// waitPidfd waits for pid to exit through a pidfd in the runtime's
// poller, leaving it a zombie; it reports false when pidfds cannot be
// used, and the caller waits otherwise.
func waitPidfd(pid int) bool {
	w := openPidfdWaiter(context.Background(), nil, pid)
	if w == nil {
		return false
	}
	defer w.close()
	return w.wait(time.Time{}, false) && !w.failed
}

// newExitWaiter returns the waiter of a session's main process: a
// pidfd in the runtime's poller, so that waiting holds neither a
// thread nor a goroutine of its own, or where pidfds cannot be used
// (Linux before 5.3) a goroutine blocked in waitid.
func newExitWaiter(ctx context.Context, cmd *mainProc) exitWaiter {
	if w := openPidfdWaiter(ctx, cmd, cmd.p.Pid); w != nil {
		return w
	}
	return newChanWaiter(ctx, cmd)
}

// pidfdWaiter waits for a process to exit through a pidfd.
type pidfdWaiter struct {
	pid  int
	cmd  *mainProc
	ctx  context.Context
	f    *os.File
	rc   syscall.RawConn
	stop func() bool // stops the context's wake-up

	exited bool
	// failed says that waiting through the pidfd failed unexpectedly,
	// and the waiter waited in waitid instead.
	failed bool
}

// openPidfdWaiter opens a pidfd of pid, or returns nil if it cannot.
// Once ctx is done, a wait in progress returns.
func openPidfdWaiter(ctx context.Context, cmd *mainProc, pid int) *pidfdWaiter {
	const (
		sysPidfdOpen  = 434
		pidfdNonblock = syscall.O_NONBLOCK
	)
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), pidfdNonblock, 0)
	if errno != 0 {
		return nil
	}
	f := os.NewFile(fd, "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil
	}
	w := &pidfdWaiter{pid: pid, cmd: cmd, ctx: ctx, f: f, rc: rc}
	if ctx.Done() != nil {
		w.stop = context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	}
	return w
}

func (w *pidfdWaiter) wait(deadline time.Time, interruptible bool) bool {
	if w.exited {
		return true
	}
	_ = w.f.SetReadDeadline(deadline)
	// A context done before the deadline was set may have had its
	// wake-up overwritten; one done after it wakes the read below.
	if interruptible && w.ctx.Err() != nil {
		return false
	}
	err := w.rc.Read(func(fd uintptr) bool {
		const (
			pPidfd  = 3 // idtype_t P_PIDFD
			wNohang = 1
		)
		var info [128]byte // siginfo_t
		// si_pid follows si_signo, si_errno and si_code, padded to
		// the union's alignment: offset 16 on 64-bit, 12 on 32-bit.
		pidAt := 3 * 4
		if unsafe.Sizeof(uintptr(0)) == 8 {
			pidAt = 16
		}
		for {
			_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPidfd, fd,
				uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT|wNohang, 0, 0)
			switch errno {
			case syscall.EINTR:
				continue
			case 0:
				if *(*int32)(unsafe.Pointer(&info[pidAt])) == 0 {
					return false // not exited yet: wait for the pidfd to be readable
				}
				w.exited = true
			default:
				w.failed = true
			}
			return true
		}
	})
	if w.failed || err != nil && !w.exited && !errors.Is(err, os.ErrDeadlineExceeded) {
		// The pidfd cannot tell after all: block in waitid until the
		// process exits.
		waitExitedNoReapBlocking(w.pid)
		w.exited, w.failed = true, true
	}
	return w.exited
}

func (w *pidfdWaiter) reap() error { return w.cmd.wait() }

func (w *pidfdWaiter) close() {
	if w.stop != nil {
		w.stop()
	}
	_ = w.f.Close()
}

// Private makes this process non-dumpable (PR_SET_DUMPABLE 0): a
// process of the same user — a session — can then neither attach to it
// nor read its memory or /proc/<pid>/environ, where the secrets a
// runner hands its sessions live. Its children are dumpable again once
// they exec.
func Private() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
