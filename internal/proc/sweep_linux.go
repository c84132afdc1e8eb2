//go:build linux

package proc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
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
	// statCap, environCap and childrenCap bound the reads of
	// /proc/PID/stat, /proc/PID/environ and
	// /proc/PID/task/TID/children. An environment is at most a quarter
	// of the stack limit, 2 MiB by default; a list of children holds at
	// most 8 bytes per child.
	statCap     = 4 << 10
	environCap  = 8 << 20
	childrenCap = 1 << 20
)

// sweep finds the processes of one session and ends them. A process
// belongs to the session if it is in the session's process group
// (whose id the unreaped main process holds, so that it cannot name
// anybody else's group) or if its environment carries the session's
// token; when the sweep walks the runner's process tree (tree), so does
// every descendant of a process that belongs. Each process found is
// held through a pidfd, opened before the process was examined: a
// signal or a wait through it reaches that process or, once it is gone,
// nothing — never a process that reused its pid.
type sweep struct {
	fs    afero.Fs
	self  int
	pgid  int // the session's group, or 0 when not known
	token string
	// since is the start time of the session's main process in clock
	// ticks since boot: a process started earlier cannot descend from
	// it, and its environment is not read. 0 reads every environment.
	// While sinceOf is not 0, since is still to be read from the start
	// time of the process sinceOf, when first needed.
	since   uint64
	sinceOf int
	// tree has the sweep look for the session's processes in the
	// runner's process tree rather than in all of /proc (see
	// scanTree); it is cleared if the kernel cannot list a process's
	// children. mains holds the main processes of the sessions of the
	// runner's starter, which are not the session's orphans.
	tree  bool
	mains *mainSet
	// mainLive says that the main process (pgid) has not exited, so
	// that its children are still its own rather than the runner's.
	mainLive bool
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

// newSessionSweep returns a sweep for the session whose main process,
// not yet reaped, is pgid: it walks the runner's process tree if mains
// says it may, and reads the main process's start time only if it must
// examine a process by its environment.
func newSessionSweep(fsys afero.Fs, mains *mainSet, pgid int, token string) *sweep {
	w := newSweep(fsys, pgid, token, 0)
	w.sinceOf = pgid
	w.mains = mains
	w.tree = mains.walksTree()
	return w
}

// close releases the pidfds the sweep holds.
func (w *sweep) close() {
	for _, m := range w.members {
		release(m)
	}
}

// release closes the pidfd of m, if it has one.
func release(m *member) {
	if m.fd >= 0 {
		_ = syscall.Close(m.fd)
		m.fd = -1
	}
}

// known reports whether pid is a member that has not been reaped. A
// member that has been is forgotten: its pid may name another process
// now.
func (w *sweep) known(pid int) bool {
	m, ok := w.members[pid]
	if !ok {
		return false
	}
	if !w.reaped(m) {
		return true
	}
	release(m)
	delete(w.members, pid)
	return false
}

// scan adds the session's processes that the sweep does not know yet
// and returns how many it added. It walks the runner's process tree if
// the sweep may, and looks through all of /proc otherwise, or if the
// kernel cannot list a process's children.
func (w *sweep) scan() int {
	if !w.tree {
		return w.scanProc()
	}
	added, ok := w.scanTree()
	if ok {
		return added
	}
	w.tree = false
	return added + w.scanProc()
}

// scanProc adds the session's processes that the sweep does not know
// yet, looking at every process in /proc, and returns how many it
// added.
func (w *sweep) scanProc() int {
	d, err := w.fs.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	added := 0
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 1 || pid == w.self || pid == w.pgid || w.known(pid) {
			continue
		}
		m, v := w.examine(pid)
		if m == nil {
			continue
		}
		if v == grouped && w.outsideGroup {
			release(m)
			continue
		}
		w.members[pid] = m
		added++
	}
	return added
}

