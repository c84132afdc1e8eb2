//go:build linux

package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/syncbuf"
)

// The tests below start processes that announce themselves by writing
// their pid ($$) to $PIDFILE and then exec a sleep of a duration used by
// no other test, so that a leftover is recognisable.

// untilPidfile waits, in a session's shell, for the pid file to be
// written.
const untilPidfile = `until [ -s "$PIDFILE" ]; do sleep 0.01; done`

// child returns a command for $CHILD: announce, then exec sleep secs.
func child(secs int) string {
	return `echo $$ >"$PIDFILE"; exec sleep ` + strconv.Itoa(secs)
}

// pidFrom polls until path holds a pid.
func pidFrom(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 1 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sleeping reports whether pid is a live (not zombie) "sleep secs".
func sleeping(pid, secs int) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || string(cmdline) != "sleep\x00"+strconv.Itoa(secs)+"\x00" {
		return false
	}
	st, ok := readStat(afero.NewOsFs(), pid)
	return ok && st.state != 'Z' && st.state != 'X'
}

// killLeftover kills pid at the end of the test if it is still the
// sleep the test started, so that a failing test leaves nothing behind.
func killLeftover(t *testing.T, pid, secs int) {
	t.Cleanup(func() {
		if sleeping(pid, secs) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// assertEnded checks that the process pid, which ran "sleep secs", is
// gone and not left a zombie child of this process: the session's end
// must reap what it killed.
func assertEnded(t *testing.T, pid, secs int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, ok := readStat(afero.NewOsFs(), pid)
		var problem string
		switch {
		case ok && st.ppid == os.Getpid() && (st.state == 'Z' || st.state == 'X'):
			problem = "is left a zombie child of the runner"
		case ok && st.ppid == os.Getpid():
			problem = "outlived its session, a child of the runner"
		case sleeping(pid, secs):
			problem = "outlived its session"
		default:
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("process %d (sleep %d) %s", pid, secs, problem)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sessionEnv is the environment of a test session.
func sessionEnv(pidfile, childCmd string, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "PIDFILE=" + pidfile, "CHILD=" + childCmd}, extra...)
}

func TestEscapedProcessesEnd(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	if _, err := exec.LookPath("nohup"); err != nil {
		t.Skip("no nohup")
	}
	const detached = ` >/dev/null 2>&1 </dev/null`
	tests := []struct {
		name    string
		secs    int
		child   string // defaults to child(secs)
		command string
		spec    Spec
		cancel  bool // cancel once the pid file is written and "ready" printed
		check   func(t *testing.T, res Result, dir string)
	}{
		{
			name:    "setsid, the reported case",
			secs:    1001,
			command: `setsid sh -c "$CHILD"` + detached + ` & ` + untilPidfile,
		},
		{
			name:    "setsid holding the output pipe",
			secs:    1002,
			command: `setsid sh -c "$CHILD" & ` + untilPidfile,
			check: func(t *testing.T, res Result, _ string) {
				if d := res.Ended.Sub(res.Started); d > 2*time.Second {
					t.Errorf("Wait took %v", d)
				}
			},
		},
		{
			name:    "double fork",
			secs:    1003,
			command: `(sh -c "$CHILD" &) & ` + untilPidfile,
		},
		{
			name:    "nohup",
			secs:    1004,
			command: `nohup sh -c "$CHILD"` + detached + ` & ` + untilPidfile,
		},
		{
			name:    "setsid daemon double forked, ignoring SIGTERM",
			secs:    1005,
			child:   `trap "" TERM; ` + child(1005),
			command: `setsid sh -c '(sh -c "$CHILD" &)'` + detached + ` & ` + untilPidfile + `; exit 3`,
			check: func(t *testing.T, res Result, _ string) {
				if res.ExitCode != 3 {
					t.Errorf("ExitCode = %d, want 3", res.ExitCode)
				}
				// The test's drain timeout is the grace after a normal exit.
				if d := res.Ended.Sub(res.Started); d < 300*time.Millisecond || d > 5*time.Second {
					t.Errorf("Wait took %v, want about the 300ms grace", d)
				}
			},
		},
		{
			name:    "interrupt reaches a daemon with SIGTERM",
			secs:    1006,
			child:   `trap 'echo bye >"$PIDFILE.bye"; exit 0' TERM; echo $$ >"$PIDFILE"; i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done`,
			command: `setsid sh -c "$CHILD"` + detached + ` & ` + untilPidfile + `; echo ready; sleep 1006`,
			spec:    Spec{KillGrace: 5 * time.Second},
			cancel:  true,
			check: func(t *testing.T, res Result, dir string) {
				if !res.Interrupted {
					t.Errorf("result %+v, want Interrupted", res)
				}
				if _, err := os.Stat(filepath.Join(dir, "pid.bye")); err != nil {
					t.Errorf("the daemon's TERM trap did not run: %v", err)
				}
			},
		},
		{
			name:    "interrupt kills a daemon ignoring SIGTERM",
			secs:    1007,
			child:   `trap "" TERM; ` + child(1007),
			command: `setsid sh -c "$CHILD"` + detached + ` & ` + untilPidfile + `; echo ready; sleep 1007`,
			spec:    Spec{KillGrace: 200 * time.Millisecond},
			cancel:  true,
			check: func(t *testing.T, res Result, _ string) {
				if d := res.Ended.Sub(res.Started); d > 5*time.Second {
					t.Errorf("Wait took %v, want about the 200ms grace", d)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidfile := filepath.Join(dir, "pid")
			childCmd := tt.child
			if childCmd == "" {
				childCmd = child(tt.secs)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			spec := tt.spec
			spec.Command = tt.command
			spec.Env = sessionEnv(pidfile, childCmd)
			var out syncbuf.Buffer
			spec.Output = &out
			s := start(t, ctx, spec)
			if tt.cancel {
				waitFor(t, &out, "ready\n")
				cancel()
			}
			res := s.Wait()
			if res.Err != nil {
				t.Fatalf("Err = %v", res.Err)
			}
			pid := pidFrom(t, pidfile)
			killLeftover(t, pid, tt.secs)
			if tt.check != nil {
				tt.check(t, res, dir)
			}
			assertEnded(t, pid, tt.secs)
			assertGone(t, -s.Pid())
		})
	}
}

// TestSessionsEndOnlyTheirOwn runs two sessions at once, each with a
// daemon that left its group: ending one leaves the other's alone.
func TestSessionsEndOnlyTheirOwn(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	tests := []struct {
		name      string
		interrupt bool // end the first session by cancelling it
	}{
		{"first exits", false},
		{"first interrupted", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secsA, secsB := 1011+2*i, 1012+2*i
			dir := t.TempDir()
			pidA, pidB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			stopFile := filepath.Join(dir, "stop")
			// Both stay until told: B until the stop file exists, A
			// until it exists too or is cancelled.
			hold := `setsid sh -c "$CHILD" >/dev/null 2>&1 </dev/null & ` + untilPidfile +
				`; echo ready; until [ -e "$STOP" ]; do sleep 0.01; done`
			ctxA, cancelA := context.WithCancel(context.Background())
			defer cancelA()
			var outA, outB syncbuf.Buffer
			a := start(t, ctxA, Spec{Command: hold, Output: &outA, KillGrace: time.Second,
				Env: sessionEnv(pidA, child(secsA), "STOP="+filepath.Join(dir, "stop-a"))})
			b := start(t, context.Background(), Spec{Command: hold, Output: &outB,
				Env: sessionEnv(pidB, child(secsB), "STOP="+stopFile)})
			waitFor(t, &outA, "ready\n")
			waitFor(t, &outB, "ready\n")
			daemonA, daemonB := pidFrom(t, pidA), pidFrom(t, pidB)
			killLeftover(t, daemonA, secsA)
			killLeftover(t, daemonB, secsB)

			if tt.interrupt {
				cancelA()
			} else if err := os.WriteFile(filepath.Join(dir, "stop-a"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			a.Wait()
			assertEnded(t, daemonA, secsA)
			if !sleeping(daemonB, secsB) {
				t.Fatalf("ending session A ended session B's daemon %d", daemonB)
			}
			if err := syscall.Kill(b.Pid(), 0); err != nil {
				t.Fatalf("ending session A ended session B's main process: %v", err)
			}

			if err := os.WriteFile(stopFile, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if res := b.Wait(); res.ExitCode != 0 {
				t.Errorf("session B: %+v", res)
			}
			assertEnded(t, daemonB, secsB)
		})
	}
}

// TestUnrelatedProcessesUntouched: processes the runner started itself
// — even after the session started, even in their own session, even
// marked by another session — survive a session's end, and their exit
// statuses stay theirs.
func TestUnrelatedProcessesUntouched(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	pidfile, stopFile := filepath.Join(dir, "pid"), filepath.Join(dir, "stop")
	var out syncbuf.Buffer
	s := start(t, context.Background(), Spec{
		Command: `setsid sh -c "$CHILD" >/dev/null 2>&1 </dev/null & ` + untilPidfile +
			`; echo ready; until [ -e "$STOP" ]; do sleep 0.01; done`,
		Env:    sessionEnv(pidfile, child(1021), "STOP="+stopFile),
		Output: &out,
	})
	waitFor(t, &out, "ready\n")
	daemon := pidFrom(t, pidfile)
	killLeftover(t, daemon, 1021)

	// Started after the session, so that their start time does not
	// rule them out.
	plain := exec.Command("sleep", "1022")
	ownSession := exec.Command("sleep", "1023")
	ownSession.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	otherMarker := exec.Command("sleep", "1024")
	otherMarker.Env = withMarker(nil, newToken())
	// An exited child not yet waited for: a sweep that reaped whatever
	// exited would take its status.
	exited := exec.Command("sh", "-c", "exit 7")
	unrelated := []*exec.Cmd{plain, ownSession, otherMarker, exited}
	for _, c := range unrelated {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Process.Kill()
	}
	waitZombie(t, exited.Process.Pid)

	if err := os.WriteFile(stopFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	assertEnded(t, daemon, 1021)

	for i, c := range unrelated[:3] {
		if !sleeping(c.Process.Pid, 1022+i) {
			t.Errorf("%v was touched by the session's end", c.Args)
		}
		_ = c.Process.Signal(syscall.SIGTERM)
		err := c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Errorf("%v: Wait = %v, want killed by our SIGTERM", c.Args, err)
		}
	}
	if err := exited.Wait(); exited.ProcessState == nil || exited.ProcessState.ExitCode() != 7 {
		t.Errorf("exit 7: Wait = %v, state %v: its status was taken", err, exited.ProcessState)
	}
}

// waitZombie polls until pid has exited, unreaped.
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if st, ok := readStat(afero.NewOsFs(), pid); ok && st.state == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never exited", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestExitStatusesNotStolen ends sessions with escaped processes while
// the runner starts and waits for children of its own.
func TestExitStatusesNotStolen(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			c := exec.Command("sh", "-c", "sleep 0.0"+strconv.Itoa(i%5)+"; exit 7")
			if err := c.Start(); err != nil {
				errs <- err
				return
			}
			_ = c.Wait()
			if c.ProcessState.ExitCode() != 7 {
				errs <- errors.New("an unrelated child's exit status was taken: " + c.ProcessState.String())
				return
			}
		}
	}()
	dir := t.TempDir()
	for i := range 6 {
		pidfile := filepath.Join(dir, strconv.Itoa(i))
		s := start(t, context.Background(), Spec{
			Command: `setsid sh -c "$CHILD" >/dev/null 2>&1 </dev/null & (sleep 0.01 &) & ` + untilPidfile,
			Env:     sessionEnv(pidfile, child(1031+i)),
		})
		s.Wait()
		pid := pidFrom(t, pidfile)
		killLeftover(t, pid, 1031+i)
		assertEnded(t, pid, 1031+i)
	}
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// TestKillMarked plays a runner taking over a dead runner's run: the
// processes left by the dead runner's session carry its marker and are
// killed; others are not.
func TestKillMarked(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	OS() // the runner is a subreaper, as in production
	dir := t.TempDir()
	token := newToken()
	orphan := func(name string, secs int, env ...string) int {
		pidfile := filepath.Join(dir, name)
		c := exec.Command("sh", "-c", `setsid sh -c "$CHILD" >/dev/null 2>&1 </dev/null & `+untilPidfile)
		c.Env = sessionEnv(pidfile, child(secs), env...)
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		pid := pidFrom(t, pidfile)
		killLeftover(t, pid, secs)
		return pid
	}
	marked := orphan("marked", 1041, withMarker(nil, token)...)
	nested := orphan("nested", 1042, withMarker(withMarker(nil, token), newToken())...)
	other := orphan("other", 1043, withMarker(nil, newToken())...)

	for _, bad := range []string{"", token + ":x", "x=" + token} {
		if n := KillMarked(bad); n != 0 {
			t.Errorf("KillMarked(%q) = %d, want 0", bad, n)
		}
	}
	if n := KillMarked(token); n != 2 {
		t.Errorf("KillMarked = %d, want 2", n)
	}
	assertGone(t, marked, nested)
	if !sleeping(other, 1043) {
		t.Errorf("KillMarked killed another session's process")
	}
	// They were reparented to this process, which reaps its own.
	for _, pid := range []int{marked, nested} {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
	if n := KillMarked(token); n != 0 {
		t.Errorf("second KillMarked = %d, want 0", n)
	}
}

func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0\n"
	tests := []struct {
		name string
		stat string
		want procStat
		ok   bool
	}{
		{"plain", "42 (sleep) S 7 42 42" + tail, procStat{'S', 7, 42, 0, 987654}, true},
		{"name with parentheses and spaces", "42 (a) b (c) Z 1 9 9" + tail, procStat{'Z', 1, 9, 0, 987654}, true},
		{"kernel thread", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0\n", procStat{'S', 0, 0, 2129984, 3}, true},
		{"truncated", "42 (sleep) S 7 42", procStat{}, false},
		{"no name", "42 sleep S 7 42 42" + tail, procStat{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStat([]byte(tt.stat))
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseStat = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestOSMakesTheRunnerASubreaper(t *testing.T) {
	OS()
	const prGetChildSubreaper = 37
	var on int32
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetChildSubreaper, uintptr(unsafe.Pointer(&on)), 0); errno != 0 {
		t.Skipf("prctl: %v", errno)
	}
	if on != 1 {
		t.Error("the runner is not a child subreaper after OS()")
	}
}

// BenchmarkEndSession measures the search for what is left of a
// session that left nothing behind: a look at the runner's children
// (what a session's end does), or one walk of /proc, reading the
// environment of every process (as KillMarked does) or only of
// processes started after the session (a session's end on a kernel
// that does not list a process's children).
func BenchmarkEndSession(b *testing.B) {
	fsys := afero.NewOsFs()
	token := newToken()
	now := startTime(fsys, os.Getpid()) + 1
	for _, bb := range []struct {
		name  string
		tree  bool
		since uint64
	}{{"runner's children", true, now}, {"every environment", false, 0}, {"recent processes", false, now}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			mains := OS().(osStarter).mains
			for b.Loop() {
				w := newSweep(fsys, 0, token, bb.since)
				w.tree, w.mains = bb.tree, mains
				w.scan()
				if w.tree != bb.tree {
					b.Fatal("the kernel lists no process's children")
				}
				w.close()
			}
		})
	}
}

// execFS serves /proc/PID/environ from a list of contents, one per
// open, the last one repeated: a process seen in the middle of an exec
// shows an empty environment, then its new one.
type execFS struct {
	afero.Fs
	path     string
	environs []string

	mu    sync.Mutex
	opens int
}

func (f *execFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if name == f.path {
		f.mu.Lock()
		content := f.environs[min(f.opens, len(f.environs)-1)]
		f.opens++
		f.mu.Unlock()
		if err := afero.WriteFile(f.Fs, name, []byte(content), 0o400); err != nil {
			return nil, err
		}
	}
	return f.Fs.OpenFile(name, flag, perm)
}

func (f *execFS) environOpens() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opens
}

// TestSweepLooksAgainAtAnEmptyEnvironment: a process caught in the
// middle of an exec shows an empty environment for a moment; the sweep
// looks again rather than pass it over. A kernel thread, which has no
// environment, is not looked at.
func TestSweepLooksAgainAtAnEmptyEnvironment(t *testing.T) {
	const token = "TOK"
	tests := []struct {
		name      string
		flags     uint64
		environs  []string
		want      int
		wantOpens func(n int) bool
	}{
		{"marked after the exec", 0, []string{"", "", "A=1\x00FLOW_SESSION_ID=TOK\x00"}, 1, func(n int) bool { return n == 3 }},
		{"unmarked after the exec", 0, []string{"", "A=1\x00"}, 0, func(n int) bool { return n == 2 }},
		{"empty for good", 0, []string{""}, 0, func(n int) bool { return n > 1 }},
		{"kernel thread", pfKthread, []string{""}, 0, func(n int) bool { return n == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A real process, so that it can be held by a pidfd; what
			// /proc says of it is scripted.
			sleep := exec.Command("sleep", "1051")
			if err := sleep.Start(); err != nil {
				t.Fatal(err)
			}
			defer sleep.Wait()
			defer sleep.Process.Kill()
			pid := strconv.Itoa(sleep.Process.Pid)
			mem := afero.NewMemMapFs()
			stat := pid + " (sleep) S 1 " + pid + " " + pid + " 0 -1 " + strconv.FormatUint(tt.flags, 10) +
				" 0 0 0 0 0 0 0 0 20 0 1 0 5000 0 0\n"
			if err := afero.WriteFile(mem, "/proc/"+pid+"/stat", []byte(stat), 0o444); err != nil {
				t.Fatal(err)
			}
			fsys := &execFS{Fs: mem, path: "/proc/" + pid + "/environ", environs: tt.environs}
			w := newSweep(fsys, 0, token, 0)
			defer w.close()
			if got := w.scan(); got != tt.want {
				t.Errorf("scan found %d, want %d", got, tt.want)
			}
			if n := fsys.environOpens(); !tt.wantOpens(n) {
				t.Errorf("environment read %d times", n)
			}
		})
	}
}

// startOn starts a session through st, with the test's drain timeout.
func startOn(t *testing.T, st osStarter, ctx context.Context, spec Spec) Session {
	t.Helper()
	st.drain = 300 * time.Millisecond
	s, err := st.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// walksTree skips the test unless sessions' processes are found by
// walking the runner's process tree: the runner is a child subreaper
// and the kernel lists a process's children.
func walksTree(t *testing.T, st osStarter) {
	t.Helper()
	if !st.mains.walksTree() {
		t.Skip("the runner cannot be a child subreaper")
	}
	pid := strconv.Itoa(os.Getpid())
	if _, err := os.Stat("/proc/" + pid + "/task/" + pid + "/children"); err != nil {
		t.Skipf("the kernel lists no process's children: %v", err)
	}
}

// TestScrubbedDescendantsEnd: a process that scrubbed its environment
// (env -i) and left the group is still the session's when it descends
// from one of the session's processes — here a daemon that carries the
// marker — whether the session exits or is stopped.
func TestScrubbedDescendantsEnd(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	st := OS().(osStarter)
	walksTree(t, st)
	const daemon = `setsid sh -c 'env -i PIDFILE="$PIDFILE" sh -c "$CHILD" & wait' >/dev/null 2>&1 </dev/null & ` + untilPidfile
	tests := []struct {
		name    string
		secs    int
		command string
		cancel  bool // cancel once "ready" is printed
	}{
		{"the session exits", 1061, daemon, false},
		{"the session is interrupted", 1062, daemon + `; echo ready; sleep 1062`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidfile := filepath.Join(dir, "pid")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out syncbuf.Buffer
			s := startOn(t, st, ctx, Spec{Command: tt.command, Output: &out, KillGrace: time.Second,
				Env: sessionEnv(pidfile, child(tt.secs))})
			pid := pidFrom(t, pidfile)
			killLeftover(t, pid, tt.secs)
			if f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ"); err == nil {
				marked := hasMarker(f, Marker(s))
				f.Close()
				if marked {
					t.Fatal("the scrubbed process carries the marker")
				}
			}
			if tt.cancel {
				waitFor(t, &out, "ready\n")
				cancel()
			}
			if res := s.Wait(); res.Err != nil {
				t.Fatalf("Err = %v", res.Err)
			}
			assertEnded(t, pid, tt.secs)
		})
	}
}

// recordFS records the paths opened through it.
type recordFS struct {
	afero.Fs
	// hide, when set, makes these paths not exist.
	hide func(name string) bool

	mu    sync.Mutex
	paths []string
}

func (f *recordFS) Open(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDONLY, 0)
}

func (f *recordFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f.mu.Lock()
	f.paths = append(f.paths, name)
	f.mu.Unlock()
	if f.hide != nil && f.hide(name) {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	}
	return f.Fs.OpenFile(name, flag, perm)
}

// take returns the paths opened since the last call.
func (f *recordFS) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.paths
	f.paths = nil
	return p
}

// TestEndLooksOnlyAtTheRunnersChildren: a session that leaves nothing
// behind ends without a look through /proc, without reading any
// environment, and without examining the main process of another
// session that still runs.
func TestEndLooksOnlyAtTheRunnersChildren(t *testing.T) {
	fsys := &recordFS{Fs: afero.NewOsFs()}
	st := OS().(osStarter)
	st.fs = fsys
	walksTree(t, st)
	stop := filepath.Join(t.TempDir(), "stop")
	var outB syncbuf.Buffer
	b := startOn(t, st, context.Background(), Spec{
		Command: `echo ready; until [ -e "$STOP" ]; do sleep 0.01; done`,
		Env:     []string{"PATH=" + os.Getenv("PATH"), "STOP=" + stop},
		Output:  &outB,
	})
	defer func() {
		_ = os.WriteFile(stop, nil, 0o600)
		b.Wait()
	}()
	waitFor(t, &outB, "ready\n")
	fsys.take()

	for range 3 {
		if res := startOn(t, st, context.Background(), Spec{Command: "true"}).Wait(); res.ExitCode != 0 {
			t.Fatalf("result %+v", res)
		}
	}
	other := "/proc/" + strconv.Itoa(b.Pid()) + "/"
	for _, p := range fsys.take() {
		switch {
		case p == "/proc" || p == "/proc/":
			t.Errorf("a session's end looked through all of /proc")
		case strings.HasSuffix(p, "/environ"):
			t.Errorf("a session's end read %s", p)
		case strings.HasPrefix(p, other):
			t.Errorf("a session's end examined the main process of another session: %s", p)
		}
	}
}

// TestEndWithoutChildrenLists: on a kernel that does not list a
// process's children, a session's end looks through all of /proc and
// still finds what the session left.
func TestEndWithoutChildrenLists(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	fsys := &recordFS{Fs: afero.NewOsFs(), hide: func(name string) bool {
		return strings.HasSuffix(name, "/children")
	}}
	st := OS().(osStarter)
	st.fs = fsys
	pidfile := filepath.Join(t.TempDir(), "pid")
	s := startOn(t, st, context.Background(), Spec{
		Command: `setsid sh -c "$CHILD" >/dev/null 2>&1 </dev/null & ` + untilPidfile,
		Env:     sessionEnv(pidfile, child(1081)),
	})
	s.Wait()
	pid := pidFrom(t, pidfile)
	killLeftover(t, pid, 1081)
	assertEnded(t, pid, 1081)
	if !slices.Contains(fsys.take(), "/proc") {
		t.Error("the session's end did not look through /proc")
	}
}

// TestTreeCoversTheGroup compares, for a session whose main process has
// exited, what a walk of the runner's process tree finds with what a
// look through all of /proc finds: everything the latter finds — the
// processes left in the group, however deep, and a marked daemon — and
// the daemon's child, which scrubbed its environment.
func TestTreeCoversTheGroup(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	st := OS().(osStarter)
	walksTree(t, st)
	dir := t.TempDir()
	token := newToken()
	main := exec.Command("sh", "-c",
		`sh -c 'sleep 1071 & echo $! >"$PIDFILE.g"; wait' & `+
			`setsid sh -c 'env -i sleep 1072 & echo $! >"$PIDFILE.d"; wait' >/dev/null 2>&1 </dev/null & `+
			`until [ -s "$PIDFILE.g" ] && [ -s "$PIDFILE.d" ]; do sleep 0.01; done`)
	main.Env = withMarker(sessionEnv(filepath.Join(dir, "pid"), ""), token)
	main.SysProcAttr = sysProcAttr()
	if err := main.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := main.Process.Pid
	grouped, scrubbed := pidFrom(t, filepath.Join(dir, "pid.g")), pidFrom(t, filepath.Join(dir, "pid.d"))
	killLeftover(t, grouped, 1071)
	killLeftover(t, scrubbed, 1072)
	waitExitedNoReap(pgid)

	fsys := afero.NewOsFs()
	tree := newSessionSweep(fsys, st.mains, pgid, token)
	all := newSessionSweep(fsys, nil, pgid, token)
	tree.scan()
	all.scan()
	if !tree.tree {
		t.Fatal("the walk of the process tree gave up")
	}
	for pid := range all.members {
		if _, ok := tree.members[pid]; !ok {
			t.Errorf("the walk missed process %d, found in /proc", pid)
		}
	}
	for pid := range tree.members {
		if _, ok := all.members[pid]; !ok && pid != scrubbed {
			t.Errorf("the walk found process %d, not found in /proc", pid)
		}
	}
	for _, pid := range []int{grouped, scrubbed} {
		if _, ok := tree.members[pid]; !ok {
			t.Errorf("the walk missed process %d", pid)
		}
	}
	if _, ok := all.members[scrubbed]; ok {
		t.Errorf("the scrubbed process carries the marker")
	}
	// 2 shells and 2 sleeps.
	if len(tree.members) != 4 {
		t.Errorf("the walk found %d processes, want 4", len(tree.members))
	}
	all.close()
	endSession(fsys, st.mains, pgid, token, false, time.Now(), tree)
	_ = main.Wait()
	assertEnded(t, grouped, 1071)
	assertEnded(t, scrubbed, 1072)
}

func TestReleaseAtLeast(t *testing.T) {
	tests := []struct {
		release string
		want    bool
	}{
		{"6.18.44-fc-v657", true},
		{"3.19.0", true},
		{"4.4.0-210-generic", true},
		{"3.18.140", false},
		{"3.10.0-1160.el7.x86_64", false},
		{"2.6.32", false},
		{"10.0", true},
		{"", false},
		{"6", false},
		{"x.y", false},
	}
	for _, tt := range tests {
		t.Run(tt.release, func(t *testing.T) {
			if got := releaseAtLeast(tt.release, 3, 19); got != tt.want {
				t.Errorf("releaseAtLeast(%q, 3, 19) = %v, want %v", tt.release, got, tt.want)
			}
		})
	}
}

// TestWaitPidfd: the wait through a pidfd returns once the process has
// exited, not before, and leaves it a zombie for the caller to reap.
func TestWaitPidfd(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 0.2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitPidfd(cmd.Process.Pid) {
		t.Skip("pidfds are not available here (Linux before 5.3): the blocking waitid is used")
	}
	// A zombie: exited (the wait did not return early) and not reaped.
	if !zombie(cmd.Process.Pid) {
		t.Errorf("process %d was reaped by the wait, or still runs", cmd.Process.Pid)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("reap: %v", err)
	}
}
