package sandbox

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// runnerEnv makes the test binary a runner that starts one sandboxed
// session, for the test that kills a runner: its value is the JSON of a
// runnerArgs.
const runnerEnv = "FLOW_SANDBOX_TEST_RUNNER"

// tokenVar marks the processes of a test's session.
const tokenVar = "FLOW_SANDBOX_TEST_TOKEN"

func TestMain(m *testing.M) {
	Main()
	if a := os.Getenv(runnerEnv); a != "" {
		os.Exit(runRunner(a))
	}
	if a := os.Getenv(attackEnv); a != "" {
		os.Exit(attack(a))
	}
	os.Exit(m.Run())
}

// probed is the answer of Launcher.Probe, asked once per test binary.
var probed = sync.OnceValue(func() error { return Launcher{}.Probe(true) })

// needSandbox skips t where the kernel does not allow the sandbox,
// unless FLOW_REQUIRE_SANDBOX=1 asks for it to fail instead.
func needSandbox(t *testing.T) {
	t.Helper()
	err := probed()
	if err == nil {
		return
	}
	if os.Getenv("FLOW_REQUIRE_SANDBOX") == "1" {
		t.Fatalf("FLOW_REQUIRE_SANDBOX=1 but %v", err)
	}
	t.Skipf("no sandbox here: %v", err)
}