// scanTree adds the session's processes that the sweep does not know
// yet, found in the runner's process tree, and returns how many it
// added. It reports false if the kernel cannot list the children of the
// runner or of a member (no CONFIG_PROC_CHILDREN, or a list too long
// to read): the caller must then look through all of /proc.
//
// The runner is a child subreaper and the main process is not reaped
// before the session has ended, so every living descendant of the
// session lies in the subtree of one of the runner's children: the
// main process itself while it runs (mainLive), and the orphans of the
// session, reparented to the runner. Each of the runner's children
// other than a main process (the set mains) is examined as scanProc
// examines any process; below the ones that belong, every descendant
// belongs, whatever its group or environment.
//
// A process whose parent exits while the subtrees are walked moves to
// the runner's list of children, possibly from a part of the tree not
// walked yet: the runner's list is read again after every walk, until
// it shows no process it did not show before. When no process was
// walked, nothing can have moved out of sight, and one reading is
// enough.
func (w *sweep) scanTree() (added int, ok bool) {
	var walk, transient []*member
	defer func() {
		for _, m := range transient {
			release(m)
		}
	}()
	keep := func(m *member, v verdict) {
		walk = append(walk, m)
		if v == grouped && w.outsideGroup {
			// The caller signals the group; its processes are only
			// walked through, to their descendants outside it.
			transient = append(transient, m)
			return
		}
		w.members[m.pid] = m
		added++
	}
	if w.mainLive {
		// The main process is the runner's unreaped child: its pid is
		// its own without a pidfd.
		walk = append(walk, &member{pid: w.pgid, fd: -1})
	}
	var listed, seen map[int]bool
	for {
		for len(walk) > 0 {
			p := walk[len(walk)-1]
			walk = walk[:len(walk)-1]
			if seen == nil {
				seen = map[int]bool{}
			}
			if seen[p.pid] {
				continue
			}
			seen[p.pid] = true
			kids, err := w.children(p.pid, false)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return added, false
			}
			for _, pid := range kids {
				if pid <= 1 || pid == w.self || pid == w.pgid || seen[pid] {
					continue
				}
				if w.known(pid) {
					walk = append(walk, w.members[pid])
					continue
				}
				if m, v := w.adopt(pid, p); m != nil {
					keep(m, v)
				}
			}
		}
		roots, ok := w.runnerChildren()
		if !ok {
			return added, false
		}
		for _, pid := range roots {
			if listed[pid] || seen[pid] {
				continue
			}
			if listed == nil {
				listed = map[int]bool{}
			}
			listed[pid] = true
			if w.known(pid) {
				walk = append(walk, w.members[pid])
				continue
			}
			if m, v := w.examine(pid); m != nil {
				keep(m, v)
			}
		}
		if len(walk) == 0 {
			return added, true
		}
	}
}

// runnerChildren lists the runner's children other than the main
// processes of its sessions, under the lock of mains. It reports false
// if the kernel cannot list them. Where the kernel reparents orphans to
// the runner's main thread, only that thread's list is read: the lists
// of the other threads hold only processes the runner started itself,
// none of which is an orphan of a session.
func (w *sweep) runnerChildren() (kids []int, ok bool) {
	w.mains.locked(func() {
		all, err := w.children(w.self, w.mains.leaderAdopts)
		if err != nil {
			return
		}
		ok = true
		for _, pid := range all {
			if pid != w.pgid && !w.mains.holds(pid) {
				kids = append(kids, pid)
			}
		}
	})
	return kids, ok
}

// children lists the children of pid, whichever of its threads each
// belongs to, from /proc/PID/task/TID/children, or only those of its
// main thread with leaderOnly. The main thread's list is read last: a
// thread that exits hands its children to the first live thread of its
// process, the main thread, which must not be read before. An error
// that wraps fs.ErrNotExist says that pid is gone, or that the kernel
// keeps no such lists.
func (w *sweep) children(pid int, leaderOnly bool) ([]int, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	leader := strconv.Itoa(pid)
	tids := []string{leader}
	if !leaderOnly {
		d, err := w.fs.Open(dir)
		if err != nil {
			return nil, err
		}
		tids, err = d.Readdirnames(-1)
		_ = d.Close()
		if err != nil {
			return nil, err
		}
		i := slices.Index(tids, leader)
		if i < 0 {
			return nil, fs.ErrNotExist // the process is gone
		}
		tids[i], tids[len(tids)-1] = tids[len(tids)-1], tids[i]
	}
	var kids []int
	for _, tid := range tids {
		b, err := readProc(w.fs, dir+"/"+tid+"/children", childrenCap)
		if err != nil {
			if tid == leader {
				return nil, err
			}
			continue // the thread has exited; its children went to the leader
		}
		for _, f := range bytes.Fields(b) {
			if kid, err := strconv.Atoi(string(f)); err == nil {
				kids = append(kids, kid)
			}
		}
	}
	return kids, nil
}

// verdict is what a sweep found a process to be.
type verdict int

const (
	// foreign: not the session's.
	foreign verdict = iota
	// grouped: in the session's process group.
	grouped
	// marked: outside the group, with the session's token in its
	// environment.
	marked
	// descendant: outside the group, a descendant of one of the
	// session's processes.
	descendant
)

// examine returns pid, held by a pidfd, as a member with its verdict if
// it belongs to the session, and nil if not.
func (w *sweep) examine(pid int) (*member, verdict) {
	fd, err := pidfdOpen(pid)
	if errors.Is(err, syscall.ESRCH) {
		return nil, foreign
	}
	if err != nil {
		fd = -1 // an old kernel: fall back to the pid
	}
	m := &member{pid: pid, fd: fd}
	v := w.judge(pid)
	if v == foreign {
		release(m)
		return nil, foreign
	}
	return m, v
}

