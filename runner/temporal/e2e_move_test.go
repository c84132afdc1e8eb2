package temporal

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/syncbuf"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// TestEndToEndMove: on a real server, a run whose worker — a process
// with its own repository — is killed mid-session waits for that host;
// flow resume --move moves it to another worker with another checkout,
// where the session that was cut short runs again and the run
// completes, its finished steps not run again.
func TestEndToEndMove(t *testing.T) {
	s := startDevServer(t)
	c := s.Client()
	repoA, repoB := t.TempDir(), t.TempDir()
	src := `
name: move
steps:
  - id: a
    run: "echo a >> ran"
  - id: long
    needs: [a]
    run: "echo $$ > long.pid; if [ -f slow ]; then sleep 60; fi; echo long >> ran"
  - id: after
    needs: [long]
    run: "echo after >> ran"
`
	fsys, wf := e2eWorkflow(t, repoA, "move.yaml", src)
	if err := os.WriteFile(filepath.Join(repoA, "slow"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	worker := exec.Command(os.Args[0], "-test.run=^$")
	worker.Env = append(os.Environ(), "FLOW_TEST_WORKER="+s.FrontendHostPort(), "FLOW_TEST_QUEUE=move", "FLOW_TEST_REPO="+repoA,
		"FLOW_TEST_HOST=lost", "FLOW_TEST_PINNED=1")
	var errb bytes.Buffer
	worker.Stderr = &errb
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = worker.Process.Kill()
		_ = worker.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eng := &Engine{Client: c, TaskQueue: "move", FS: fsys, PollEvery: 50 * time.Millisecond, SessionHeartbeat: time.Second, Detach: true}
	var out syncbuf.Buffer
	if _, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repoA, RunID: "move-1"}, ops.Attach{Output: &out}); err != nil {
		t.Fatal(err)
	}
	var session int
	for deadline := time.Now().Add(time.Minute); session == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("step long never started on the first worker: %s", errb.String())
		}
		if b, err := os.ReadFile(filepath.Join(repoA, "long.pid")); err == nil {
			session, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	// The host is lost: its worker and the session with it.
	_ = worker.Process.Kill()
	_ = syscall.Kill(-session, syscall.SIGKILL)
	_ = syscall.Kill(session, syscall.SIGKILL)
	// Another worker, with its own checkout, serves the task queue; the
	// run does not go there by itself.
	actsB := e2eActivities(fsys, repoB)
	actsB.Host = "spare"
	serveE2E(t, ctx, c, "move", false, actsB)
	time.Sleep(3 * time.Second) // past the session's heartbeat timeout
	if st, err := Status(ctx, c, "move-1"); err != nil || st.State.Steps[keytest.K("long")].Status != core.Running {
		t.Fatalf("before the move: %v %+v", err, st.State)
	}
	if _, err := os.Stat(filepath.Join(repoB, "ran")); err == nil {
		t.Fatal("a session ran in the spare worker's checkout before the move")
	}
	eng.Detach = false
	l, err := eng.PrepareRestart(ctx, RestartRequest{RunID: "move-1", Move: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(ctx, l.Options, ops.Attach{Output: &out})
	if err != nil || res.Status != core.RunCompleted || res.RunDir != record.RunDir(repoB, "move-1") {
		t.Fatalf("the moved run: %+v %v\n%s", res, err, out.String())
	}
	for _, want := range []string{"run move-1 moves off worker lost (" + repoA + ")", "warning: moved on purpose (--move) off worker lost",
		"long: was running when the last runner died; it runs again", "run move-1 completed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	read := func(repo string) []string {
		b, _ := os.ReadFile(filepath.Join(repo, "ran"))
		return strings.Fields(string(b))
	}
	if got, want := read(repoA), []string{"a"}; !slices.Equal(got, want) {
		t.Errorf("sessions finished on the lost worker: %v, want %v", got, want)
	}
	if got, want := read(repoB), []string{"long", "after"}; !slices.Equal(got, want) {
		t.Errorf("sessions finished on the spare worker: %v, want %v", got, want)
	}
	st, _, err := record.LoadState(fsys, record.RunDir(repoB, "move-1"), false, time.Now())
	if err != nil || st.Status != core.RunCompleted || st.RepoDir != repoB || st.Steps[keytest.K("a")].Attempts != 1 {
		t.Errorf("the spare worker's record: %v %+v", err, st)
	}
	// The run stays on the worker it moved to.
	rec, err := lookup(ctx, c, "move-1")
	if err != nil || rec.launch.Host.Name != "spare" {
		t.Errorf("the run's worker after the move: %+v %v", rec.launch.Host, err)
	}
	if t.Failed() {
		t.Logf("lost worker: %s", errb.String())
	}
}
