package temporal

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/syncbuf"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// TestMain lets this test binary be a worker process of its own, one
// that a test can kill: with FLOW_TEST_WORKER set to a server's
// address it serves FLOW_TEST_QUEUE over the shared repository
// FLOW_TEST_REPO as host FLOW_TEST_HOST, one activity at a time, until
// SIGTERM; with FLOW_TEST_PINNED set, the repository is its own (runs
// it opens stay on its host queue).
func TestMain(m *testing.M) {
	if addr := os.Getenv("FLOW_TEST_WORKER"); addr != "" {
		if err := serveTestWorker(addr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func serveTestWorker(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: logger})
	if err != nil {
		return err
	}
	defer c.Close()
	host := os.Getenv("FLOW_TEST_HOST")
	acts := &Activities{Runner: &local.Runner{FS: afero.NewOsFs(), Clock: clock.Real(), Starter: proc.OS(), Environ: os.Environ(), Host: host, PID: os.Getpid()},
		Repo: os.Getenv("FLOW_TEST_REPO"), Host: host, HeartbeatEvery: 200 * time.Millisecond, Slots: 1}
	return Serve(ctx, c, ServeOptions{Queue: os.Getenv("FLOW_TEST_QUEUE"), Shared: os.Getenv("FLOW_TEST_PINNED") == ""}, acts)
}

// TestEndToEndWorkerKilled runs a workflow on two worker processes that
// share the repository and run one activity at a time: its two
// parallel steps, which wait for each other, run one on each worker;
// the worker of the next step's session is killed (SIGKILL) mid-session,
// the session's activity times out on its heartbeat and runs again on
// the other worker, and the run completes with no finished step run
// twice.
func TestEndToEndWorkerKilled(t *testing.T) {
	s := startDevServer(t)
	c := s.Client()
	repo := t.TempDir()
	wait := func(name string) string {
		return fmt.Sprintf("echo $PPID > %[1]s.by; touch %[1]s.up; i=0; while [ ! -f %[2]s.up ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; test -f %[2]s.up && echo %[1]s >> ran", name, map[string]string{"left": "right", "right": "left"}[name])
	}
	src := fmt.Sprintf(`
name: killed
max_parallel: 2
steps:
  - id: left
    needs: []
    run: %q
  - id: right
    needs: []
    run: %q
  - id: long
    needs: [left, right]
    run: "echo $PPID >> long.by; if [ $(wc -l < long.by) -eq 1 ]; then sleep 30; fi; echo long >> ran"
  - id: after
    needs: [long]
    run: "echo after >> ran"
`, wait("left"), wait("right"))
	fsys, wf := e2eWorkflow(t, repo, "killed.yaml", src)
	workers := map[int]*exec.Cmd{}
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "FLOW_TEST_WORKER="+s.FrontendHostPort(), "FLOW_TEST_QUEUE=killed", "FLOW_TEST_REPO="+repo,
			fmt.Sprintf("FLOW_TEST_HOST=w%d", i))
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		workers[cmd.Process.Pid] = cmd
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			if errb.Len() > 0 {
				t.Logf("worker w%d: %s", i, errb.String())
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eng := &Engine{Client: c, TaskQueue: "killed", FS: fsys, PollEvery: 50 * time.Millisecond, SessionHeartbeat: 2 * time.Second}
	var out syncbuf.Buffer
	ended := make(chan spec.Result, 1)
	go func() {
		res, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "killed-1"}, ops.Attach{Output: &out})
		if err != nil {
			t.Error(err)
		}
		ended <- res
	}()
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(repo, name))
		return strings.TrimSpace(string(b))
	}
	var victim int
	for deadline := time.Now().Add(time.Minute); victim == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("step long never started\n%s", out.String())
		}
		if by := read("long.by"); by != "" {
			victim, _ = strconv.Atoi(by)
		}
	}
	cmd := workers[victim]
	if cmd == nil {
		t.Fatalf("long runs under pid %d, no worker of this test", victim)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var res spec.Result
	select {
	case res = <-ended:
	case <-ctx.Done():
		t.Fatalf("the run did not end\n%s", out.String())
	}
	if res.Status != core.RunCompleted {
		t.Fatalf("result %+v\n%s", res, out.String())
	}
	if l, r := read("left.by"), read("right.by"); l == r {
		t.Errorf("left and right both ran on worker pid %s: want one on each worker", l)
	}
	by := strings.Fields(read("long.by"))
	if len(by) != 2 || by[0] == by[1] {
		t.Errorf("long ran under %v: want once on each worker", by)
	}
	ran := strings.Fields(read("ran"))
	slices.Sort(ran)
	if want := []string{"after", "left", "long", "right"}; !slices.Equal(ran, want) {
		t.Errorf("finished sessions %v, want each step once: %v", ran, want)
	}
	st, _, err := record.LoadState(fsys, record.RunDir(repo, "killed-1"), false, time.Now())
	if err != nil || st.Status != core.RunCompleted || st.Steps[keytest.K("long")].Attempts != 1 {
		t.Errorf("the record: %v %+v", err, st)
	}
}

// TestEndToEndRetry: on a real server, a failed run is retried in a new
// execution of its workflow id, from the state it ended with; its
// logs' tails are asked of Temporal; resuming it once completed is
// refused (exit 8).
func TestEndToEndRetry(t *testing.T) {
	c := devServer(t)
	repo := t.TempDir()
	src := "name: retry\nsteps:\n  - {id: a, run: \"echo a\"}\n  - {id: b, run: \"echo trying; test -f fixed\", max_attempts: 1}\n"
	fsys, wf := e2eWorkflow(t, repo, "retry.yaml", src)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acts := e2eActivities(fsys, repo)
	serveE2E(t, ctx, c, "retry", false, acts)
	eng := &Engine{Client: c, TaskQueue: "retry", FS: fsys, PollEvery: 50 * time.Millisecond}
	var out syncbuf.Buffer
	res, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "retry-1"}, ops.Attach{Output: &out})
	if err != nil || res.ExitCode != 1 {
		t.Fatalf("first run: %+v %v\n%s", res, err, out.String())
	}
	tails, err := Logs(ctx, c, "retry-1", keytest.K("b"))
	if err != nil || len(tails) != 1 || tails[0].Tail != "trying\n" {
		t.Errorf("logs of b: %+v %v", tails, err)
	}
	if err := os.WriteFile(filepath.Join(repo, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := eng.PrepareRestart(ctx, RestartRequest{RunID: "retry-1", Retry: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.RetryPlan.Rerun; !slices.Equal(got, keytest.Keys("b")) {
		t.Errorf("retry plan re-runs %v, want [b]", got)
	}
	res, err = eng.Run(ctx, l.Options, ops.Attach{Output: &out})
	if err != nil || res.Status != core.RunCompleted {
		t.Fatalf("retry: %+v %v\n%s", res, err, out.String())
	}
	if _, err := eng.PrepareRestart(ctx, RestartRequest{RunID: "retry-1"}); ops.CodeOf(err) != ops.ExitRefused {
		t.Errorf("resuming a completed run: %v, want refused (exit 8)", err)
	}
	st, _, err := record.LoadState(fsys, record.RunDir(repo, "retry-1"), false, time.Now())
	if err != nil || st.Status != core.RunCompleted || st.Generation != 1 || st.Steps[keytest.K("a")].Attempts != 1 {
		t.Errorf("the worker's record: %v %+v", err, st)
	}
}
