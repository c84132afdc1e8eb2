package temporal

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/syncbuf"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// await waits, looking every 20 ms, until ok holds; the test binary's
// -timeout is its only bound.
func await(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		time.Sleep(20 * time.Millisecond)
	}
}

// fileOf reads a file of repo, trimmed.
func fileOf(repo, name string) string {
	b, _ := os.ReadFile(filepath.Join(repo, name))
	return strings.TrimSpace(string(b))
}

// runAsync runs wf on eng as run id and returns the channel its result
// comes on.
func runAsync(t *testing.T, ctx context.Context, eng *Engine, opts spec.Options, out io.Writer) <-chan spec.Result {
	t.Helper()
	ended := make(chan spec.Result, 1)
	go func() {
		res, err := eng.Run(ctx, opts, ops.Attach{Output: out})
		if err != nil {
			t.Error(err)
		}
		ended <- res
	}()
	return ended
}

// TestEndToEndWorkerDrains: a worker asked to stop takes no more work,
// lets a running session finish, and once its drain timeout passes
// (its clock, advanced by the test) hands the session still running
// back to its run, which records it and runs it again on another
// worker; the run completes with each step's finished session run
// once.
func TestEndToEndWorkerDrains(t *testing.T) {
	c := devServer(t)
	repo := t.TempDir()
	src := `
name: drain
max_parallel: 2
steps:
  - id: quick
    run: "echo $WORKER > quick.by; while [ ! -f go-quick ]; do sleep 0.05; done"
  - id: slow
    needs: []
    run: "echo $WORKER >> slow.by; while [ ! -f go-slow ]; do sleep 0.05; done"
  - id: after
    needs: [quick]
    run: "echo $WORKER > after.by"
`
	fsys, wf := e2eWorkflow(t, repo, "drain.yaml", src)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	workerOf := func(name string) *Activities {
		acts := e2eActivities(fsys, repo)
		acts.Runner.Environ = append(os.Environ(), "WORKER="+name)
		acts.Runner.KillGrace = 200 * time.Millisecond
		acts.Host, acts.Runner.Host, acts.HeartbeatEvery = name, name, time.Second
		return acts
	}
	a := workerOf("A")
	var alog syncbuf.Buffer
	a.Log = &alog
	fake := clock.NewFake(time.Now())
	actx, stopA := context.WithCancel(ctx)
	servedA := make(chan error, 1)
	go func() {
		servedA <- Serve(actx, c, ServeOptions{Queue: "drain", Shared: true, DrainTimeout: time.Hour, Clock: fake}, a)
	}()
	t.Cleanup(func() {
		stopA()
		fake.Advance(time.Hour)
		<-servedA
	})
	eng := &Engine{Client: c, TaskQueue: "drain", FS: fsys, PollEvery: 50 * time.Millisecond}
	var out syncbuf.Buffer
	ended := runAsync(t, ctx, eng, spec.Options{Workflow: wf, Repo: repo, RunID: "drain-1"}, &out)
	await(t, "quick and slow to run on A", func() bool { return fileOf(repo, "quick.by") == "A" && fileOf(repo, "slow.by") == "A" })

	stopA() // SIGTERM
	await(t, "A to drain", func() bool {
		return strings.Contains(alog.String(), "stopping: taking no more work; 2 session(s) running")
	})
	// A session that ends within the drain ends there.
	if err := os.WriteFile(filepath.Join(repo, "go-quick"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	await(t, "quick to end on A", func() bool { return a.Running() == 1 })
	fake.AwaitWaiters(1)

	// A takes no more work: the step quick lets start waits for a
	// worker, and B takes it.
	b := workerOf("B")
	serveE2E(t, ctx, c, "drain", true, b)
	await(t, "after to run", func() bool { return fileOf(repo, "after.by") != "" })
	if by := fileOf(repo, "after.by"); by != "B" {
		t.Errorf("after ran on %s while A drained, want B", by)
	}
	// The drain times out: slow is handed back and runs again on B.
	fake.Advance(time.Hour)
	if err := <-servedA; err != nil {
		t.Errorf("worker A: %v", err)
	}
	servedA <- nil // for the cleanup
	await(t, "slow to run again", func() bool { return fileOf(repo, "slow.by") == "A\nB" })
	if err := os.WriteFile(filepath.Join(repo, "go-slow"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-ended
	if res.Status != core.RunCompleted {
		t.Fatalf("result %+v\n%s", res, out.String())
	}
	for _, want := range []string{"slow's session (iteration 0, attempt 1) was handed back by worker A: worker A stopped and its sessions did not end within 1h0m0s (--drain-timeout); it runs again on another worker"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the run's output lacks %q:\n%s", want, out.String())
		}
	}
	for _, want := range []string{"handing back 1 session(s) to their runs, which run them again elsewhere: drain-1 slow", "flow worker: stopped"} {
		if !strings.Contains(alog.String(), want) {
			t.Errorf("A's log lacks %q:\n%s", want, alog.String())
		}
	}
	st, _, err := record.LoadState(fsys, record.RunDir(repo, "drain-1"), false, time.Now())
	if err != nil || st.Steps[keytest.K("quick")].Attempts != 1 || st.Steps[keytest.K("slow")].Attempts != 1 || st.Steps[keytest.K("slow")].Status != core.Completed {
		t.Errorf("the record: %v %+v", err, st)
	}
	if !slices.Contains(eventLines(t, fsys, record.RunDir(repo, "drain-1")), "warning slow") {
		t.Errorf("the record holds no warning of slow's hand-back")
	}
}

// TestEndToEndCancelKillsAtOnce: a cancelled run's session, which
// prints nothing and ignores SIGTERM, is killed without waiting for its
// activity's next beat: the workers beat once an hour here, so only the
// kill the run sends can end it — on the session's own worker, or, when
// the workers share the repository, on whichever worker takes the kill.
func TestEndToEndCancelKillsAtOnce(t *testing.T) {
	c := devServer(t)
	for _, tc := range []struct {
		name    string
		workers int
		shared  bool
	}{{"own worker", 1, false}, {"shared repository", 2, true}} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			src := "name: stuck\nsteps:\n  - {id: stuck, run: \"trap '' TERM; echo $$ > stuck.pid; while :; do sleep 0.05; done\"}\n"
			fsys, wf := e2eWorkflow(t, repo, "stuck.yaml", src)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			queue := strings.ReplaceAll(tc.name, " ", "-")
			var wlog syncbuf.Buffer
			for i := range tc.workers {
				acts := e2eActivities(fsys, repo)
				acts.Host = fmt.Sprintf("w%d", i)
				acts.HeartbeatEvery, acts.Runner.KillGrace = time.Hour, 100*time.Millisecond
				acts.Log = &wlog
				serveE2E(t, ctx, c, queue, tc.shared, acts)
			}
			eng := &Engine{Client: c, TaskQueue: queue, FS: fsys, PollEvery: 50 * time.Millisecond, SessionHeartbeat: time.Hour}
			var out syncbuf.Buffer
			id := "stuck-" + queue
			ended := runAsync(t, ctx, eng, spec.Options{Workflow: wf, Repo: repo, RunID: id}, &out)
			await(t, "the session to start", func() bool { return fileOf(repo, "stuck.pid") != "" })
			pid := 0
			fmt.Sscan(fileOf(repo, "stuck.pid"), &pid)
			if _, err := eng.Cancel(ctx, ops.CancelRequest{RunID: id}); err != nil {
				t.Fatal(err)
			}
			res := <-ended
			if res.Status != core.RunInterrupted {
				t.Errorf("result %+v, want interrupted\n%s", res, out.String())
			}
			if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("the session's process group %d after the cancel: %v, want gone", pid, err)
			}
			if want := "run " + id + ": step stuck's session ended: "; !strings.Contains(wlog.String(), want) {
				t.Errorf("the workers' log lacks %q:\n%s", want, wlog.String())
			}
		})
	}
}