// fixture is a repository with a run record in its .agents directory.
type fixture struct {
	repo, agents, run, session, worktree string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	repo, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	agents := filepath.Join(repo, AgentsDir)
	run := filepath.Join(agents, "runs", "R")
	f := fixture{
		repo:     repo,
		agents:   agents,
		run:      run,
		session:  filepath.Join(run, "sessions", "S"),
		worktree: filepath.Join(agents, "worktrees", "w"),
	}
	for _, d := range []string{f.session, f.worktree, filepath.Join(run, "manual_inputs"), filepath.Join(run, "reports")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(repo, "src.txt"):          "source\n",
		filepath.Join(run, "events.jsonl"):      `{"seq":1,"type":"run_started"}` + "\n",
		filepath.Join(run, "run_state.json"):    `{"run_id":"R","seq":1}` + "\n",
		filepath.Join(run, "control.json"):      `{"desired_state":"continuous"}` + "\n",
		filepath.Join(agents, "history.jsonl"):  "{}\n",
		filepath.Join(f.worktree, "tracked.go"): "package w\n",
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// spec returns the sandbox of a session of the fixture's run, with its
// session directory and worktree writable.
func (f fixture) spec(pidns bool) Spec {
	return Spec{Repo: f.repo, Writable: []string{f.session, f.worktree}, PIDNamespace: pidns}
}

// snapshot describes every entry beneath dir but those beneath skip:
// its type, permissions, and content or link target.
func snapshot(t *testing.T, dir string, skip ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, s := range skip {
			if p == s {
				return filepath.SkipDir
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fi.Mode().String() + " " + fi.ModTime().String()
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			v += " -> " + l
		}
		m[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sessionEnv is a session's environment: a PATH and the fixture's
// locations, which the test scripts use.
func sessionEnv(f fixture, extra ...string) []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"FLOW_TEST_REPO=" + f.repo,
		"FLOW_TEST_RUNNER=" + strconv.Itoa(os.Getpid()),
	}, extra...)
}

// shell runs script with sh -c in the sandbox spec, or unsandboxed when
// spec is nil, in the fixture's repository, and returns its combined
// output and how it ended.
func shell(t *testing.T, f fixture, spec *Spec, script string) (string, *os.ProcessState) {
	t.Helper()
	var cmd *exec.Cmd
	if spec == nil {
		cmd = exec.Command("sh", "-c", script)
		cmd.Dir = f.repo
	} else {
		var err error
		if cmd, err = (Launcher{}).Command(*spec, "sh", "-c", script); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Env = sessionEnv(f)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %q: %v", script, err)
	}
	return out.String(), cmd.ProcessState
}

var pidModes = []struct {
	name  string
	pidns bool
}{{"exec", false}, {"pidns", true}}

func have(prog string) bool {
	_, err := exec.LookPath(prog)
	return err == nil
}

// TestSandboxDenies runs, in the sandbox, each way a session could
// change what lies under .agents outside its own directories, and
// checks that it fails and changes nothing; where it is safe to, the
// same script is run unsandboxed too, and must succeed there, so that
// the test shows the sandbox is what stops it.
func TestSandboxDenies(t *testing.T) {
	needSandbox(t)
	const ev = ".agents/runs/R/events.jsonl"
	cases := []struct {
		name    string
		script  string
		control bool // the script succeeds unsandboxed
		needs   string
	}{
		{name: "create a file", script: "echo x > .agents/new", control: true},
		{name: "write a decision", script: `echo '{"decision":"approved"}' > .agents/runs/R/manual_inputs/R__review.json`, control: true},
		{name: "append an event", script: `echo '{"seq":2,"type":"step_completed"}' >> ` + ev, control: true},
		{name: "overwrite the state", script: "echo '{}' > .agents/runs/R/run_state.json", control: true},
		{name: "truncate the events", script: "truncate -s 0 " + ev, control: true},
		{name: "chmod", script: "chmod 666 .agents/runs/R/run_state.json", control: true},
		{name: "touch", script: "touch -d 2001-01-01 .agents/runs/R/run_state.json", control: true},
		{name: "rename a file", script: "mv .agents/runs/R/run_state.json .agents/runs/R/old.json", control: true},
		{name: "rename the run", script: "mv .agents/runs/R .agents/runs/R2", control: true},
		{name: "rename .agents", script: "mv .agents moved", control: true},
		{name: "rename the repository", script: `cd .. && mv "$FLOW_TEST_REPO" "$FLOW_TEST_REPO.moved" && mkdir -p "$FLOW_TEST_REPO/.agents"`, control: true},
		{name: "delete the events", script: "rm " + ev, control: true},
		{name: "delete .agents", script: "rm -rf .agents", control: true},
		{name: "rmdir", script: "rmdir .agents/runs/R/manual_inputs", control: true},
		{name: "mkdir", script: "mkdir .agents/runs/R/manual_inputs/x", control: true},
		{name: "symlink", script: "ln -s /tmp .agents/runs/R/link", control: true},
		{name: "hard link into the session dir", script: "ln " + ev + " .agents/runs/R/sessions/S/ev && echo x >> .agents/runs/R/sessions/S/ev", control: true},
		{name: "hard link into the repository", script: "ln " + ev + " ev && echo x >> ev", control: true},
		{name: "through the runner's root", script: `echo x >> "/proc/$FLOW_TEST_RUNNER/root$FLOW_TEST_REPO/` + ev + `"`, control: true},
		{name: "through a session dir's parent", script: "cd .agents/runs/R/sessions/S && echo x >> ../../events.jsonl", control: true},
		{name: "remount read-write", script: "mount -o remount,bind,rw .agents && echo x >> " + ev, needs: "mount"},
		{name: "unmount", script: "umount -l .agents && echo x >> " + ev, needs: "umount"},
	}
	for _, mode := range pidModes {
		for _, c := range cases {
			t.Run(mode.name+"/"+c.name, func(t *testing.T) {
				if c.needs != "" && !have(c.needs) {
					t.Skipf("no %s here", c.needs)
				}
				f := newFixture(t)
				spec := f.spec(mode.pidns)
				before := snapshot(t, f.agents, f.session, f.worktree)
				out, st := shell(t, f, &spec, c.script)
				if st.Success() {
					t.Errorf("%q succeeded in the sandbox: %s", c.script, out)
				}
				if diff := cmp.Diff(before, snapshot(t, f.agents, f.session, f.worktree)); diff != "" {
					t.Errorf("%q changed .agents (-before +after):\n%s", c.script, diff)
				}
				if !c.control {
					return
				}
				g := newFixture(t)
				if out, st := shell(t, g, nil, c.script); !st.Success() {
					t.Errorf("control: %q failed unsandboxed: %s", c.script, out)
				}
			})
		}
	}
}

// TestSandboxAllows checks that a session writes its own directory, its
// worktree and the rest of the repository, and that outside it sees what
// the session wrote.
func TestSandboxAllows(t *testing.T) {
	needSandbox(t)
	for _, mode := range pidModes {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			spec := f.spec(mode.pidns)
			script := `set -e
echo '{"status":"completed"}' > .agents/runs/R/sessions/S/report.json
mkdir .agents/runs/R/sessions/S/artifacts && echo a > .agents/runs/R/sessions/S/artifacts/a.txt
echo changed > .agents/worktrees/w/tracked.go
echo new > .agents/worktrees/w/new.go
echo edited > src.txt
mkdir -p pkg/sub && echo p > pkg/sub/p.go && mv pkg/sub/p.go pkg/q.go && rm -r pkg/sub
`
			if out, st := shell(t, f, &spec, script); !st.Success() {
				t.Fatalf("%v: %s", st, out)
			}
			want := map[string]string{
				filepath.Join(f.session, "report.json"):        `{"status":"completed"}` + "\n",
				filepath.Join(f.session, "artifacts", "a.txt"): "a\n",
				filepath.Join(f.worktree, "tracked.go"):        "changed\n",
				filepath.Join(f.worktree, "new.go"):            "new\n",
				filepath.Join(f.repo, "src.txt"):               "edited\n",
				filepath.Join(f.repo, "pkg", "q.go"):           "p\n",
			}
			for p, w := range want {
				if b, err := os.ReadFile(p); err != nil || string(b) != w {
					t.Errorf("%s = %q, %v; want %q", p, b, err, w)
				}
			}
		})
	}
}

