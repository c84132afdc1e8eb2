package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// DefaultKillGrace is how long a session is given to exit after SIGTERM
// when Spec.KillGrace is 0.
const DefaultKillGrace = 10 * time.Second

// drainTimeout bounds how long Wait keeps reading output after the
// session's processes were ended, in case a process that could not be
// recognised as the session's holds the pipe. It also bounds the grace
// given to what is left of a session after its main process exited on
// its own.
const drainTimeout = time.Second

// Spec describes a session to start.
type Spec struct {
	// Command is run as: sh -c Command.
	Command string
	// Dir is the working directory; empty means the runner's.
	Dir string
	// Env is the complete environment of the session; nil means empty.
	// The session's marker (MarkerVar) is added to it.
	Env []string
	// Output receives stdout and stderr combined, in the order written.
	// It may be nil. It is called from one goroutine at a time.
	Output io.Writer
	// Timeout is the wall-clock limit of the session; 0 means none.
	Timeout time.Duration
	// IdleTimeout stops the session when it writes no output for this
	// long; 0 means none.
	IdleTimeout time.Duration
	// KillGrace is how long the session may take to exit after SIGTERM
	// before it gets SIGKILL; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// Wrap, when set, turns the start of the session's shell (path,
	// its arguments argv with argv[0], and its attributes sys) into the
	// start of another program that runs it — a sandbox's launcher
	// (internal/sandbox). The session is still the process started, its
	// group and its marker.
	Wrap func(path string, argv []string, sys *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error)
}

// Result is the outcome of a session.
type Result struct {
	// ExitCode is the exit status of the main process, or -1 if it was
	// killed by a signal or never started.
	ExitCode int
	// TimedOut says the session was stopped because of Spec.Timeout.
	TimedOut bool
	// Idle says the session was stopped because of Spec.IdleTimeout.
	Idle bool
	// Interrupted says the session was stopped because the context given
	// to Start was cancelled.
	Interrupted bool
	// Err is a failure to start or to wait for the session, else nil. An
	// unsuccessful exit is not an error.
	Err error
	// Started and Ended are when the session started and when it ended
	// and its output was read.
	Started, Ended time.Time
}

// Starter starts sessions.
type Starter interface {
	// Start starts a session and returns without waiting for it to end
	// (a runner starts sessions on the goroutine that decides what runs
	// next). Cancelling ctx stops the session (see the package
	// documentation); it does not abandon it.
	Start(ctx context.Context, spec Spec) (Session, error)
}

// Session is a running session.
type Session interface {
	// Pid returns the process id of the main process, which is also the
	// id of its process group.
	Pid() int
	// Wait waits for the session to end and for its output to be copied.
	// It may be called more than once and from several goroutines. The
	// session's limits and the cancellation of Start's context are
	// applied while a Wait is in progress (counted from the start), so
	// a caller calls Wait soon after Start.
	Wait() Result
	// LastOutput returns when the session last wrote output, or when it
	// started if it has written none.
	LastOutput() time.Time
}

// OS returns a Starter that runs sessions as operating system processes.
//
// On Linux it makes the calling process a child subreaper
// (PR_SET_CHILD_SUBREAPER), for the life of the process: processes
// orphaned inside its sessions — and inside anything else it starts —
// are reparented to it instead of to init. Sessions' processes are
// reaped when their session ends; other orphans that exit stay zombies
// until the process exits. If the kernel refuses, sessions' escaped
// processes are still found and killed, and init reaps them.
func OS() Starter {
	// Resolve the shell once rather than searching PATH per session.
	sh, err := exec.LookPath("sh")
	if err != nil {
		sh = "sh"
	}
	mains := newMainSet(enableSubreaper() == nil)
	mains.leaderAdopts = orphansGoToLeader()
	// Every session reads /dev/null as its standard input, through one
	// descriptor the starter keeps open, rather than one opened and
	// closed per session; if it cannot be opened, exec does so per
	// session.
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		devnull = nil
	}
	return osStarter{drain: drainTimeout, sh: sh, fs: afero.NewOsFs(), mains: mains, stdin: devnull, bufs: newCopyBuffers()}
}

// copyBufferSize is the size of the buffer a session's output is
// copied through: io.Copy's own.
const copyBufferSize = 32 << 10

// newCopyBuffers returns a pool of output copy buffers: without one,
// every session allocated its own 32 KiB, more than all the rest a
// session allocates.
func newCopyBuffers() *sync.Pool {
	return &sync.Pool{New: func() any {
		b := make([]byte, copyBufferSize)
		return &b
	}}
}