// TestEndToEndFollowAcrossContinueAsNew: a follower that looks at a run
// only once it has continued as new several times (the run's end, here)
// gets every event once and in order: those of the earlier executions
// are asked of them.
func TestEndToEndFollowAcrossContinueAsNew(t *testing.T) {
	c := devServer(t)
	repo := t.TempDir()
	var src strings.Builder
	src.WriteString("name: long\nsteps:\n  - {id: s0, run: \"true\"}\n")
	for i := 1; i < 30; i++ {
		fmt.Fprintf(&src, "  - {id: s%d, needs: [s%d], run: \"true\"}\n", i, i-1)
	}
	fsys, wf := e2eWorkflow(t, repo, "long.yaml", src.String())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serveE2E(t, ctx, c, "long", false, e2eActivities(fsys, repo))
	// The follower looks once, when the run has ended.
	eng := &Engine{Client: c, TaskQueue: "long", FS: fsys, PollEvery: time.Hour, HistoryLimit: 60}
	var seqs []int64
	res, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "long-1"}, ops.Attach{Output: io.Discard,
		Events: func(e core.Event) { seqs = append(seqs, e.Seq) }})
	if err != nil || res.Status != core.RunCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	mirrored := eventLines(t, fsys, record.RunDir(repo, "long-1"))
	if len(seqs) != len(mirrored) {
		t.Errorf("followed %d events, the worker's record holds %d", len(seqs), len(mirrored))
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("followed seqs %v: want 1 to %d, each once", seqs, len(seqs))
		}
	}
	// It did continue as new.
	desc, err := c.DescribeWorkflowExecution(ctx, "long-1", "")
	if err != nil {
		t.Fatal(err)
	}
	first := desc.GetWorkflowExecutionInfo().GetFirstRunId()
	if first == desc.GetWorkflowExecutionInfo().GetExecution().GetRunId() {
		t.Errorf("the run never continued as new")
	}
}