// TestSandboxWorkingDirectory checks that the working directory is
// entered after the mounts: one beneath .agents is read-only unless it
// lies in a writable path.
func TestSandboxWorkingDirectory(t *testing.T) {
	needSandbox(t)
	for _, mode := range pidModes {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			spec := f.spec(mode.pidns)

			spec.Dir = f.worktree
			if out, st := shell(t, f, &spec, `[ "$(pwd)" = "$FLOW_TEST_REPO/.agents/worktrees/w" ] && echo x > rel`); !st.Success() {
				t.Errorf("write in the worktree as working directory: %v: %s", st, out)
			}
			if _, err := os.Stat(filepath.Join(f.worktree, "rel")); err != nil {
				t.Error(err)
			}

			spec.Dir = f.run
			if out, st := shell(t, f, &spec, "echo x > rel"); st.Success() {
				t.Errorf("wrote in the run directory as working directory: %s", out)
			}
			if _, err := os.Stat(filepath.Join(f.run, "rel")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("stat %s: %v, want it absent", filepath.Join(f.run, "rel"), err)
			}

			spec.Dir = ""
			if out, st := shell(t, f, &spec, `[ "$(pwd)" = "$FLOW_TEST_REPO" ]`); !st.Success() {
				t.Errorf("default working directory is not the repository: %s", out)
			}
		})
	}
}