// copyOutput copies r to w through a buffer from bufs (a new one when
// bufs is nil) until r ends.
func copyOutput(w io.Writer, r io.Reader, bufs *sync.Pool) {
	if bufs == nil {
		bufs = newCopyBuffers()
	}
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	// The reader is wrapped so that io.CopyBuffer uses the buffer
	// rather than *os.File's WriteTo, which allocates its own.
	_, _ = io.CopyBuffer(w, struct{ io.Reader }{r}, *b)
}

type osStarter struct {
	drain time.Duration
	sh    string
	// fs reads /proc, where a session's escaped processes are found.
	fs afero.Fs
	// mains holds the starter's sessions' main processes until they
	// are reaped; nil has every session's end look through all of /proc.
	mains *mainSet
	// bufs holds the buffers sessions' output is copied through.
	bufs *sync.Pool
	// stdin is /dev/null, every session's standard input, or nil.
	stdin *os.File
}

// mainSet holds the main processes of a starter's sessions from their
// start until they are reaped. When a session ends, the runner's direct
// children are examined as possible orphans of the session; the main
// processes of the other sessions are not, whether they still run (what
// they start is theirs) or have exited and wait to be reaped.
//
// Its lock is held while a main process is started and while one is
// reaped, and list holds it while it reads the runner's children: a
// listing therefore never sees a main process that the set does not
// hold, and no child of the runner that this package reaps leaves the
// list while the kernel walks it (which could make it skip the next
// child).
type mainSet struct {
	// tree says that the runner is a child subreaper, so that every
	// living descendant of a session stays a descendant of the runner
	// and can be found by walking the runner's process tree.
	tree bool
	// leaderAdopts says that the kernel reparents orphans to the main
	// thread of the runner, so that only its list of children can hold
	// a session's orphans (see orphansGoToLeader).
	leaderAdopts bool

	mu   sync.Mutex
	pids map[int]struct{}
}

func newMainSet(tree bool) *mainSet {
	return &mainSet{tree: tree, pids: map[int]struct{}{}}
}

