//go:build linux

package proc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/flow-run/flow/internal/confine"
	"github.com/spf13/afero"
)

// Linux system call numbers shared by every architecture Go supports
// there, and the waitid id type of a pidfd.
const (
	sysPidfdSendSignal = 424
	sysPidfdOpen       = 434
	pPIDFD             = 3
)

const (
	// sweepRounds bounds how many times a sweep looks again for
	// processes forked while it was stopping the ones it had found.
	sweepRounds = 16
	// killWait bounds how long a sweep waits for SIGKILLed processes to
	// exit before it looks again for late forks and returns. A process
	// that has been sent SIGKILL runs no more code of its own, but one
	// stuck in the kernel (waiting for a disk) may take long to exit, or
	// never: reapWait bounds how long it is then waited for, to be
	// reaped, in the background.
	killWait = 200 * time.Millisecond
	reapWait = time.Minute
	// unsureWait bounds how long a sweep waits for a process that shows
	// an empty environment to show its real one: a process in the middle
	// of an exec has none for a moment.
	unsureWait = 200 * time.Millisecond
	// pfKthread is the flag of a kernel thread in /proc/PID/stat.
	pfKthread = 0x00200000
	// statCap and environCap bound the reads of /proc/PID/stat and
	// /proc/PID/environ. An environment is at most a quarter of the
	// stack limit, 2 MiB by default.
	statCap    = 4 << 10
	environCap = 8 << 20
)

// sweep finds the processes of one session in /proc and ends them. A
// process belongs to the session if it is in the session's process
// group (whose id the unreaped main process holds, so that it cannot
// name anybody else's group) or if its environment carries the
// session's token. Each process found is held through a pidfd, opened
// before the process was examined: a signal or a wait through it
// reaches that process or, once it is gone, nothing — never a process
// that reused its pid.
type sweep struct {
	fs    afero.Fs
	self  int
	pgid  int // the session's group, or 0 when not known
	token string
	// since is the start time of the session's main process in clock
	// ticks since boot: a process started earlier cannot descend from
	// it, and its environment is not read. 0 reads every environment.
	since uint64
	// outsideGroup leaves the members of the group out, for a caller
	// that signals the group itself.
	outsideGroup bool
	// reap has the sweep reap the processes it found that are the
	// runner's children (reparented to it as subreaper).
	reap bool

	members map[int]*member
	// buf reads environments, one after the other.
	buf *bufio.Reader
}

// member is a process found to belong to the session.
type member struct {
	pid int
	fd  int // pidfd, or -1 if the kernel gave none
	// gone says the process has exited and has been reaped (by the
	// sweep or by its parent), so that its pid no longer names it.
	gone bool
	// killed says the process was sent SIGKILL.
	killed bool
}

// procStat holds the fields of /proc/PID/stat that a sweep uses.
type procStat struct {
	state byte
	ppid  int
	pgrp  int
	flags uint64
	start uint64
}

func newSweep(fsys afero.Fs, pgid int, token string, since uint64) *sweep {
	return &sweep{fs: fsys, self: os.Getpid(), pgid: pgid, token: token, since: since,
		members: map[int]*member{}}
}

// close releases the pidfds the sweep holds.
func (w *sweep) close() {
	for _, m := range w.members {
		if m.fd >= 0 {
			_ = syscall.Close(m.fd)
		}
	}
}

// scan adds the session's processes that the sweep does not know yet
// and returns how many it added.
func (w *sweep) scan() int {
	d, err := w.fs.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	added := 0
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 1 || pid == w.self || pid == w.pgid {
			continue
		}
		if m, ok := w.members[pid]; ok {
			if !w.reaped(m) {
				continue
			}
			// The pid may name another process now.
			if m.fd >= 0 {
				_ = syscall.Close(m.fd)
			}
			delete(w.members, pid)
		}
		if m := w.examine(pid); m != nil {
			w.members[pid] = m
			added++
		}
	}
	return added
}

// examine returns pid as a member if it belongs to the session.
func (w *sweep) examine(pid int) *member {
	fd, err := pidfdOpen(pid)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	if err != nil {
		fd = -1 // an old kernel: fall back to the pid
	}
	if w.belongs(pid) {
		return &member{pid: pid, fd: fd}
	}
	if fd >= 0 {
		_ = syscall.Close(fd)
	}
	return nil
}