// TestSandboxPassesThrough checks that a sandboxed command gets its
// arguments, environment and files, and that its exit status comes back.
func TestSandboxPassesThrough(t *testing.T) {
	needSandbox(t)
	for _, mode := range pidModes {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			spec := f.spec(mode.pidns)
			command := func(t *testing.T, name string, args ...string) *exec.Cmd {
				t.Helper()
				cmd, err := (Launcher{}).Command(spec, name, args...)
				if err != nil {
					t.Fatal(err)
				}
				cmd.Env = []string{"A=1", "B=two words", "PATH=" + os.Getenv("PATH")}
				return cmd
			}
			output := func(t *testing.T, cmd *exec.Cmd) string {
				t.Helper()
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				return string(out)
			}

			t.Run("exit status", func(t *testing.T) {
				for _, code := range []int{0, 1, 3, 125, 255} {
					cmd := command(t, "sh", "-c", fmt.Sprintf("exit %d", code))
					_ = cmd.Run()
					if got := cmd.ProcessState.ExitCode(); got != code {
						t.Errorf("exit %d: got %d", code, got)
					}
				}
			})
			t.Run("signal", func(t *testing.T) {
				for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, syscall.SIGINT} {
					cmd := command(t, "sh", "-c", fmt.Sprintf("kill -%d $$", sig))
					_ = cmd.Run()
					ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
					if mode.pidns {
						if ws.ExitStatus() != 128+int(sig) {
							t.Errorf("%v: got %v, want exit %d", sig, ws, 128+int(sig))
						}
					} else if !ws.Signaled() || ws.Signal() != sig {
						t.Errorf("%v: got %v, want killed by it", sig, ws)
					}
				}
			})
			t.Run("arguments", func(t *testing.T) {
				got := output(t, command(t, "printf", "[%s]", "a b", "", "*", "$A", "-c"))
				if want := "[a b][][*][$A][-c]"; got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			})
			t.Run("environment", func(t *testing.T) {
				cmd := command(t, "cat", "/proc/self/environ")
				want := strings.Join(cmd.Env, "\x00") + "\x00"
				if got := output(t, cmd); got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			})
			t.Run("stdin and stderr", func(t *testing.T) {
				cmd := command(t, "sh", "-c", "cat; echo err >&2")
				cmd.Stdin = strings.NewReader("in\n")
				if got := output(t, cmd); got != "in\nerr\n" {
					t.Errorf("got %q", got)
				}
			})
			t.Run("extra files", func(t *testing.T) {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				cmd := command(t, "sh", "-c", "echo extra >&3")
				cmd.ExtraFiles = []*os.File{w}
				err = cmd.Run()
				w.Close()
				if err != nil {
					t.Fatal(err)
				}
				if b, _ := io.ReadAll(r); string(b) != "extra\n" {
					t.Errorf("got %q on fd 3", b)
				}
			})
			t.Run("no such program", func(t *testing.T) {
				cmd := command(t, filepath.Join(f.repo, "missing"))
				out, _ := cmd.CombinedOutput()
				if got := cmd.ProcessState.ExitCode(); got != ExitNotFound || !strings.Contains(string(out), "flow: sandbox: ") {
					t.Errorf("exit %d: %s", got, out)
				}
			})
			t.Run("setup failure", func(t *testing.T) {
				bad := spec
				bad.Writable = append(bad.Writable, filepath.Join(f.run, "missing"))
				cmd, err := (Launcher{}).Command(bad, "true")
				if err != nil {
					t.Fatal(err)
				}
				out, _ := cmd.CombinedOutput()
				if got := cmd.ProcessState.ExitCode(); got != ExitSetup || !strings.Contains(string(out), "flow: sandbox: bind "+filepath.Join(f.run, "missing")) {
					t.Errorf("exit %d: %s", got, out)
				}
			})
		})
	}
}

// startReady starts cmd with its standard output on a pipe and returns
// once the session wrote "ready" to it.
func startReady(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("read %q, %v; want ready", line, err)
	}
}

// TestSandboxGroupSignal checks that a signal sent to the session's
// process group reaches the session once, and ends it as the session
// decides: killed by it, or in its own way after a trap.
func TestSandboxGroupSignal(t *testing.T) {
	needSandbox(t)
	cases := []struct {
		name, script string
		want         func(pidns bool, ws syscall.WaitStatus, out string) bool
	}{
		{"default", "echo ready; exec sleep 1000000", func(pidns bool, ws syscall.WaitStatus, out string) bool {
			if pidns {
				return ws.Exited() && ws.ExitStatus() == 128+int(syscall.SIGTERM)
			}
			return ws.Signaled() && ws.Signal() == syscall.SIGTERM
		}},
		{"trapped", "trap 'echo got TERM >&2; exit 5' TERM; sleep 1000000 & echo ready; wait; echo not reached", func(pidns bool, ws syscall.WaitStatus, out string) bool {
			// A trap interrupts wait (but not a command in the
			// foreground, which a signal sent before sh started it
			// would not reach).
			return ws.Exited() && ws.ExitStatus() == 5 && strings.Count(out, "got TERM") == 1
		}},
	}
	for _, mode := range pidModes {
		for _, c := range cases {
			t.Run(mode.name+"/"+c.name, func(t *testing.T) {
				f := newFixture(t)
				cmd, err := (Launcher{}).Command(f.spec(mode.pidns), "sh", "-c", c.script)
				if err != nil {
					t.Fatal(err)
				}
				cmd.SysProcAttr.Setpgid = true
				// A file rather than a pipe, which a process left in
				// the group would keep open: without a PID namespace,
				// a background process that gets the signal while its
				// shell is still resetting the traps it inherited
				// misses it.
				stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
				if err != nil {
					t.Fatal(err)
				}
				defer stderr.Close()
				cmd.Stderr = stderr
				startReady(t, cmd)
				t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
				if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				_ = cmd.Wait()
				ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
				out, _ := os.ReadFile(stderr.Name())
				if !c.want(mode.pidns, ws, string(out)) {
					t.Errorf("ended with %v, stderr %q", ws, out)
				}
			})
		}
	}
}

