package local

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// remoteRun records the start of a run of e's workflow the way another
// driver would: its events decided by a core, mirrored by Mirrors. It
// returns the first decision's effects.
func remoteRun(t *testing.T, e *env, m *Mirrors) []core.Effect {
	t.Helper()
	now := e.clock.Now()
	plan, err := spec.NewPlanOf(e.wf, spec.Budgets{}, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	st := &core.State{}
	evs := []core.Event{newEvent(now, core.EvRunCreated, core.StepKey{}, record.Created(e.wf, repo, "r1", nil)), newEvent(now, core.EvRunnerStarted, core.StepKey{}, core.RunnerStarted{Host: "w"})}
	for _, ev := range evs {
		if err := core.Apply(st, ev); err != nil {
			t.Fatal(err)
		}
	}
	d := core.NewCore(plan).Decide(st, core.Begin{Control: core.Continuous}, now)
	evs = append(evs, d.Events...)
	for i := range evs {
		evs[i].Seq = int64(i + 1)
	}
	if err := m.Append(record.RunDir(repo, "r1"), evs, false); err != nil {
		t.Fatal(err)
	}
	// A second delivery of the same events appends nothing.
	if err := m.Append(record.RunDir(repo, "r1"), evs[1:], false); err != nil {
		t.Fatal(err)
	}
	return d.Effects
}

// TestRemoteSessionRunsAsLocal: a session the core started elsewhere
// runs on the worker with the runner's own code — its environment, its
// log, its report — and its end is what the local driver would give the
// core; the worker's mirror holds each event once.
func TestRemoteSessionRunsAsLocal(t *testing.T) {
	e := newEnv(t, "name: w\nsteps:\n  - id: a\n    run: build\n    gate: {pass: verdict == \"PASS\"}\n")
	m := &Mirrors{FS: e.fs}
	defer m.Close()
	effs := remoteRun(t, e, m)
	var start core.StartSession
	for _, eff := range effs {
		if s, ok := eff.(core.StartSession); ok {
			start = s
		}
	}
	if start.Step != keytest.K("a") {
		t.Fatalf("effects %+v", effs)
	}
	s := &scripted{fs: e.fs, fn: func(c call) reply {
		if c.Env["FLOW_RUN_ID"] != "r1" || c.Attempt != 1 {
			t.Errorf("session env %v", c.Env)
		}
		return reply{Out: "built\nPASS\n", Report: `{"status": "Success", "metrics": {"n": 1}}`}
	}}
	r := &Runner{FS: e.fs, Clock: e.clock, Starter: s, Host: "w", PID: 9}
	rm, err := r.OpenRemote(spec.Options{Workflow: e.wf, Repo: repo, RunID: "r1", Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	var started *core.SessionPID
	pid, done := rm.Session(context.Background(), start, func(p core.SessionPID) { started = &p })
	if started == nil || pid == nil || *started != *pid {
		t.Errorf("told of the session's start %+v, want %+v", started, pid)
	}
	if pid == nil || pid.LogPath != rm.LogPath(start) {
		t.Errorf("pid %+v", pid)
	}
	if done.Facts.ExitCode != 0 || done.Gate == nil || done.Gate.Pass == nil || !done.Gate.Pass.Value || done.Outcome.Metrics["n"] != "1" {
		t.Errorf("session end %+v", done)
	}
	if b, _ := afero.ReadFile(e.fs, rm.LogPath(start)); !strings.Contains(string(b), "built") {
		t.Errorf("log %q", b)
	}
	st, _, err := record.LoadState(e.fs, record.RunDir(repo, "r1"), false, e.clock.Now())
	if err != nil || st.Seq != 3 || st.Steps[keytest.K("a")].Status != core.Running {
		t.Fatalf("mirrored state %v %+v", err, st)
	}
	b, _ := afero.ReadFile(e.fs, record.RunDir(repo, "r1")+"/"+record.EventsFile)
	if n := strings.Count(string(b), "\n"); n != 3 {
		t.Errorf("%d events mirrored, want 3:\n%s", n, b)
	}
}