// belongs reports whether pid belongs to the session. A process that
// shows an empty environment is looked at again for up to unsureWait:
// it may be in the middle of an exec.
func (w *sweep) belongs(pid int) bool {
	delay := time.Millisecond
	deadline := time.Now().Add(unsureWait)
	for {
		st, ok := readStat(w.fs, pid)
		if !ok {
			return false
		}
		if w.pgid > 0 && st.pgrp == w.pgid {
			return !w.outsideGroup
		}
		if st.start < w.since || st.state == 'Z' || st.state == 'X' || st.flags&pfKthread != 0 {
			return false // a zombie's environment is gone; a kernel thread has none
		}
		switch w.environ(pid) {
		case environMarked:
			return true
		case environUnmarked:
			return false
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(delay, left))
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// signal sends sig to every member that has not exited; it returns how
// many it reached.
func (w *sweep) signal(sig syscall.Signal) int {
	n := 0
	for _, m := range w.members {
		if !m.gone && w.signalOne(m, sig) == nil {
			n++
		}
	}
	return n
}

func (w *sweep) signalOne(m *member, sig syscall.Signal) error {
	if m.fd >= 0 {
		return pidfdSignal(m.fd, sig)
	}
	return syscall.Kill(m.pid, sig)
}

// reaped reports whether m no longer exists, not even as a zombie.
func (w *sweep) reaped(m *member) bool {
	if !m.gone && errors.Is(w.signalOne(m, 0), syscall.ESRCH) {
		m.gone = true
	}
	return m.gone
}

// exited reports whether m has exited, reaping it first if it is the
// runner's child and the sweep reaps.
func (w *sweep) exited(m *member) bool {
	if w.reap && !m.gone {
		w.reapOne(m)
	}
	if w.reaped(m) {
		return true
	}
	st, ok := readStat(w.fs, m.pid)
	return ok && (st.state == 'Z' || st.state == 'X')
}

// reapOne reaps m if it is a zombie child of the runner. Through a
// pidfd the wait can reach no other process; without one, m is reaped
// by pid only after /proc said it is the runner's zombie child, which
// nothing else in the runner waits for.
func (w *sweep) reapOne(m *member) {
	if m.fd >= 0 {
		var info [128]byte // siginfo_t
		_, _, _ = syscall.Syscall6(syscall.SYS_WAITID, pPIDFD, uintptr(m.fd),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOHANG, 0, 0)
		return
	}
	if st, ok := readStat(w.fs, m.pid); ok && st.ppid == w.self && st.state == 'Z' {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(m.pid, &ws, syscall.WNOHANG, nil)
	}
}

// settle waits until every member has exited, reaping those it may, or
// until deadline; it reports whether they all exited.
func (w *sweep) settle(deadline time.Time) bool {
	delay := time.Millisecond
	for {
		all := true
		for _, m := range w.members {
			if !w.exited(m) {
				all = false
			}
		}
		if all {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(delay, left))
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// kill stops every member with SIGSTOP, looking again for processes
// they forked until no new ones turn up, so that none can fork while
// the others die, then sends them SIGKILL and waits for them to exit.
// It returns how many processes it sent SIGKILL to.
func (w *sweep) kill() int {
	killed := 0
	for range sweepRounds {
		for range sweepRounds {
			w.signal(syscall.SIGSTOP)
			if w.scan() == 0 {
				break
			}
		}
		for _, m := range w.members {
			if !m.gone && !m.killed && w.signalOne(m, syscall.SIGKILL) == nil {
				m.killed = true
				killed++
			}
		}
		if w.pgid > 0 && !w.outsideGroup {
			_ = signalGroup(w.pgid, syscall.SIGKILL)
		}
		w.settle(time.Now().Add(killWait))
		// A fork in flight when its parent was stopped shows up late.
		if w.scan() == 0 {
			break
		}
	}
	return killed
}

// endSession ends what is left of a session whose main process pgid
// has exited but is not reaped yet: its group and every process that
// carries token. With term, each gets SIGTERM first; either way they
// have until deadline to exit before they get SIGKILL. The runner's
// own children among them are reaped.
//
// prior, if not nil, is the sweep with which termEscaped stopped the
// session: the processes it found are still recognised if they have
// exited since, when their environment can no longer be read, and are
// reaped. endSession closes it.
//
// A process that has not exited killWait after its SIGKILL is left to a
// goroutine that reaps it once it exits (within reapWait).
func endSession(fsys afero.Fs, pgid int, token string, since uint64, term bool, deadline time.Time, prior *sweep) {
	w := prior
	if w == nil {
		w = newSweep(fsys, pgid, token, since)
	}
	w.outsideGroup = false
	w.reap = true
	if w.scan() == 0 && len(w.members) == 0 {
		_ = signalGroup(pgid, syscall.SIGKILL)
		w.close()
		return
	}
	if term {
		w.signal(syscall.SIGTERM)
	}
	w.settle(deadline)
	w.kill()
	if w.settle(time.Now()) {
		w.close()
		return
	}
	go func() {
		defer w.close()
		w.settle(time.Now().Add(reapWait))
	}()
}

// termEscaped sends SIGTERM to the processes of a running session that
// carry its token but have left its group, pgid (which the caller
// signals itself). It returns the sweep, holding what it found, for
// endSession.
func termEscaped(fsys afero.Fs, pgid int, token string, since uint64) *sweep {
	w := newSweep(fsys, pgid, token, since)
	w.outsideGroup = true
	w.scan()
	w.signal(syscall.SIGTERM)
	return w
}

// KillMarked sends SIGKILL to every process whose environment carries
// the session marker token (see Marker), wherever it is in the process
// tree, and returns how many it killed. It is meant for a runner that
// takes over a dead runner's run: the dead runner's sessions left
// processes that no process group may hold any more (setsid, daemons),
// but that still carry the session's marker. It does not reap them:
// they are not this runner's children. It never touches the calling
// process, and kills nothing for a token that no session could have.
func KillMarked(token string) int {
	if !validToken(token) {
		return 0
	}
	w := newSweep(afero.NewOsFs(), 0, token, 0)
	defer w.close()
	if w.scan() == 0 {
		return 0
	}
	return w.kill()
}

// startTime returns when pid started, in clock ticks since boot, or 0
// if /proc cannot say.
func startTime(fsys afero.Fs, pid int) uint64 {
	st, ok := readStat(fsys, pid)
	if !ok {
		return 0
	}
	return st.start
}

// readStat reads the fields a sweep uses from /proc/PID/stat.
func readStat(fsys afero.Fs, pid int) (procStat, bool) {
	b, err := confine.ReadFile(fsys, "/proc/"+strconv.Itoa(pid)+"/stat", statCap, "/proc")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(b)
}

// parseStat parses /proc/PID/stat. The fields follow the command name,
// which is in parentheses and may itself hold spaces or parentheses.
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	// state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	// cmajflt utime stime cutime cstime priority nice num_threads
	// itrealvalue starttime
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	flags, err3 := strconv.ParseUint(f[6], 10, 64)
	start, err4 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp, flags: flags, start: start}, true
}

// environState is what the environment of a process says of a session.
type environState int

const (
	environUnmarked environState = iota
	environMarked
	// environEmpty: the environment is empty, or not there yet.
	environEmpty
)

// environ reads the environment of pid for the sweep's token. A process
// whose environment cannot be read (another user's, or one made
// non-dumpable) is unmarked.
func (w *sweep) environ(pid int) environState {
	f, err := confine.Open(w.fs, "/proc/"+strconv.Itoa(pid)+"/environ", "/proc")
	if err != nil {
		return environUnmarked
	}
	defer f.Close()
	r := io.LimitReader(f, environCap)
	if w.buf == nil {
		w.buf = bufio.NewReaderSize(r, markerEntryCap)
	} else {
		w.buf.Reset(r)
	}
	if _, err := w.buf.Peek(1); err != nil {
		return environEmpty
	}
	if hasMarkerBuffered(w.buf, w.token) {
		return environMarked
	}
	return environUnmarked
}

func pidfdOpen(pid int) (int, error) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func pidfdSignal(fd int, sig syscall.Signal) error {
	_, _, errno := syscall.Syscall6(sysPidfdSendSignal, uintptr(fd), uintptr(sig), 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