// start calls start, which starts a main process and returns its pid,
// and adds the pid to the set, under the set's lock.
func (m *mainSet) start(start func() (int, error)) error {
	if m == nil {
		_, err := start()
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pid, err := start()
	if err == nil {
		m.pids[pid] = struct{}{}
	}
	return err
}

// reap removes pid from the set and calls reap, which reaps it, under
// the set's lock.
func (m *mainSet) reap(pid int, reap func() error) error {
	if m == nil {
		return reap()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pids, pid)
	return reap()
}

// locked calls f under the set's lock; f may not call the set's other
// methods.
func (m *mainSet) locked(f func()) {
	if m == nil {
		f()
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f()
}

// holds reports whether pid is the main process of one of the set's
// sessions. The caller holds the lock (see locked).
func (m *mainSet) holds(pid int) bool {
	if m == nil {
		return false
	}
	_, ok := m.pids[pid]
	return ok
}

// walksTree reports whether a session's processes may be found by
// walking the runner's process tree.
func (m *mainSet) walksTree() bool { return m != nil && m.tree }

type stopReason int

const (
	notStopped stopReason = iota
	stopTimeout
	stopIdle
	stopInterrupt
)

type session struct {
	cmd     *mainProc
	spec    Spec
	drain   time.Duration
	started time.Time
	ctx     context.Context

	fs    afero.Fs
	mains *mainSet
	token string // the session's marker
	// termAt is when stop sent SIGTERM, and termed what it found of
	// the session outside its group; both are used by end.
	termAt time.Time
	termed *sweep

	out    *outputWriter
	pr     *os.File      // the read end of the output pipe
	copied chan struct{} // closed when the output is copied
	exit   exitWaiter

	once   sync.Once // runs the session's supervision, in Wait
	result Result
}

// Start starts spec.Command in a new process group. It fails without
// starting anything if ctx is already done.
func (s osStarter) Start(ctx context.Context, spec Spec) (Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start session %q: %w", spec.Command, err)
	}
	pr, pw, err := outputPipe()
	if err != nil {
		return nil, fmt.Errorf("start session %q: create output pipe: %w", spec.Command, err)
	}
	sh := s.sh
	if !filepath.IsAbs(sh) {
		// The shell is looked for in PATH, never in spec.Dir.
		if sh, err = exec.LookPath("sh"); err != nil {
			pr.Close()
			pw.Close()
			return nil, fmt.Errorf("start session %q: %w", spec.Command, err)
		}
	}
	token := newToken()
	stdin := s.stdin
	if stdin == nil {
		// Without the starter's /dev/null, one per session, as exec.Cmd
		// would open.
		if stdin, err = os.Open(os.DevNull); err != nil {
			pr.Close()
			pw.Close()
			return nil, fmt.Errorf("start session %q: %w", spec.Command, err)
		}
		defer stdin.Close()
	}
	env := withMarker(spec.Env, token)
	for _, e := range env {
		if strings.IndexByte(e, 0) >= 0 {
			pr.Close()
			pw.Close()
			name, _, _ := strings.Cut(e, "=")
			return nil, fmt.Errorf("start session %q: environment variable %q holds a NUL byte", spec.Command, name)
		}
	}
	attr := &os.ProcAttr{
		Dir:   spec.Dir,
		Env:   env,
		Files: []*os.File{stdin, pw, pw},
		Sys:   sysProcAttr(),
	}
	path, argv := sh, []string{sh, "-c", spec.Command}
	if spec.Wrap != nil {
		if path, argv, attr.Sys, err = spec.Wrap(path, argv, attr.Sys); err != nil {
			pr.Close()
			pw.Close()
			return nil, fmt.Errorf("start session %q: %w", spec.Command, err)
		}
	}
	cmd := &mainProc{}
	started := time.Now()
	err = s.mains.start(func() (int, error) {
		p, err := os.StartProcess(path, argv, attr)
		if err != nil {
			return 0, err
		}
		cmd.p = p
		return p.Pid, nil
	})
	pw.Close() // the child holds its own copy
	if err != nil {
		pr.Close()
		return nil, fmt.Errorf("start session %q in %s: %w", spec.Command, spec.Dir, err)
	}
	if spec.KillGrace <= 0 {
		spec.KillGrace = DefaultKillGrace
	}
	fsys := s.fs
	if fsys == nil {
		fsys = afero.NewOsFs()
	}
	ss := &session{
		cmd:     cmd,
		spec:    spec,
		drain:   s.drain,
		started: started,
		ctx:     ctx,
		fs:      fsys,
		mains:   s.mains,
		token:   token,
		out:     &outputWriter{w: spec.Output, last: started},
		pr:      pr,
		copied:  make(chan struct{}),
		exit:    newExitWaiter(ctx, cmd),
	}
	go func() {
		defer close(ss.copied)
		copyOutput(ss.out, pr, s.bufs)
	}()
	return ss, nil
}

func (s *session) Pid() int { return s.cmd.p.Pid }

// Wait supervises the session until it ends, in the goroutine of its
// first caller (the limits and ctx are applied there, from when the
// session started), and returns its result; other callers wait for
// the first.
func (s *session) Wait() Result {
	s.once.Do(s.run)
	return s.result
}

func (s *session) LastOutput() time.Time { return s.out.lastOutput() }

// Marker returns the session's token, which every process the session
// starts inherits in MarkerVar.
func (s *session) Marker() string { return s.token }

// Ended is a Session that has ended already, with Result: what a
// Starter that plays sessions rather than running them returns (flow
// test's scripted sessions, and tests). PID is its process id; 0 reads
// as 1.
type Ended struct {
	Result Result
	PID    int
}

// Pid returns the session's process id.
func (e Ended) Pid() int {
	if e.PID == 0 {
		return 1
	}
	return e.PID
}

// Wait returns the session's result at once.
func (e Ended) Wait() Result { return e.Result }

// LastOutput says the session wrote nothing a watch should wait for.
func (e Ended) LastOutput() time.Time { return time.Time{} }

// Marker returns the token that marks the processes of s (see
// KillMarked), or "" if s is not a session started by OS.
func Marker(s Session) string {
	if m, ok := s.(interface{ Marker() string }); ok {
		return m.Marker()
	}
	return ""
}

// run supervises the limits, ends the session and records the result.
func (s *session) run() {
	reason := s.supervise()
	s.end(reason)
	waitErr := s.mains.reap(s.cmd.p.Pid, s.exit.reap)
	s.exit.close()

	select {
	case <-s.copied:
	default:
		t := time.NewTimer(s.drain)
		select {
		case <-s.copied:
		case <-t.C:
			// An escaped process holds the pipe; stop reading.
		}
		t.Stop()
	}
	s.pr.Close()
	<-s.copied

	res := Result{
		ExitCode:    -1,
		TimedOut:    reason == stopTimeout,
		Idle:        reason == stopIdle,
		Interrupted: reason == stopInterrupt,
		Started:     s.started,
		Ended:       time.Now(),
	}
	if st := s.cmd.state; st != nil {
		res.ExitCode = st.ExitCode()
	}
	if waitErr != nil {
		res.Err = fmt.Errorf("wait for session %q: %w", s.spec.Command, waitErr)
	}
	s.result = res
}

// end ends what is left of the session once its main process has
// exited, before the main process is reaped (on Linux), while its pid
// still names the session's group.
//
// After a stop, the processes were sent SIGTERM with the group and have
// what is left of KillGrace. After a normal exit they are sent SIGTERM
// now and have the drain timeout (at most KillGrace): the session said
// it was done, so what it left behind is stray, and it should cost no
// more than the drain wait it would have held up before.
func (s *session) end(reason stopReason) {
	term := reason == notStopped
	deadline := time.Now().Add(min(s.drain, s.spec.KillGrace))
	if !term {
		deadline = s.termAt.Add(s.spec.KillGrace)
	}
	endSession(s.fs, s.mains, s.cmd.p.Pid, s.token, term, deadline, s.termed)
}

// supervise waits for the main process to exit, stopping the session
// first if its context is cancelled or a limit is reached, and returns
// why it stopped it.
func (s *session) supervise() stopReason {
	var timeoutAt time.Time
	if s.spec.Timeout > 0 {
		timeoutAt = s.started.Add(s.spec.Timeout)
	}
	for {
		deadline := timeoutAt
		var idleAt time.Time
		if s.spec.IdleTimeout > 0 {
			idleAt = s.out.lastOutput().Add(s.spec.IdleTimeout)
			if deadline.IsZero() || idleAt.Before(deadline) {
				deadline = idleAt
			}
		}
		if s.exit.wait(deadline, true) {
			return notStopped
		}
		now := time.Now()
		switch {
		case s.ctx.Err() != nil:
			s.stop()
			return stopInterrupt
		case !timeoutAt.IsZero() && !now.Before(timeoutAt):
			s.stop()
			return stopTimeout
		case !idleAt.IsZero() && now.Sub(s.out.lastOutput()) >= s.spec.IdleTimeout:
			s.stop()
			return stopIdle
		}
	}
}

// stop sends SIGTERM to the group and to the session's processes that
// left it, waits up to KillGrace for the main process to exit and then
// sends SIGKILL to the group; end sees to the rest.
func (s *session) stop() {
	pgid := s.cmd.p.Pid
	s.termAt = time.Now()
	_ = signalGroup(pgid, syscall.SIGTERM)
	s.termed = termEscaped(s.fs, s.mains, pgid, s.token)
	graceAt := s.termAt.Add(s.spec.KillGrace)
	for !s.exit.wait(graceAt, false) {
		if time.Now().Before(graceAt) {
			continue
		}
		_ = signalGroup(pgid, syscall.SIGKILL)
		for !s.exit.wait(time.Time{}, false) {
		}
		return
	}
}

// signalGroup sends sig to every process of the group pgid. A group that
// no longer exists is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// outputWriter forwards output and records when it last arrived.
type outputWriter struct {
	w io.Writer

	mu   sync.Mutex
	last time.Time
}

func (o *outputWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		now := time.Now()
		o.mu.Lock()
		o.last = now
		o.mu.Unlock()
	}
	if o.w == nil {
		return len(p), nil
	}
	if _, err := o.w.Write(p); err != nil {
		// A failing destination must not block the session on a full
		// pipe; the output is dropped instead.
		o.w = nil
	}
	return len(p), nil
}