// newToken returns a random marker for a session's processes.
func newToken() string { return rand.Text() }

// marked returns the processes whose environment holds tokenVar=token.
func marked(token string) []int {
	want := []byte(tokenVar + "=" + token + "\x00")
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(append([]byte{0}, b...), append([]byte{0}, want...)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// treeScript starts processes that stay: one that left the group, one
// in the background and one that ignores the usual signals.
const treeScript = `setsid sleep 1000000 &
sleep 1000000 &
(trap '' TERM INT HUP; sleep 1000000) &
echo ready
wait`

// TestSandboxKillLauncher checks that with a PID namespace, killing the
// launcher ends every process of the session.
func TestSandboxKillLauncher(t *testing.T) {
	needSandbox(t)
	f := newFixture(t)
	token := newToken()
	cmd, err := (Launcher{}).Command(f.spec(true), "sh", "-c", treeScript)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = sessionEnv(f, tokenVar+"="+token)
	startReady(t, cmd)
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	procs := openTree(t, cmd.Process.Pid, 5)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	procs.checkExited(t)
	if got := marked(token); len(got) != 0 {
		t.Errorf("processes left after the launcher was killed: %v", got)
	}
}

// tree holds pidfds of a process and its descendants.
type tree map[int]int // pid to pidfd

// openTree opens pidfds of pid and every descendant of it, which must
// be at least min processes.
func openTree(t *testing.T, pid, min int) tree {
	t.Helper()
	procs := tree{}
	t.Cleanup(func() {
		for _, fd := range procs {
			unix.Close(fd)
		}
	})
	var walk func(pid int)
	walk = func(pid int) {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("pidfd of %d: %v", pid, err)
		}
		procs[pid] = fd
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil {
					walk(n)
				}
			}
		}
	}
	walk(pid)
	if len(procs) < min {
		t.Fatalf("session's processes: %d, want at least %d", len(procs), min)
	}
	return procs
}

// checkExited reports each process of the tree that has not exited.
func (procs tree) checkExited(t *testing.T) {
	t.Helper()
	for pid, fd := range procs {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(pfd, 0); err != nil || n != 1 {
			t.Errorf("process %d of the session is still running (%v)", pid, err)
		}
	}
}

// waitExit blocks until the process behind pidfd has exited.
func waitExit(t *testing.T, pidfd int) {
	t.Helper()
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, -1)
		if err == nil {
			return
		}
		if !errors.Is(err, unix.EINTR) {
			t.Fatal(err)
		}
	}
}

// runnerArgs tells a runner process what to start.
type runnerArgs struct {
	Spec   Spec
	Script string
	Token  string
}

// runRunner is the test binary as a runner: it starts the session,
// writes the launcher's pid, and waits.
func runRunner(arg string) int {
	var a runnerArgs
	if err := json.Unmarshal([]byte(arg), &a); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cmd, err := (Launcher{}).Command(a.Spec, "sh", "-c", a.Script)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), tokenVar + "=" + a.Token}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Printf("%d\n", cmd.Process.Pid)
	_ = cmd.Wait()
	return 0
}