// TestEndToEndSecretsHidden: the values of a run's secrets — by the
// default patterns and by the workflow's secrets: — are in none of what
// the run's history on the server holds (read with temporal workflow
// show --output json, payloads decoded), nor in the worker's record;
// and a secret passed with --env is refused.
func TestEndToEndSecretsHidden(t *testing.T) {
	s := startDevServer(t)
	c := s.Client()
	repo := t.TempDir()
	const token, cred = "tok-9f3c1d7e5b", "cred-55aa77bb"
	src := `
name: secret
secrets: [ACME_CRED]
steps:
  - id: leak
    run: 'echo "token=$DEPLOY_TOKEN cred=$ACME_CRED"; printf "{\"status\":\"completed\",\"metrics\":{\"tok\":\"%s\"}}" "$DEPLOY_TOKEN" > "$FLOW_REPORT_PATH"; echo "failed with $ACME_CRED" >&2; exit 1'
    max_attempts: 1
`
	fsys, wf := e2eWorkflow(t, repo, "secret.yaml", src)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acts := e2eActivities(fsys, repo)
	acts.Runner.Environ = append(os.Environ(), "DEPLOY_TOKEN="+token, "ACME_CRED="+cred)
	serveE2E(t, ctx, c, "secret", false, acts)
	eng := &Engine{Client: c, TaskQueue: "secret", FS: fsys, PollEvery: 50 * time.Millisecond}
	var out syncbuf.Buffer
	if _, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "secret-1"}, ops.Attach{Output: &out}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "secret-2", Invocation: record.Invocation{Env: []string{"OTHER_TOKEN=x1234567"}}},
		ops.Attach{Output: io.Discard}); ops.CodeOf(err) != ops.ExitUsage || !strings.Contains(fmt.Sprint(err), "--env OTHER_TOKEN") {
		t.Errorf("a secret passed with --env: %v, want refused (exit 2)", err)
	}
	show := exec.Command(os.Getenv("TEMPORAL_CLI"), "workflow", "show", "-w", "secret-1", "--address", s.FrontendHostPort(), "--output", "json")
	hist, err := show.Output()
	if err != nil {
		t.Fatalf("temporal workflow show: %v", err)
	}
	texts := historyTexts(t, hist)
	hidden := false
	for _, x := range texts {
		for _, secret := range []string{token, cred} {
			if strings.Contains(x, secret) {
				t.Errorf("the history holds the secret %s: %.300s", secret, x)
			}
		}
		hidden = hidden || strings.Contains(x, "token=*** cred=***")
	}
	if !hidden {
		t.Errorf("the history does not hold the session's output with its secrets hidden")
	}
	afero.Walk(fsys, record.RunDir(repo, "secret-1"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		if strings.Contains(p, "/sessions/") {
			return nil // the session's own directory: what it wrote itself
		}
		b, _ := afero.ReadFile(fsys, p)
		if strings.Contains(string(b), token) || strings.Contains(string(b), cred) {
			t.Errorf("%s holds a secret", p)
		}
		return nil
	})
	if strings.Contains(out.String(), token) {
		t.Errorf("the follower printed the secret:\n%s", out.String())
	}
}