func (o *outputWriter) lastOutput() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last
}

// KillOrphans kills what is left of the process group of a session
// whose runner died: the session's main process died with the runner
// (its parent-death signal), but processes it started may live on in
// its group. It does nothing unless the group still exists and its
// leader does not — the kernel reuses no pid while a group still bears
// it, so such a group can only be the session's orphans. It reports
// whether it killed anything.
func KillOrphans(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	if err := syscall.Kill(pgid, 0); !errors.Is(err, syscall.ESRCH) && !zombie(pgid) {
		return false // the leader lives (or cannot be asked about)
	}
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	return syscall.Kill(-pgid, syscall.SIGKILL) == nil
}

// mainProc is a session's main process, started with os.StartProcess
// rather than exec.Cmd: the session's environment is already free of
// repeated names (withMarker), its descriptors are files, and the
// shell's path is resolved once, so exec.Cmd would only add work per
// session (a map of the environment among it).
type mainProc struct {
	p     *os.Process
	state *os.ProcessState // once reaped
}

// wait reaps the process and keeps its state. An exit status other
// than 0 is not an error.
func (c *mainProc) wait() error {
	st, err := c.p.Wait()
	if st != nil {
		c.state = st
	}
	return err
}

// Signal sends sig to the process pid of this host.
func Signal(pid int, sig syscall.Signal) error {
	if pid <= 1 {
		return fmt.Errorf("signal pid %d: not a runner's pid", pid)
	}
	return syscall.Kill(pid, sig)
}