// TestSandboxRunnerKilled checks that when the runner is killed, its
// session dies: its main process by its parent-death signal, and with a
// PID namespace every process of it.
func TestSandboxRunnerKilled(t *testing.T) {
	needSandbox(t)
	for _, mode := range pidModes {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			script := "echo ready; exec sleep 1000000"
			if mode.pidns {
				script = treeScript
			}
			token := newToken()
			a, err := json.Marshal(runnerArgs{Spec: f.spec(mode.pidns), Script: script, Token: token})
			if err != nil {
				t.Fatal(err)
			}
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			runner := exec.Command(self)
			runner.Env = append(os.Environ(), runnerEnv+"="+string(a))
			runner.Stderr = os.Stderr
			stdout, err := runner.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := runner.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = runner.Process.Kill()
				_ = runner.Wait()
			})
			br := bufio.NewReader(stdout)
			line, _ := br.ReadString('\n')
			launcher, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("runner wrote %q", line)
			}
			if line, _ := br.ReadString('\n'); line != "ready\n" {
				t.Fatalf("runner wrote %q, want ready", line)
			}
			min := 1 // the launcher, now sleep
			if mode.pidns {
				min = 5 // the launcher, sh and the three sleeps
			}
			procs := openTree(t, launcher, min)
			if err := runner.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = runner.Wait()
			waitExit(t, procs[launcher])
			procs.checkExited(t)
			if got := marked(token); len(got) != 0 {
				t.Errorf("processes left after the runner was killed: %v", got)
			}
		})
	}
}

// TestUnprivileged runs the sandbox tests again as nobody (uid 65534),
// when this test runs as root and setpriv is at hand.
func TestUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the other tests ran unprivileged already")
	}
	needSandbox(t)
	require := os.Getenv("FLOW_REQUIRE_SANDBOX") == "1"
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		if require {
			t.Fatalf("FLOW_REQUIRE_SANDBOX=1 but %v", err)
		}
		t.Skip(err)
	}
	// A copy of the test binary that nobody may run, and a temporary
	// directory nobody may write.
	dir, err := os.MkdirTemp("", "flow-sandbox-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(os.Chmod(dir, 0o755), os.Chown(tmp, 65534, 65534)); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sandbox.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		bin, "-test.run=^TestSandbox", "-test.v", "-test.count=1")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp, "HOME=" + tmp}
	if require {
		cmd.Env = append(cmd.Env, "FLOW_REQUIRE_SANDBOX=1")
	}
	// The output goes to a file: were a process of a failed test left
	// behind, a pipe would not be closed.
	outFile, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	err = cmd.Run()
	out, _ := os.ReadFile(outFile.Name())
	t.Logf("as uid 65534:\n%s", out)
	if err != nil {
		t.Fatalf("as uid 65534: %v", err)
	}
	if bytes.Contains(out, []byte("--- SKIP")) {
		t.Skip("the sandbox tests skipped as uid 65534")
	}
	for _, name := range []string{"TestSandboxDenies", "TestSandboxAllows", "TestSandboxKillLauncher", "TestSandboxRunnerKilled"} {
		if !bytes.Contains(out, []byte("--- PASS: "+name+" ")) {
			t.Errorf("%s did not pass as uid 65534", name)
		}
	}
}

// TestSandboxProc checks that with a PID namespace the session's /proc
// is the namespace's: it lists the launcher as process 1, the session,
// and nothing of the namespace above.
func TestSandboxProc(t *testing.T) {
	needSandbox(t)
	f := newFixture(t)
	spec := f.spec(true)
	out, st := shell(t, f, &spec, `echo $$; cd /proc && echo [0-9]*`)
	if !st.Success() {
		t.Fatalf("%v: %s", st, out)
	}
	sh, procs, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if want := "1 " + sh; procs != want {
		t.Errorf("processes in /proc: %q, want %q (the launcher and sh)", procs, want)
	}
}

// BenchmarkLaunch measures what the launcher adds to the start of a
// session: each run starts true and waits for it, directly, through the
// sandbox, and through the sandbox with a PID namespace. It reports the
// median as well as the mean.
func BenchmarkLaunch(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip(err)
	}
	if err := probed(); err != nil {
		b.Skip(err)
	}
	repo, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	session := filepath.Join(repo, AgentsDir, "runs", "R", "sessions", "S")
	if err := os.MkdirAll(session, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		sandbox bool
		pidns   bool
	}{{"direct", false, false}, {"sandbox", true, false}, {"sandbox-pidns", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			spec := Spec{Repo: repo, Writable: []string{session}, PIDNamespace: c.pidns}
			var times []time.Duration
			for b.Loop() {
				cmd := exec.Command(truePath)
				if c.sandbox {
					if cmd, err = (Launcher{}).Command(spec, truePath); err != nil {
						b.Fatal(err)
					}
				}
				start := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds()), "µs-median/op")
		})
	}
}
