//go:build temporal

package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
)

// TestTemporalCLIEditedRestart runs flow-temporal's commands against a
// real dev server, with flow worker in this process: a run, then
// flow resume --start-at-step of a step the edited workflow file adds
// (the file found in the repository), and flow logs --follow of it.
func TestTemporalCLIEditedRestart(t *testing.T) {
	bin := os.Getenv("TEMPORAL_CLI")
	if bin == "" {
		t.Skip("end-to-end test against a real Temporal server: set TEMPORAL_CLI to a temporal binary " +
			"(GOBIN=DIR go install github.com/temporalio/cli/cmd/temporal@v1.5.1), or run .ci/run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{ExistingPath: bin, LogLevel: "error",
		ClientOptions: &client.Options{Logger: logger}, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatalf("start the dev server %s: %v", bin, err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.yaml")
	write := func(src string) {
		if err := os.WriteFile(wf, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := "name: cli\nsteps:\n  - {id: a, run: \"echo a > A.txt\", artifacts: [A.txt]}\n"
	write(src)
	t.Chdir(dir)
	t.Setenv("FLOW_TEMPORAL_ADDRESS", srv.FrontendHostPort())
	t.Setenv("FLOW_TEMPORAL_TASK_QUEUE", "cli")
	flow := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(ctx, args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	wctx, stop := context.WithCancel(ctx)
	served := make(chan int, 1)
	go func() {
		code := Run(wctx, []string{"worker", "--repo", dir}, Stdio{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
		served <- code
	}()
	defer func() {
		stop()
		<-served
	}()
	if code, out, errs := flow("run", "wf.yaml", "--run-id", "cli-1", "--junit", "run.xml"); code != 0 {
		t.Fatalf("flow run: exit %d\n%s%s", code, out, errs)
	}
	// --junit reports a run on Temporal as a local one: its state is
	// asked of the server.
	junitHas := func(file string, want ...string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("--junit %s: %v", file, err)
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q:\n%s", file, w, b)
			}
		}
	}
	junitHas("run.xml", `<testsuite name="cli" tests="1" failures="0"`, `<testcase classname="cli" name="a"`)
	if code, _, errs := flow("run", "wf.yaml", "--junit", "x.xml", "--detach"); code != 2 || !strings.Contains(errs, "not with --detach") {
		t.Errorf("flow run --junit --detach: exit %d, %s", code, errs)
	}
	// Without a run id, flow status shows the newest run on the server,
	// as a local status shows the repository's newest.
	if code, out, errs := flow("status"); code != 0 || !strings.HasPrefix(out, "run cli-1  workflow cli  status completed") {
		t.Errorf("flow status without a run id: exit %d\n%s%s", code, out, errs)
	}
	write(src + "  - {id: c, needs: [a], run: \"for i in 1 2 3; do echo c$i; sleep 0.3; done\"}\n")
	code, out, errs := flow("resume", "cli-1", "--start-at-step", "c", "--junit", "resume.xml")
	if code != 0 {
		t.Fatalf("flow resume --start-at-step c: exit %d\n%s%s", code, out, errs)
	}
	junitHas("resume.xml", `tests="2"`, `<testcase classname="cli" name="c"`)
	for _, want := range []string{"c: new in the workflow; added to the run", "workflow changed since the run last ran", "c: completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("flow resume output lacks %q:\n%s", want, out)
		}
	}
	if code, out, errs := flow("logs", "cli-1", "c", "--follow"); code != 0 || out != "c1\nc2\nc3\n" {
		t.Errorf("flow logs cli-1 c --follow: exit %d, %q %s", code, out, errs)
	}
	if code, _, errs := flow("logs", "cli-1", "--follow"); code != 2 || !strings.Contains(errs, "STEP --follow") {
		t.Errorf("flow logs cli-1 --follow: exit %d, %s", code, errs)
	}
	// A kept step's artifact gone from the worker's checkout: refused
	// unless --force, as locally.
	if err := os.Remove(filepath.Join(dir, "A.txt")); err != nil {
		t.Fatal(err)
	}
	code, out, errs = flow("resume", "cli-1", "--start-at-step", "c")
	if code != 2 || !strings.Contains(out, "  missing: A.txt (artifact of a)") || !strings.Contains(errs, "--force") {
		t.Errorf("flow resume --start-at-step c, A.txt gone: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := flow("resume", "cli-1", "--start-at-step", "c", "--force"); code != 0 || !strings.Contains(out, "  missing: A.txt (artifact of a)") {
		t.Errorf("flow resume --start-at-step c --force: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := flow("resume", "cli-1", "--move"); code != 8 || !strings.Contains(errs, "already completed") {
		t.Errorf("flow resume --move of a completed run: exit %d, %s", code, errs)
	}
	// A heartbeat timeout shorter than the worker's pace of beats (10
	// s): the session's activity beats faster, and a session longer
	// than the timeout runs once.
	if err := os.WriteFile(filepath.Join(dir, "slow.yaml"), []byte("name: slow\nsteps:\n  - {id: s, run: \"echo ran >> slow.txt; sleep 5\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := flow("run", "slow.yaml", "--heartbeat-timeout", "3s"); code != 0 {
		t.Errorf("flow run --heartbeat-timeout 3s: exit %d\n%s%s", code, out, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "slow.txt")); string(b) != "ran\n" {
		t.Errorf("the 5-second session ran %q under a 3-second heartbeat timeout, want once", b)
	}
}
