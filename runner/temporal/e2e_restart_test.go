package temporal

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/syncbuf"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// TestEndToEndEditedRestart: on a real server, a run restarted at a
// step after its workflow file was edited goes on with the edit, as a
// local one does: flow run WORKFLOW --start-at-step names the edited
// file; flow resume finds the run's file in the caller's repository.
// The new steps run, the worker runs the edited commands, and the
// output says what changed.
func TestEndToEndEditedRestart(t *testing.T) {
	c := devServer(t)
	repo := t.TempDir()
	src := "name: edit\nsteps:\n  - {id: a, run: \"echo a >> ran\"}\n  - {id: b, needs: [a], run: \"echo b1 >> ran\"}\n"
	fsys, wf := e2eWorkflow(t, repo, "edit.yaml", src)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acts := e2eActivities(fsys, repo)
	serveE2E(t, ctx, c, "edit", false, acts)
	eng := &Engine{Client: c, TaskQueue: "edit", FS: fsys, PollEvery: 50 * time.Millisecond}
	var out syncbuf.Buffer
	if res, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "edit-1"}, ops.Attach{Output: &out}); err != nil || res.ExitCode != 0 {
		t.Fatalf("first run: %+v %v\n%s", res, err, out.String())
	}
	edit := func(src string) *config.Workflow {
		_, wf := e2eWorkflow(t, repo, "edit.yaml", src)
		return wf
	}
	// flow run edit.yaml --start-at-step b, the file edited: b runs
	// its new command, and c, new, runs after it.
	src = "name: edit\nsteps:\n  - {id: a, run: \"echo a >> ran\"}\n  - {id: b, needs: [a], run: \"echo b2 >> ran\"}\n  - {id: c, needs: [b], run: \"echo c >> ran\"}\n"
	l, err := eng.PrepareRestart(ctx, RestartRequest{RunID: "edit-1", Workflow: edit(src), Repo: repo, StartAt: core.Key("b")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Plan.Kept, keytest.Keys("a")) || !slices.Equal(l.Plan.Rerun, keytest.Keys("b", "c")) {
		t.Errorf("plan keeps %v and re-runs %v, want [a] and [b c]", l.Plan.Kept, l.Plan.Rerun)
	}
	out = syncbuf.Buffer{}
	if res, err := eng.Run(ctx, l.Options, ops.Attach{Output: &out}); err != nil || res.Status != core.RunCompleted {
		t.Fatalf("start at b: %+v %v\n%s", res, err, out.String())
	}
	for _, want := range []string{"c: new in the workflow; added to the run", "workflow changed since the run last ran", "c: completed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// flow resume edit-1 --start-at-step d, the file edited again: the
	// run's file is found in the caller's repository.
	edit(src + "  - {id: d, needs: [c], run: \"echo d >> ran\"}\n")
	l, err = eng.PrepareRestart(ctx, RestartRequest{RunID: "edit-1", Repo: repo, StartAt: core.Key("d")})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := eng.Run(ctx, l.Options, ops.Attach{Output: &out}); err != nil || res.Status != core.RunCompleted {
		t.Fatalf("start at d: %+v %v\n%s", res, err, out.String())
	}
	st, _, err := record.LoadState(fsys, record.RunDir(repo, "edit-1"), false, time.Now())
	if err != nil || !slices.Equal(st.StepOrder, keytest.Keys("a", "b", "c", "d")) || st.Steps[keytest.K("d")].Status != core.Completed {
		t.Errorf("the worker's record: %v %+v", err, st)
	}
	// flow resume of a run that waits on a human, its file edited: the
	// waiting workflow is interrupted and the run goes on with the edit.
	hsrc := "name: wait\nsteps:\n  - {id: h, human: {message: go}}\n"
	_, hwf := e2eWorkflow(t, repo, "wait.yaml", hsrc)
	if res, err := eng.Run(ctx, spec.Options{Workflow: hwf, Repo: repo, RunID: "wait-1", NoWait: true}, ops.Attach{Output: &out}); err != nil || res.ExitCode != int(ops.ExitHuman) {
		t.Fatalf("run to its human step: %+v %v\n%s", res, err, out.String())
	}
	e2eWorkflow(t, repo, "wait.yaml", hsrc+"  - {id: after, needs: [h], run: \"echo after >> ran\"}\n")
	l, err = eng.PrepareRestart(ctx, RestartRequest{RunID: "wait-1", Repo: repo, NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := eng.Run(ctx, l.Options, ops.Attach{Output: &out}); err != nil || res.ExitCode != int(ops.ExitHuman) || res.State.Steps[keytest.K("after")] == nil {
		t.Fatalf("resume with the edit: %+v %v\n%s", res, err, out.String())
	}
	if _, err := Decide(ctx, c, "wait-1", DecideRequest{Step: keytest.K("h"), Input: core.HumanInput{Approved: true}}); err != nil {
		t.Fatal(err)
	}
	// A --no-wait follower that looks before the workflow has moved on
	// from the decision sees the run still waiting: follow it once the
	// step has left its wait (by order; the test's -timeout bounds it).
	for {
		st, err := Status(ctx, c, "wait-1")
		if err != nil {
			t.Fatal(err)
		}
		if h := st.State.Steps[keytest.K("h")]; h != nil && h.Status != core.WaitingOnHuman {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res, err := eng.Run(ctx, l.Options, ops.Attach{Output: &out}); err != nil || res.Status != core.RunCompleted {
		t.Fatalf("after the approval: %+v %v\n%s", res, err, out.String())
	}
	b, _ := os.ReadFile(filepath.Join(repo, "ran"))
	if got, want := strings.Fields(string(b)), []string{"a", "b1", "b2", "c", "d", "after"}; !slices.Equal(got, want) {
		t.Errorf("sessions ran %v, want %v", got, want)
	}
	// A file of another workflow at the run's path is refused.
	edit("name: other\nsteps:\n  - {id: a, run: \"true\"}\n")
	if _, err := eng.PrepareRestart(ctx, RestartRequest{RunID: "edit-1", Repo: repo, StartAt: core.Key("a")}); ops.CodeOf(err) != ops.ExitUsage {
		t.Errorf("restart with another workflow's file: %v, want bad usage (exit 2)", err)
	}
}

// TestEndToEndGatedStartAt: on a real server, a run that waits for the
// gates of its gate-state file ends a --no-wait follower with exit 3,
// as locally; it reads as waiting, not busy, so a start step interrupts
// it and starts it again rather than being refused (exit 7).
func TestEndToEndGatedStartAt(t *testing.T) {
	c := devServer(t)
	repo := t.TempDir()
	src := "name: gated\nsteps:\n  - {id: build, run: \"echo build >> ran\"}\n  - {id: deploy, needs: [build], run: \"echo deploy >> ran\", external_gates: [ci]}\n"
	fsys, wf := e2eWorkflow(t, repo, "gated.yaml", src)
	gates := filepath.Join(repo, "gates.json")
	if err := os.WriteFile(gates, []byte(`{"ci": "pending"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acts := e2eActivities(fsys, repo)
	serveE2E(t, ctx, c, "gated", false, acts)
	eng := &Engine{Client: c, TaskQueue: "gated", FS: fsys, PollEvery: 50 * time.Millisecond}
	var out syncbuf.Buffer
	opts := spec.Options{Workflow: wf, Repo: repo, RunID: "gated-1", NoWait: true, Invocation: record.Invocation{GateStateFile: "gates.json"}}
	res, err := eng.Run(ctx, opts, ops.Attach{Output: &out})
	if err != nil || res.ExitCode != int(ops.ExitHuman) || res.Reason != "waiting on gates: deploy" {
		t.Fatalf("run to its gates: %+v %v\n%s", res, err, out.String())
	}
	st, err := Status(ctx, c, "gated-1")
	if err != nil || st.Liveness.State != record.LiveStopped || st.Liveness.Hook != keytest.K("deploy") {
		t.Errorf("status of the gated run: %+v %v", st.Liveness, err)
	}
	if err := os.WriteFile(gates, []byte(`{"ci": "open"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := eng.PrepareRestart(ctx, RestartRequest{RunID: "gated-1", Repo: repo, StartAt: core.Key("build")})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := eng.Run(ctx, l.Options, ops.Attach{Output: &out}); err != nil || res.Status != core.RunCompleted {
		t.Fatalf("start at build: %+v %v\n%s", res, err, out.String())
	}
	b, _ := os.ReadFile(filepath.Join(repo, "ran"))
	if got, want := strings.Fields(string(b)), []string{"build", "build", "deploy"}; !slices.Equal(got, want) {
		t.Errorf("sessions ran %v, want %v", got, want)
	}
}

// TestEndToEndStartAtArtifacts: on a real server, a start step's plan
// lists the kept steps' artifacts missing from the run's worker's
// checkout, and is refused for them unless forced, as locally; when no
// worker of the run's host answers, the plan is refused saying how to
// go on without the check (--force), or by moving the run.
func TestEndToEndStartAtArtifacts(t *testing.T) {
	c := devServer(t)
	repo := t.TempDir()
	src := "name: arts\nsteps:\n  - {id: plan, run: \"echo the plan > PLAN.md\", artifacts: [PLAN.md]}\n  - {id: code, needs: [plan], run: \"true\"}\n"
	fsys, wf := e2eWorkflow(t, repo, "arts.yaml", src)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := serveE2E(t, ctx, c, "arts", false, e2eActivities(fsys, repo))
	eng := &Engine{Client: c, TaskQueue: "arts", FS: fsys, PollEvery: 50 * time.Millisecond, ArtifactsWait: time.Second}
	if res, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "arts-1"}, ops.Attach{Output: io.Discard}); err != nil || res.ExitCode != 0 {
		t.Fatalf("first run: %+v %v", res, err)
	}
	plan := func(force bool) (*ops.StartAtPlan, error) {
		l, err := eng.PrepareRestart(ctx, RestartRequest{RunID: "arts-1", Repo: repo, StartAt: core.Key("code"), Force: force})
		if err != nil {
			return nil, err
		}
		return l.Plan, nil
	}
	if p, err := plan(false); err != nil || len(p.Missing) != 0 || p.Refused {
		t.Errorf("plan with the artifact there: %+v %v", p, err)
	}
	if err := os.Remove(filepath.Join(repo, "PLAN.md")); err != nil {
		t.Fatal(err)
	}
	want := []ops.MissingArtifact{{Step: keytest.K("plan"), Path: "PLAN.md"}}
	if p, err := plan(false); err != nil || !slices.Equal(p.Missing, want) || !p.Refused {
		t.Errorf("plan with the artifact gone: %+v %v", p, err)
	}
	if p, err := plan(true); err != nil || !slices.Equal(p.Missing, want) || p.Refused {
		t.Errorf("forced plan with the artifact gone: %+v %v", p, err)
	}
	// The run's worker is gone; another one, with its own checkout,
	// serves the task queue.
	stop()
	other := e2eActivities(fsys, t.TempDir())
	other.Host = "other"
	serveE2E(t, ctx, c, "arts", false, other)
	if _, err := plan(false); ops.CodeOf(err) != ops.ExitUsage || !strings.Contains(err.Error(), "--force") {
		t.Errorf("plan with the run's worker gone: %v, want bad usage naming --force", err)
	}
	if p, err := plan(true); err != nil || len(p.Missing) != 0 || p.Refused {
		t.Errorf("forced plan with the run's worker gone: %+v %v", p, err)
	}
}
