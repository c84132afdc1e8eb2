package proc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/syncbuf"
)

// waitFor polls until the output contains s.
func waitFor(t *testing.T, b *syncbuf.Buffer, s string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("output %q never contained %q", b.String(), s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// firstPid parses the first line of output as a pid.
func firstPid(t *testing.T, out string) int {
	t.Helper()
	line, _, _ := strings.Cut(out, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("first output line %q is not a pid", line)
	}
	return pid
}

// gone reports whether no live process has the id pid (a negative pid
// names a group). Zombies count as gone: the container's init may be
// slow to reap orphans, and a zombie still counts as a group member for
// kill(2).
func gone(pid int) bool {
	if runtime.GOOS == "linux" {
		return goneLinux(pid)
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// goneLinux looks for a live process with the id pid, or in the group
// -pid, in /proc.
func goneLinux(pid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil || (pid > 0 && id != pid) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name: state ppid pgrp ...
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		if pid > 0 || fields[2] == strconv.Itoa(-pid) {
			return false
		}
	}
	return true
}

func assertGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for _, pid := range pids {
		for !gone(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d still exists", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

var baseEnv = []string{"PATH=" + os.Getenv("PATH")}

func start(t *testing.T, ctx context.Context, spec Spec) Session {
	t.Helper()
	if spec.Env == nil {
		spec.Env = baseEnv
	}
	st := OS().(osStarter)
	st.drain = 300 * time.Millisecond
	s, err := st.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestExitAndOutput(t *testing.T) {
	tests := []struct {
		name     string
		command  string
		env      []string
		wantCode int
		wantOut  string
	}{
		{"success", "echo hello", nil, 0, "hello\n"},
		{"exit code", "echo partial; exit 3", nil, 3, "partial\n"},
		{"stderr combined in order", "echo out; echo err >&2; echo out2", nil, 0, "out\nerr\nout2\n"},
		{"killed by signal", "kill -KILL $$", nil, -1, ""},
		{"command not found", "no-such-command-xyz 2>/dev/null", nil, 127, ""},
		{"env is complete", `printf '%s|%s' "$FLOW_STEP_ID" "$HOME"`, []string{"FLOW_STEP_ID=coding"}, 0, "coding|"},
		{"no output", "true", nil, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncbuf.Buffer
			s := start(t, context.Background(), Spec{Command: tt.command, Env: tt.env, Output: &out})
			res := s.Wait()
			if res.Err != nil {
				t.Fatalf("Err = %v", res.Err)
			}
			if res.ExitCode != tt.wantCode {
				t.Errorf("ExitCode = %d, want %d", res.ExitCode, tt.wantCode)
			}
			if got := out.String(); got != tt.wantOut {
				t.Errorf("output = %q, want %q", got, tt.wantOut)
			}
			if res.TimedOut || res.Idle || res.Interrupted {
				t.Errorf("stop flags set: %+v", res)
			}
			if res.Ended.Before(res.Started) || res.Started.IsZero() {
				t.Errorf("Started %v, Ended %v", res.Started, res.Ended)
			}
			assertGone(t, -s.Pid())
		})
	}
}

func TestDir(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	res := start(t, context.Background(), Spec{Command: "pwd -P", Dir: dir, Output: &out}).Wait()
	if got := strings.TrimSpace(out.String()); got != dir || res.ExitCode != 0 {
		t.Errorf("pwd = %q (exit %d), want %q", got, res.ExitCode, dir)
	}
}

func TestNilOutput(t *testing.T) {
	s := start(t, context.Background(), Spec{Command: "echo discarded"})
	if res := s.Wait(); res.ExitCode != 0 {
		t.Fatalf("ExitCode = %d", res.ExitCode)
	}
	if !s.LastOutput().After(s.Wait().Started) {
		t.Error("LastOutput not updated by output")
	}
}

func TestStartErrors(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		spec Spec
		want error
	}{
		{"missing dir", context.Background(), Spec{Command: "true", Dir: "/no/such/dir"}, os.ErrNotExist},
		{"cancelled context", cancelled, Spec{Command: "true"}, context.Canceled},
		{"NUL in the environment", context.Background(), Spec{Command: "true", Env: []string{"A=x\x00y"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := OS().Start(tt.ctx, tt.spec)
			if tt.want == nil {
				// No sentinel: the error names the variable.
				if err == nil || !strings.Contains(err.Error(), `environment variable "A" holds a NUL byte`) {
					t.Errorf("err = %v, want one naming A", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// backgroundSleep prints the pid of a background sleep and waits for it.
const backgroundSleep = "sleep 30 & echo $!; wait"

func TestStops(t *testing.T) {
	tests := []struct {
		name    string
		command string
		spec    Spec
		cancel  bool // cancel the context once "ready" or a pid is printed
		// during: cancel while Wait is in progress, not before it
		during bool
		check  func(t *testing.T, res Result, out string)
	}{
		{
			name:    "timeout kills grandchild",
			command: backgroundSleep,
			spec:    Spec{Timeout: 200 * time.Millisecond},
			check: func(t *testing.T, res Result, out string) {
				if !res.TimedOut || res.Idle || res.Interrupted {
					t.Errorf("flags = %+v, want TimedOut", res)
				}
				assertGone(t, firstPid(t, out))
			},
		},
		{
			name:    "idle timeout",
			command: "echo a; sleep 0.1; echo b; sleep 30",
			spec:    Spec{IdleTimeout: 300 * time.Millisecond},
			check: func(t *testing.T, res Result, out string) {
				if !res.Idle || res.TimedOut {
					t.Errorf("flags = %+v, want Idle", res)
				}
				if out != "a\nb\n" {
					t.Errorf("output = %q", out)
				}
			},
		},
		{
			name:    "steady output is not idle",
			command: "for i in 1 2 3 4 5 6; do echo $i; sleep 0.1; done",
			spec:    Spec{IdleTimeout: 400 * time.Millisecond},
			check: func(t *testing.T, res Result, out string) {
				if res.Idle || res.ExitCode != 0 {
					t.Errorf("result = %+v, want a clean exit", res)
				}
			},
		},
		{
			name:    "cancel interrupts and kills group",
			command: backgroundSleep,
			cancel:  true,
			check: func(t *testing.T, res Result, out string) {
				if !res.Interrupted || res.TimedOut {
					t.Errorf("flags = %+v, want Interrupted", res)
				}
				assertGone(t, firstPid(t, out))
			},
		},
		{
			name:    "cancel during Wait interrupts and kills group",
			command: backgroundSleep,
			cancel:  true,
			during:  true,
			check: func(t *testing.T, res Result, out string) {
				if !res.Interrupted || res.TimedOut {
					t.Errorf("flags = %+v, want Interrupted", res)
				}
				assertGone(t, firstPid(t, out))
			},
		},
		{
			name:    "trap on TERM exits within grace",
			command: "trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done",
			spec:    Spec{KillGrace: 5 * time.Second},
			cancel:  true,
			check: func(t *testing.T, res Result, out string) {
				if !res.Interrupted || res.ExitCode != 0 {
					t.Errorf("result = %+v, want Interrupted with exit 0", res)
				}
				if !strings.Contains(out, "bye") {
					t.Errorf("output = %q, want the trap's bye", out)
				}
				if d := res.Ended.Sub(res.Started); d > 2*time.Second {
					t.Errorf("took %v, want well within the grace", d)
				}
			},
		},
		{
			name:    "TERM ignored then SIGKILL",
			command: "trap '' TERM; echo ready; while :; do sleep 0.05; done",
			spec:    Spec{KillGrace: 200 * time.Millisecond, Timeout: 100 * time.Millisecond},
			check: func(t *testing.T, res Result, out string) {
				if !res.TimedOut || res.ExitCode != -1 {
					t.Errorf("result = %+v, want TimedOut with exit -1", res)
				}
				if d := res.Ended.Sub(res.Started); d < 300*time.Millisecond || d > 10*time.Second {
					t.Errorf("took %v, want about timeout+grace", d)
				}
			},
		},
		{
			name:    "background process holding the pipe",
			command: "sleep 30 & echo $!; exit 4",
			check: func(t *testing.T, res Result, out string) {
				if res.ExitCode != 4 {
					t.Errorf("ExitCode = %d, want 4", res.ExitCode)
				}
				if d := res.Ended.Sub(res.Started); d > 10*time.Second {
					t.Errorf("Wait took %v, want it not to wait for the background sleep (30 s)", d)
				}
				assertGone(t, firstPid(t, out))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			spec := tt.spec
			spec.Command = tt.command
			var out syncbuf.Buffer
			spec.Output = &out
			s := start(t, ctx, spec)
			switch {
			case tt.cancel && tt.during:
				go func() {
					// Not waitFor: it may not fail the test from here.
					for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "\n") && time.Now().Before(deadline); {
						time.Sleep(5 * time.Millisecond)
					}
					time.Sleep(50 * time.Millisecond) // let Wait block first
					cancel()
				}()
			case tt.cancel:
				waitFor(t, &out, "\n")
				cancel()
			}
			res := s.Wait()
			if res.Err != nil {
				t.Fatalf("Err = %v", res.Err)
			}
			tt.check(t, res, out.String())
			assertGone(t, -s.Pid())
		})
	}
}

func TestEscapedProcessDoesNotHangWait(t *testing.T) {
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Skip("no setsid")
	}
	pidfile := filepath.Join(t.TempDir(), "pid")
	var out syncbuf.Buffer
	s := start(t, context.Background(), Spec{
		Command: `setsid sh -c 'echo $$; echo $$ >"$PIDFILE"; exec sleep 30' & ` +
			`until [ -s "$PIDFILE" ]; do sleep 0.01; done; exit 0`,
		Env:    []string{"PATH=" + os.Getenv("PATH"), "PIDFILE=" + pidfile},
		Output: &out,
	})
	res := s.Wait()
	pid := firstPid(t, out.String())
	if res.ExitCode != 0 {
		t.Errorf("ExitCode = %d", res.ExitCode)
	}
	if d := res.Ended.Sub(res.Started); d > 2*time.Second {
		t.Errorf("Wait took %v despite an escaped process holding the pipe", d)
	}
	assertGone(t, pid)
}

// TestKillOrphansSparesLiveLeader: a group whose leader still runs is
// somebody's live session, not orphans; it is left alone.
func TestKillOrphansSparesLiveLeader(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if KillOrphans(cmd.Process.Pid) {
		t.Fatal("killed the group of a live leader")
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
		t.Fatalf("leader gone: %v", err)
	}
	if KillOrphans(1) || KillOrphans(0) {
		t.Error("KillOrphans accepted pid 0 or 1")
	}
}

// TestWaitTwice: Wait supervises the session in its first caller's
// goroutine; the others get the same result once it has ended.
func TestWaitTwice(t *testing.T) {
	s := start(t, context.Background(), Spec{Command: "sleep 0.2; exit 3"})
	results := make(chan Result, 3)
	for range 3 {
		go func() { results <- s.Wait() }()
	}
	for range 3 {
		if res := <-results; res.ExitCode != 3 || res.Err != nil {
			t.Errorf("Wait = %+v, want exit 3", res)
		}
	}
	if res := s.Wait(); res.ExitCode != 3 {
		t.Errorf("a later Wait = %+v, want exit 3", res)
	}
}

// TestLateWaitKeepsTheTimeout: the timeout runs from the session's
// start, not from when Wait is called.
func TestLateWaitKeepsTheTimeout(t *testing.T) {
	s := start(t, context.Background(), Spec{Command: "sleep 30", Timeout: 100 * time.Millisecond, KillGrace: time.Second})
	time.Sleep(300 * time.Millisecond)
	begin := time.Now()
	res := s.Wait()
	if !res.TimedOut {
		t.Errorf("Wait = %+v, want TimedOut", res)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("Wait took %v after the timeout had passed", d)
	}
}

// TestCopyOutputReusesItsBuffer checks that copying a session's output
// through the starter's pool allocates no buffer per session (an
// io.Copy from an *os.File allocated 32 KiB each time), and still
// copies everything.
func TestCopyOutputReusesItsBuffer(t *testing.T) {
	bufs := newCopyBuffers()
	want := strings.Repeat("output line\n", 10000)
	var got bytes.Buffer
	copyOutput(&got, strings.NewReader(want), bufs)
	if got.String() != want {
		t.Fatalf("copied %d bytes, want %d", got.Len(), len(want))
	}
	// A file, as a session's pipe is: *os.File has a WriteTo that
	// io.CopyBuffer must not take.
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("x"); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const n = 100
	for range n {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		copyOutput(discard{}, f, bufs)
	}
	runtime.ReadMemStats(&after)
	// A GC may empty the pool, and with the race detector on the pool
	// drops a quarter of what is put in it on purpose: some new buffers
	// are allowed, one per copy is not.
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > copyBufferSize/2 {
		t.Errorf("copying a session's output allocated %d bytes per session, want well under %d", per, copyBufferSize)
	}
}

// discard is io.Discard without its ReadFrom, as a session's output
// writer is.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestShellNotFromTheSessionsDirectory: a starter whose shell was not
// resolved at OS() looks for it in PATH when a session starts, never in
// the session's directory, and a session's environment reaches it with
// each name once, the last value winning.
func TestShellNotFromTheSessionsDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sh"), []byte("#!/bin/sh\necho impostor\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	st := OS().(osStarter)
	st.sh = "sh"
	var out syncbuf.Buffer
	s, err := st.Start(context.Background(), Spec{
		Command: `echo "real $A"`,
		Dir:     dir,
		Env:     append(slices.Clone(baseEnv), "A=first", "A=last"),
		Output:  &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res := s.Wait(); res.ExitCode != 0 || res.Err != nil {
		t.Fatalf("session ended %+v", res)
	}
	if got := out.String(); got != "real last\n" {
		t.Errorf("output %q, want %q", got, "real last\n")
	}
}