// historyTexts returns every string of a history in JSON, and, for a
// payload's data, what it decodes to.
func historyTexts(t *testing.T, b []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("read the history: %v", err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			out = append(out, v)
			if d, err := base64.StdEncoding.DecodeString(v); err == nil {
				out = append(out, string(d))
			}
		}
	}
	walk(v)
	return out
}

// TestEndToEndDecisionSecretsHidden: a decision typed with a secret's
// value in its input and reason is recorded in the worker's record with
// the value hidden, as a local run records it.
func TestEndToEndDecisionSecretsHidden(t *testing.T) {
	c := devServer(t)
	repo := t.TempDir()
	const cred = "cred-81c0ffee42"
	src := `
name: decide
secrets: [ACME_CRED]
steps:
  - id: approve
    human:
      message: ship?
      inputs: [{name: note}]
  - id: after
    needs: [approve]
    run: "true"
`
	fsys, wf := e2eWorkflow(t, repo, "decide.yaml", src)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acts := e2eActivities(fsys, repo)
	acts.Runner.Environ = append(os.Environ(), "ACME_CRED="+cred)
	serveE2E(t, ctx, c, "decide", false, acts)
	eng := &Engine{Client: c, TaskQueue: "decide", FS: fsys, PollEvery: 50 * time.Millisecond, Detach: true}
	if _, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "decide-1"}, ops.Attach{Output: io.Discard}); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := Status(ctx, c, "decide-1")
		if err == nil && st.State.Steps[keytest.K("approve")].Status == core.WaitingOnHuman {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the run never waited on a human: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	in := core.HumanInput{Approved: true, By: "ann", Input: map[string]any{"note": "rotated " + cred}, Reason: "checked " + cred}
	if _, err := Decide(ctx, c, "decide-1", DecideRequest{Step: keytest.K("approve"), Input: in}); err != nil {
		t.Fatal(err)
	}
	dir := record.RunDir(repo, "decide-1")
	for {
		st, _, err := record.LoadState(fsys, dir, false, time.Time{})
		if err == nil && st.Status == core.RunCompleted {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the run never completed in the worker's record: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, err := afero.ReadFile(fsys, filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), cred) || !strings.Contains(string(b), "rotated ***") {
		t.Errorf("the worker's events.jsonl, the decision's secret not hidden:\n%s", b)
	}
	for _, f := range []string{record.StateFile, record.SummaryFile} {
		if b, _ := afero.ReadFile(fsys, filepath.Join(dir, f)); strings.Contains(string(b), cred) {
			t.Errorf("%s holds the decision's secret", f)
		}
	}
}
