//go:build temporal

package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/flow-run/flow/internal/syncbuf"
)

// TestTemporalWorkerWaitsForServer: flow worker started before its
// server waits for it, saying each attempt; it serves runs once the
// server is up, goes on serving across a restart of the server — a
// session running meanwhile ends and its run completes — and stops on
// its context's end (SIGTERM), saying so.
func TestTemporalWorkerWaitsForServer(t *testing.T) {
	bin := os.Getenv("TEMPORAL_CLI")
	if bin == "" {
		t.Skip("end-to-end test against a real Temporal server: set TEMPORAL_CLI to a temporal binary " +
			"(GOBIN=DIR go install github.com/temporalio/cli/cmd/temporal@v1.5.1), or run .ci/run")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "temporal.db")
	if err := os.WriteFile(filepath.Join(dir, "wf.yaml"), []byte("name: waits\nsteps:\n  - {id: a, run: \"echo $FLOW_RUN_ID >> started; while [ ! -f go ]; do sleep 0.05; done; echo a\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("FLOW_TEMPORAL_ADDRESS", addr)
	t.Setenv("FLOW_TEMPORAL_TASK_QUEUE", "waits")
	ctx := context.Background()
	wctx, stop := context.WithCancel(ctx)
	var wout, werr syncbuf.Buffer
	served := make(chan int, 1)
	go func() {
		served <- Run(wctx, []string{"worker", "--repo", dir, "--drain-timeout", "1m"}, Stdio{In: strings.NewReader(""), Out: &wout, Err: &werr})
	}()
	t.Cleanup(func() {
		stop()
		<-served
	})
	await := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			time.Sleep(20 * time.Millisecond)
		}
	}
	await("the worker to try twice", func() bool { return strings.Contains(werr.String(), "(attempt 2: ") })
	if want := "flow worker: Temporal at " + addr + " is not reachable (attempt 1: "; !strings.Contains(werr.String(), want) {
		t.Errorf("the worker's stderr lacks %q:\n%s", want, werr.String())
	}
	start := func() *testsuite.DevServer {
		t.Helper()
		logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
		srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{ExistingPath: bin, LogLevel: "error", DBFilename: db,
			ClientOptions: &client.Options{HostPort: addr, Logger: logger}, Stdout: io.Discard, Stderr: io.Discard})
		if err != nil {
			t.Fatalf("start the dev server %s: %v", bin, err)
		}
		return srv
	}
	srv := start()
	await("the worker to connect", func() bool { return strings.Contains(werr.String(), "flow worker: connected to Temporal at "+addr) })
	flow := func(args ...string) (int, string) {
		var out, errb syncbuf.Buffer
		code := Run(ctx, args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String() + errb.String()
	}
	if code, out := flow("run", "wf.yaml", "--run-id", "w-1", "--detach"); code != 0 {
		t.Fatalf("flow run: exit %d\n%s", code, out)
	}
	await("the session to run", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	// The server restarts while the session runs.
	if err := srv.Stop(); err != nil {
		t.Logf("stop the dev server: %v", err)
	}
	srv = start()
	t.Cleanup(func() { _ = srv.Stop() })
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	await("the run to complete", func() bool {
		_, out := flow("status", "w-1")
		return strings.Contains(out, "status completed")
	})
	if code, out := flow("run", "wf.yaml", "--run-id", "w-2"); code != 0 {
		t.Errorf("a run after the server restarted: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "started")); string(b) != "w-1\nw-2\n" {
		t.Errorf("sessions run: %q, want w-1's once (across the restart) and w-2's", b)
	}
	stop()
	if code := <-served; code != 0 {
		t.Errorf("flow worker stopped with exit %d\n%s", code, werr.String())
	}
	served <- 0
	if !strings.Contains(wout.String(), "flow worker: stopped") {
		t.Errorf("the worker's output lacks its stop:\n%s", wout.String())
	}
}