// adopt returns pid, which was listed among the children of parent, a
// process of the session, as a member, held by a pidfd, with its
// verdict (grouped or descendant) — if it is still the child of parent
// once held: a pid listed a moment ago may have been reaped and reused
// since. It returns nil if not.
func (w *sweep) adopt(pid int, parent *member) (*member, verdict) {
	fd, err := pidfdOpen(pid)
	if errors.Is(err, syscall.ESRCH) {
		return nil, foreign
	}
	if err != nil {
		fd = -1
	}
	m := &member{pid: pid, fd: fd}
	st, ok := readStat(w.fs, pid)
	// The stat read was of the process the pidfd holds if that process
	// is still there after it, and of a child of parent if parent is
	// still there too.
	if !ok || st.ppid != parent.pid || w.reaped(m) || w.reaped(parent) {
		release(m)
		return nil, foreign
	}
	if w.pgid > 0 && st.pgrp == w.pgid {
		return m, grouped
	}
	return m, descendant
}

// earliest returns the start time of the session's main process: no
// process started earlier can be the session's.
func (w *sweep) earliest() uint64 {
	if w.sinceOf != 0 {
		w.since = startTime(w.fs, w.sinceOf)
		w.sinceOf = 0
	}
	return w.since
}

// judge says whether pid belongs to the session, by its group or its
// environment. A process that shows an empty environment is looked at
// again for up to unsureWait: it may be in the middle of an exec.
func (w *sweep) judge(pid int) verdict {
	delay := time.Millisecond
	deadline := time.Now().Add(unsureWait)
	for {
		st, ok := readStat(w.fs, pid)
		if !ok {
			return foreign
		}
		if w.pgid > 0 && st.pgrp == w.pgid {
			return grouped
		}
		if st.state == 'Z' || st.state == 'X' || st.flags&pfKthread != 0 || st.start < w.earliest() {
			return foreign // a zombie's environment is gone; a kernel thread has none
		}
		switch w.environ(pid) {
		case environMarked:
			return marked
		case environUnmarked:
			return foreign
		}
		left := time.Until(deadline)
		if left <= 0 {
			return foreign
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
		// Under the lock of mains: no child of the runner that this
		// package reaps leaves the runner's list of children while
		// another sweep reads it.
		w.mains.locked(func() { w.reapOne(m) })
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
// has exited but is not reaped yet: its group, every process that
// carries token and, when the runner's process tree is walked (see
// mainSet), every descendant of these. With term, each gets SIGTERM
// first; either way they have until deadline to exit before they get
// SIGKILL. The runner's own children among them are reaped.
//
// prior, if not nil, is the sweep with which termEscaped stopped the
// session: the processes it found are still recognised if they have
// exited since, when their environment can no longer be read, and are
// reaped. endSession closes it.
//
// A process that has not exited killWait after its SIGKILL is left to a
// goroutine that reaps it once it exits (within reapWait).
func endSession(fsys afero.Fs, mains *mainSet, pgid int, token string, term bool, deadline time.Time, prior *sweep) {
	w := prior
	if w == nil {
		w = newSessionSweep(fsys, mains, pgid, token)
	}
	w.outsideGroup = false
	w.mainLive = false
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
// have left its group, pgid (which the caller signals itself): those
// that carry its token and, when the runner's process tree is walked,
// every descendant of the session's processes. It returns the sweep,
// holding what it found, for endSession.
func termEscaped(fsys afero.Fs, mains *mainSet, pgid int, token string) *sweep {
	w := newSessionSweep(fsys, mains, pgid, token)
	w.outsideGroup = true
	w.mainLive = true
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

// readProc reads a file of /proc, at most limit bytes of it. On the
// operating system's file system it does so in three system calls
// (open, read, close) rather than through an *os.File, which also
// tries the runtime's poller and stats the file twice: a session's end
// lists the runner's children this way, between one session and the
// next. Elsewhere (tests' file systems) it is confine.ReadLimited.
func readProc(fsys afero.Fs, path string, limit int64) ([]byte, error) {
	if _, ok := fsys.(*afero.OsFs); !ok {
		return confine.ReadLimited(fsys, path, limit)
	}
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, min(limit+1, 512))
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):min(int64(cap(buf)), limit+1)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n <= 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, &confine.TooLargeError{Path: path, Limit: limit}
		}
	}
}

// readStat reads the fields a sweep uses from /proc/PID/stat.
func readStat(fsys afero.Fs, pid int) (procStat, bool) {
	b, err := readProc(fsys, "/proc/"+strconv.Itoa(pid)+"/stat", statCap)
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
