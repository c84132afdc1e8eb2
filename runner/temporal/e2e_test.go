package temporal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// devServer starts a real Temporal dev server from the binary
// TEMPORAL_CLI names, or skips the test saying how to run it.
// e2eWorkflow writes a workflow file into repo and loads it from the
// disk, as a worker does.
func e2eWorkflow(t *testing.T, repo, name, src string) (afero.Fs, *config.Workflow) {
	t.Helper()
	path := filepath.Join(repo, name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys := afero.NewOsFs()
	wf, err := config.Load(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	return fsys, wf
}

// e2eActivities are the activities of a worker in repo that runs real
// processes.
func e2eActivities(fsys afero.Fs, repo string) *Activities {
	return &Activities{Runner: &local.Runner{FS: fsys, Clock: clock.Real(), Starter: proc.OS(), Environ: os.Environ(), Host: "e2e", PID: os.Getpid()},
		Repo: repo, Host: "e2e"}
}

func devServer(t *testing.T) client.Client {
	t.Helper()
	return startDevServer(t).Client()
}

func startDevServer(t *testing.T) *testsuite.DevServer {
	t.Helper()
	bin := os.Getenv("TEMPORAL_CLI")
	if bin == "" {
		t.Skip("end-to-end test against a real Temporal server: set TEMPORAL_CLI to a temporal binary " +
			"(GOBIN=DIR go install github.com/temporalio/cli/cmd/temporal@v1.5.1), or run .ci/run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	s, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{ExistingPath: bin, LogLevel: "error",
		ClientOptions: &client.Options{Logger: logger}, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatalf("start the dev server %s: %v", bin, err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// TestEndToEnd runs workflows on a real dev server with a worker in
// this process running real processes: parallel steps, a loop-back, a
// retry and a human step approved by Update (a second decision is
// refused, exit 8), the worker's record; then 20 runs at once on two
// serveE2E runs a worker of queue with acts until ctx ends, the test
// ends or the returned stop is called, which waits for it; a worker
// that ends with an error fails the test.
func serveE2E(t *testing.T, ctx context.Context, c client.Client, queue string, shared bool, acts *Activities) (stop func()) {
	t.Helper()
	wctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- Serve(wctx, c, ServeOptions{Queue: queue, Shared: shared}, acts) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-served; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// workers that share the repository.
func TestEndToEnd(t *testing.T) {
	c := devServer(t)
	repo := t.TempDir()
	src := `
name: e2e
steps:
  - id: a
    run: echo a
  - id: b
    run: "test -f .b-$FLOW_RUN_ID || { touch .b-$FLOW_RUN_ID; exit 1; }"
    max_attempts: 2
    retry: {backoff: 1s}
  - id: review
    needs: [a, b]
    run: "if [ \"$FLOW_ITERATION\" = 0 ]; then echo FAIL; else echo PASS; fi"
    gate:
      pass: verdict == "PASS"
      loop_back_to: a
  - id: approve
    needs: [review]
    human:
      message: ship?
  - id: done
    needs: [approve]
    run: echo shipped
`
	fsys, wf := e2eWorkflow(t, repo, "e2e.yaml", src)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acts := e2eActivities(fsys, repo)
	acts.HeartbeatEvery = time.Second
	serveE2E(t, ctx, c, "e2e", false, acts)
	eng := &Engine{Client: c, TaskQueue: "e2e", FS: fsys, PollEvery: 50 * time.Millisecond}
	var out bytes.Buffer
	ended := make(chan spec.Result, 1)
	go func() {
		res, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "e2e-1"}, ops.Attach{Output: &out})
		if err != nil {
			t.Error(err)
		}
		ended <- res
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := Status(ctx, c, "e2e-1")
		if err == nil && st.State.Steps[keytest.K("approve")].Status == core.WaitingOnHuman {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never waited on a human: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// flow status --watch: a run that waits on a human is stopped, so
	// the watch shows it once and ends.
	var updates []ops.Update
	if err := Watch(ctx, c, "e2e-1", 10*time.Millisecond, ops.WatchOptions{}, func(u ops.Update) error { updates = append(updates, u); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(updates) != 1 || !updates[0].First || updates[0].Status.State.Steps[keytest.K("approve")].Status != core.WaitingOnHuman || !updates[0].Status.Over() {
		t.Errorf("watch of a run waiting on a human: %+v", updates)
	}
	if _, err := Decide(ctx, c, "e2e-1", DecideRequest{Step: keytest.K("approve"), Input: core.HumanInput{Approved: true, By: "ann"}}); err != nil {
		t.Fatal(err)
	}
	_, err := Decide(ctx, c, "e2e-1", DecideRequest{Step: keytest.K("approve"), Input: core.HumanInput{Approved: true, By: "bob"}})
	if code := ops.CodeOf(err); code != ops.ExitRefused {
		t.Errorf("a second decision: %v (exit %d), want refused (exit 8)", err, code)
	}
	var res spec.Result
	select {
	case res = <-ended:
	case <-time.After(30 * time.Second):
		t.Fatalf("the run did not end\n%s", out.String())
	}
	if res.ExitCode != 0 {
		t.Fatalf("result %+v\n%s", res, out.String())
	}
	for _, want := range []string{"b: attempt 1 failed", "review: looping back to a (iteration 1)", `approve: waiting on a human: "ship?"`, "run e2e-1 completed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "e2e-1"}, ops.Attach{Output: io.Discard}); ops.CodeOf(err) != ops.ExitUsage {
		t.Errorf("a second run e2e-1: %v, want refused as bad usage (exit 2)", err)
	}
	st, _, err := record.LoadState(fsys, record.RunDir(repo, "e2e-1"), false, time.Now())
	if err != nil || st.Status != core.RunCompleted || st.Steps[keytest.K("approve")].Human.By != "ann" {
		t.Errorf("the worker's record: %v %+v", err, st)
	}

	// 20 runs at once, on two workers that share the repository.
	for i := range 2 {
		shared := &Activities{Runner: acts.Runner, Repo: repo, Host: fmt.Sprintf("shared-%d", i), HeartbeatEvery: time.Second}
		serveE2E(t, ctx, c, "e2e-shared", true, shared)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("many-%d", i)
			many := &Engine{Client: c, TaskQueue: "e2e-shared", FS: fsys, PollEvery: 100 * time.Millisecond}
			res, err := many.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: id, NoWait: true}, ops.Attach{Output: io.Discard})
			if err != nil || res.ExitCode != int(ops.ExitHuman) {
				t.Errorf("%s: %+v %v", id, res, err)
			}
		}()
	}
	wg.Wait()
	t.Logf("20 runs to their human step in %s on two workers", time.Since(start).Round(time.Millisecond))
}
