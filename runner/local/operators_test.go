package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// runAsync starts a run in the background; wait returns its result,
// advancing the fake clock by tick whenever the runner waits on it.
func (e *env) runAsync(s *scripted, opts spec.Options) (wait func(tick time.Duration) spec.Result) {
	var res spec.Result
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = e.tryRun(e.fs, s, opts)
	}()
	return func(tick time.Duration) spec.Result {
		e.t.Helper()
		// No deadline: a run that never ends is bounded by the test
		// binary's -timeout.
	loop:
		for {
			select {
			case <-done:
				break loop
			case <-time.After(time.Millisecond):
				if e.clock.Waiters() >= 2 {
					e.clock.Advance(tick)
				}
			}
		}
		if err != nil {
			e.t.Fatalf("run: %v", err)
		}
		return res
	}
}

// tick advances the fake clock by d once the runner waits on it (its
// heartbeat and its poll).
func (e *env) tick(d time.Duration) {
	e.t.Helper()
	e.clock.AwaitWaiters(2)
	e.clock.Advance(d)
}

// awaitStatus waits until the record shows step in status: by order,
// with the test binary's -timeout as the only bound.
func (e *env) awaitStatus(step string, status core.Status) {
	e.t.Helper()
	for {
		st, _, err := record.LoadState(e.fs, record.RunDir(repo, "r1"), false, e.clock.Now())
		if err == nil && st.Steps[keytest.K(step)] != nil && st.Steps[keytest.K(step)].Status == status {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *env) events() []string {
	evs, err := eventlog.Read(e.fs, filepath.Join(record.RunDir(repo, "r1"), record.EventsFile), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return eventTypes(evs)
}

func ok(call) reply { return reply{} }

// TestHumanApprovedWhileWaiting: a waiting runner notices an approval
// at its next poll, and the input reaches later expressions.
func TestHumanApprovedWhileWaiting(t *testing.T) {
	e := newEnv(t, `
name: h
steps:
  - {id: a, run: x}
  - {id: gate, human: {message: "go?"}}
  - {id: b, run: 'ship {{ steps.gate.input.ticket }}'}
`)
	s := &scripted{fn: ok}
	wait := e.runAsync(s, spec.Options{})
	e.awaitStatus("gate", core.WaitingOnHuman) // the runner is waiting now
	if _, err := record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("gate"), core.HumanInput{Approved: true, By: "alice", Input: map[string]any{"ticket": "OPS-7"}}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if res := wait(250 * time.Millisecond); res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	if s.calls[len(s.calls)-1].Command != "ship OPS-7" {
		t.Errorf("b ran %q", s.calls[len(s.calls)-1].Command)
	}
	// Approving again the same way is a no-op that says who decided;
	// another input, or a rejection now, is refused with exit 8 and
	// what was decided, by whom.
	again, err := record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("gate"), core.HumanInput{Approved: true, By: "bob", Input: map[string]any{"ticket": "OPS-7"}}, e.clock.Now())
	if err != nil || again == nil || again.Already.By != "alice" {
		t.Errorf("identical second approval: %+v, %v", again, err)
	}
	_, err = record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("gate"), core.HumanInput{Approved: true, Input: map[string]any{"ticket": "OPS-8"}}, e.clock.Now())
	if !errors.Is(err, core.ErrRefused) || !strings.Contains(err.Error(), "already approved by alice") {
		t.Errorf("approval with another input: %v", err)
	}
	_, err = record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("gate"), core.HumanInput{Approved: false, Reason: "late"}, e.clock.Now())
	if !errors.Is(err, core.ErrRefused) || !strings.Contains(err.Error(), "already approved by alice") {
		t.Errorf("late rejection: %v", err)
	}
	if _, err := record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("a"), core.HumanInput{Approved: true}, e.clock.Now()); err == nil {
		t.Error("approving a command step was accepted")
	}
}

// TestHumanTimeout: nobody decides before human.timeout: the step fails.
func TestHumanTimeout(t *testing.T) {
	e := newEnv(t, "name: h\nsteps:\n  - {id: gate, human: {message: go, timeout: 1h}}\n")
	wait := e.runAsync(&scripted{fn: ok}, spec.Options{})
	start := e.clock.Now()
	res := wait(10 * time.Minute)
	if waited := e.clock.Now().Sub(start); waited < time.Hour || waited > 2*time.Hour {
		t.Errorf("the step failed after %s, want just after 1h", waited)
	}
	st := e.state(e.fs).Steps[keytest.K("gate")]
	if res.ExitCode != 1 || st.Status != core.Failed || !strings.Contains(deref(st.LastError), "human.timeout") {
		t.Fatalf("exit %d, gate %s %q", res.ExitCode, st.Status, deref(st.LastError))
	}
}

// TestHumanAutoApprove: auto_approve true approves without asking.
func TestHumanAutoApprove(t *testing.T) {
	e := newEnv(t, `
name: h
vars: {risk: low}
steps:
  - {id: gate, human: {message: go, auto_approve: 'vars.risk == "low"'}}
  - {id: b, run: x}
`)
	res := e.run(&scripted{fn: ok}, spec.Options{NoWait: true})
	st := e.state(e.fs).Steps[keytest.K("gate")]
	if res.ExitCode != 0 || st.Status != core.Completed || st.Human == nil || st.Human.By != "auto_approve" {
		t.Fatalf("exit %d, gate %+v", res.ExitCode, st)
	}
	e2 := newEnv(t, strings.Replace(e.wfSource(), "risk: low", "risk: high", 1))
	if res := e2.run(&scripted{fn: ok}, spec.Options{NoWait: true}); res.ExitCode != 3 {
		t.Fatalf("high risk: exit %d, want 3 (waiting)", res.ExitCode)
	}
}

func (e *env) wfSource() string {
	b, _ := afero.ReadFile(e.fs, repo+"/workflow.yaml")
	return string(b)
}

// TestHumanRejectedFails: a rejection fails a step with no loop-back.
func TestHumanRejectedFails(t *testing.T) {
	e := newEnv(t, "name: h\nsteps:\n  - {id: gate, human: {message: go}}\n  - {id: b, run: x}\n")
	e.run(&scripted{fn: ok}, spec.Options{NoWait: true})
	_, _ = record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("gate"), core.HumanInput{Approved: false, By: "bob", Reason: "not today"}, e.clock.Now())
	s := &scripted{fn: ok}
	res := e.run(s, spec.Options{Resume: true, NoWait: true})
	st := e.state(e.fs).Steps[keytest.K("gate")]
	if res.ExitCode != 1 || st.Status != core.Failed || !strings.Contains(deref(st.LastError), "rejected by bob: not today") || s.count("b") != 0 {
		t.Fatalf("exit %d, gate %s %q, b ran %d", res.ExitCode, st.Status, deref(st.LastError), s.count("b"))
	}
}

const fourSteps = "name: c\nsteps:\n  - {id: a, run: x}\n  - {id: b, run: x}\n  - {id: c, run: x}\n  - {id: d, run: x}\n"

// TestPauseDuringSession: a pause asked for during a session lets that
// session finish and holds the next; continue goes on.
func TestPauseDuringSession(t *testing.T) {
	e := newEnv(t, fourSteps)
	dir := record.RunDir(repo, "r1")
	s := &scripted{fn: func(c call) reply {
		if c.Step == "a" {
			if err := record.SetDesired(e.fs, dir, core.Pause, "alice", "for the night", e.clock.Now(), false); err != nil {
				t.Error(err)
			}
		}
		return reply{}
	}}
	res := e.run(s, spec.Options{NoWait: true})
	if res.ExitCode != 4 || s.count("a") != 1 || s.count("b") != 0 {
		t.Fatalf("exit %d, a %d b %d; want exit 4 after a only", res.ExitCode, s.count("a"), s.count("b"))
	}
	c, _ := record.ReadControl(e.fs, dir)
	if c.DesiredState != core.Pause || c.CurrentState != core.Pause || c.SetBy != "alice" {
		t.Errorf("control %+v", c)
	}
	if st := e.state(e.fs); st.Status != core.RunPaused || st.Steps[keytest.K("a")].Status != core.Completed {
		t.Errorf("run %s, a %s", st.Status, st.Steps[keytest.K("a")].Status)
	}

	// run_once: exactly one more session, then both states are pause.
	record.SetDesired(e.fs, dir, core.RunOnce, "alice", "", e.clock.Now(), false)
	s2 := &scripted{fn: ok}
	res = e.run(s2, spec.Options{Resume: true, NoWait: true})
	if res.ExitCode != 4 || len(s2.calls) != 1 || s2.count("b") != 1 {
		t.Fatalf("run_once: exit %d, sessions %d", res.ExitCode, len(s2.calls))
	}
	c, _ = record.ReadControl(e.fs, dir)
	if c.DesiredState != core.Pause || c.CurrentState != core.Pause {
		t.Errorf("after run_once: control %+v, want pause/pause", c)
	}

	// continue: the rest runs.
	record.SetDesired(e.fs, dir, core.Continuous, "alice", "", e.clock.Now(), false)
	s3 := &scripted{fn: ok}
	if res := e.run(s3, spec.Options{Resume: true, NoWait: true}); res.ExitCode != 0 || len(s3.calls) != 2 {
		t.Fatalf("continue: exit %d, sessions %d", res.ExitCode, len(s3.calls))
	}
}

// TestPausedRunWaitsForContinue: a foreground run waits while paused
// and goes on within a poll of flow continue.
func TestPausedRunWaitsForContinue(t *testing.T) {
	e := newEnv(t, fourSteps)
	dir := record.RunDir(repo, "r1")
	e.fs.MkdirAll(dir, 0o755)
	record.SetDesired(e.fs, dir, core.Pause, "alice", "", e.clock.Now(), false)
	s := &scripted{fn: ok}
	wait := e.runAsync(s, spec.Options{})
	e.tick(time.Second)
	// The runner has polled and waits again.
	e.clock.AwaitWaiters(2)
	if n := len(s.calls); n != 0 {
		t.Fatalf("paused run started %d sessions", n)
	}
	record.SetDesired(e.fs, dir, core.Continuous, "alice", "", e.clock.Now(), false)
	if res := wait(250 * time.Millisecond); res.ExitCode != 0 || len(s.calls) != 4 {
		t.Fatalf("exit %d, sessions %d", res.ExitCode, len(s.calls))
	}
	if out := e.out.String(); !strings.Contains(out, "run r1 is paused; it waits: flow continue r1 to go on") {
		t.Errorf("a paused foreground run did not say so:\n%s", out)
	}
}

// TestCleanupSession: run_cleanup runs the workflow's cleanup session,
// then pauses.
func TestCleanupSession(t *testing.T) {
	e := newEnv(t, fourSteps+"cleanup: {run: tidy up}\n")
	dir := record.RunDir(repo, "r1")
	e.fs.MkdirAll(dir, 0o755)
	record.SetDesired(e.fs, dir, core.RunCleanup, "alice", "", e.clock.Now(), false)
	s := &scripted{fn: ok}
	res := e.run(s, spec.Options{NoWait: true})
	if res.ExitCode != 4 || len(s.calls) != 1 || s.calls[0].Command != "tidy up" || s.calls[0].Step != "cleanup" {
		t.Fatalf("exit %d, calls %+v", res.ExitCode, s.calls)
	}
	c, _ := record.ReadControl(e.fs, dir)
	if c.DesiredState != core.Pause || c.CurrentState != core.Pause {
		t.Errorf("after cleanup: control %+v", c)
	}
	// The cleanup session is in the record, and its log is named apart.
	evs, _ := eventlog.Read(e.fs, filepath.Join(dir, record.EventsFile), 0)
	types := eventTypes(evs)
	if !slices.Contains(types, core.EvCleanupStarted) || !slices.Contains(types, core.EvCleanupFinished) || e.state(e.fs).Cleanups != 1 {
		t.Errorf("cleanup events: %v", types)
	}
}

// TestMalformedControl: a malformed control.json, or an unknown state,
// means pause, a warning event, and the file rewritten valid.
func TestMalformedControl(t *testing.T) {
	for name, content := range map[string]string{
		"malformed": `{"desired_state": "contin`,
		"unknown":   `{"desired_state": "sprint", "current_state": "continuous"}`,
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, fourSteps)
			dir := record.RunDir(repo, "r1")
			e.fs.MkdirAll(dir, 0o755)
			afero.WriteFile(e.fs, filepath.Join(dir, record.ControlFile), []byte(content), 0o644)
			s := &scripted{fn: ok}
			res := e.run(s, spec.Options{NoWait: true})
			if res.ExitCode != 4 || len(s.calls) != 0 {
				t.Fatalf("exit %d, sessions %d; want a paused run", res.ExitCode, len(s.calls))
			}
			if !slices.Contains(e.events(), core.EvWarning) {
				t.Error("no warning event")
			}
			c, err := record.ReadControl(e.fs, dir)
			if err != nil || c.DesiredState != core.Pause {
				t.Errorf("control.json not rewritten valid: %+v %v", c, err)
			}
		})
	}
}

// TestControlWritersLoseNothing: humans writing desired_state and the
// runner writing current_state at the same time never undo each
// other's update.
func TestControlWritersLoseNothing(t *testing.T) {
	for name, fsys := range map[string]afero.Fs{"os": afero.NewOsFs(), "mem": afero.NewMemMapFs()} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := fsys.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			states := []core.ControlState{core.Continuous, core.Pause, core.RunOnce, core.RunCleanup}
			now := time.Now()
			for i := 0; i < 100; i++ {
				want, cur := states[i%4], states[(i+1)%4]
				var wg sync.WaitGroup
				wg.Add(2)
				go func() {
					defer wg.Done()
					if err := record.SetDesired(fsys, dir, want, "human", fmt.Sprint(i), now, false); err != nil {
						t.Error(err)
					}
				}()
				go func() {
					defer wg.Done()
					if err := record.UpdateControl(fsys, dir, now, func(c *record.Control) { c.CurrentState = cur }); err != nil {
						t.Error(err)
					}
				}()
				wg.Wait()
				c, err := record.ReadControl(fsys, dir)
				if err != nil {
					t.Fatal(err)
				}
				if c.DesiredState != want || c.CurrentState != cur {
					t.Fatalf("round %d: desired %s current %s; want %s %s (an update was lost)", i, c.DesiredState, c.CurrentState, want, cur)
				}
			}
		})
	}
}

// TestLiveness derives the liveness states
// (docs/operating-runs.md, "Reading status") from a run's record.
func TestLiveness(t *testing.T) {
	now := time.Date(2025, 1, 15, 15, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *core.Time { return &core.Time{Time: now.Add(-ago)} }
	holder := runlock.Holder{PID: 7, Host: "h", StartedAt: now.Add(-time.Hour), Token: "t"}
	tests := []struct {
		name   string
		status core.RunStatus
		steps  map[string]core.Status
		lock   bool
		alive  bool
		beat   time.Duration
		logAge time.Duration
		want   string
		hook   string
	}{
		{name: "completed", status: core.RunCompleted, want: record.LiveDone},
		{name: "failed", status: core.RunFailed, want: record.LiveDone},
		{name: "paused, quiet for hours", status: core.RunPaused, beat: 5 * time.Hour, want: record.LiveStopped},
		{name: "interrupted", status: core.RunInterrupted, want: record.LiveStopped},
		{name: "paused, a foreground runner waits", status: core.RunPaused, lock: true, alive: true, beat: 2 * time.Second, want: record.LiveStopped},
		{name: "paused, its runner gone", status: core.RunPaused, lock: true, alive: false, beat: 2 * time.Second, want: record.LiveStopped},
		{name: "waiting on a human, no runner", status: core.RunWaitingOnHuman, steps: map[string]core.Status{"gate": core.WaitingOnHuman}, want: record.LiveStuck, hook: "gate"},
		{name: "waiting on a human, live runner", status: core.RunRunning, steps: map[string]core.Status{"gate": core.WaitingOnHuman}, lock: true, alive: true, beat: 2 * time.Second, want: record.LiveStuck, hook: "gate"},
		{name: "working", status: core.RunRunning, steps: map[string]core.Status{"coding": core.Running}, lock: true, alive: true, beat: time.Second, want: record.LiveWorking, hook: "coding"},
		{name: "no output past idle_timeout", status: core.RunRunning, steps: map[string]core.Status{"coding": core.Running}, lock: true, alive: true, beat: time.Second, logAge: 11 * time.Minute, want: record.LiveStuck, hook: "coding"},
		{name: "between sessions", status: core.RunRunning, steps: map[string]core.Status{"coding": core.Pending}, lock: true, alive: true, beat: time.Second, want: record.LiveSpawning},
		{name: "stale heartbeat", status: core.RunRunning, steps: map[string]core.Status{"coding": core.Running}, lock: true, alive: true, beat: 20 * time.Second, want: record.LiveStale},
		{name: "heartbeat older than a minute", status: core.RunRunning, steps: map[string]core.Status{"coding": core.Running}, lock: true, alive: true, beat: 61 * time.Second, want: record.LiveDead},
		{name: "holder process gone", status: core.RunRunning, steps: map[string]core.Status{"coding": core.Running}, lock: true, alive: false, beat: time.Second, want: record.LiveDead},
		{name: "running, no lock", status: core.RunRunning, steps: map[string]core.Status{"coding": core.Running}, want: record.LiveDead},
	}
	wf := loadWorkflow(t, "name: l\ndefaults: {idle_timeout: 10m}\nsteps:\n  - {id: coding, run: x}\n  - {id: gate, human: {message: go}}\n")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			dir := "/repo/.agents/runs/r1"
			fsys.MkdirAll(dir+"/logs", 0o755)
			st := &core.State{RunID: "r1", Status: tt.status, Steps: map[core.StepKey]*core.StepState{}, Runner: &core.RunnerInfo{HeartbeatAt: at(tt.beat)}}
			for id, s := range tt.steps {
				ss := &core.StepState{Status: s}
				ss.LogPath = dir + "/logs/" + id + ".0.1.log"
				afero.WriteFile(fsys, ss.LogPath, []byte("out"), 0o644)
				fsys.Chtimes(ss.LogPath, now.Add(-tt.logAge), now.Add(-tt.logAge))
				st.Steps[keytest.K(id)] = ss
				st.StepOrder = append(st.StepOrder, keytest.K(id))
			}
			if tt.lock {
				b, _ := json.Marshal(holder)
				afero.WriteFile(fsys, filepath.Join(dir, record.LockFile), b, 0o644)
			}
			got := record.Live(fsys, dir, st, wf, now, func(runlock.Holder) bool { return tt.alive })
			if got.State != tt.want || got.Hook != keytest.K(tt.hook) {
				t.Errorf("liveness %s [%s] (%s), want %s [%s]", got.State, got.Hook, got.Reason, tt.want, tt.hook)
			}
		})
	}
}

// TestHeartbeat: a runner waiting on a human refreshes heartbeat_at in
// run_state.json, so a quiet run is never taken for dead.
func TestHeartbeat(t *testing.T) {
	e := newEnv(t, "name: h\nsteps:\n  - {id: gate, human: {message: go}}\n")
	ctx, cancel := context.WithCancel(context.Background())
	s := &scripted{fs: e.fs, fn: ok}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.runner(e.fs, s).Run(ctx, spec.Options{Workflow: e.wf, Repo: repo, RunID: "r1"})
	}()
	start := e.clock.Now()
	for i := 0; i < 30; i++ {
		e.tick(time.Second)
	}
	cancel()
	<-done
	b, _ := afero.ReadFile(e.fs, filepath.Join(record.RunDir(repo, "r1"), record.StateFile))
	var st core.State
	json.Unmarshal(b, &st)
	if st.Runner == nil || st.Runner.HeartbeatAt == nil || st.Runner.HeartbeatAt.Sub(start) < 25*time.Second {
		t.Fatalf("heartbeat_at %v, want about 30 s after %v", st.Runner, start)
	}
}

// TestEditWhilePaused: a paused foreground run that goes on takes the
// workflow as edited meanwhile — a new step runs, a new var renders —
// and an edit that does not load keeps it paused, saying why, until it
// is fixed.
func TestEditWhilePaused(t *testing.T) {
	e := newEnv(t, "name: ed\nvars: {a: '1'}\nsteps:\n  - {id: first, run: 'first {{ vars.a }}'}\n  - {id: second, run: 'second {{ vars.a }}'}\n")
	dir := record.RunDir(repo, "r1")
	e.fs.MkdirAll(dir, 0o755)
	record.SetDesired(e.fs, dir, core.Pause, "alice", "", e.clock.Now(), false)
	s := &scripted{fn: ok}
	wait := e.runAsync(s, spec.Options{})
	e.tick(time.Second)
	e.clock.AwaitWaiters(2)
	// A broken edit: the run stays paused.
	afero.WriteFile(e.fs, repo+"/workflow.yaml", []byte("name: ed\nsteps:\n  - {id: first, run: '{{ vars.nope }}'}\n"), 0o644)
	record.SetDesired(e.fs, dir, core.Continuous, "alice", "", e.clock.Now(), false)
	e.tick(time.Second)
	e.clock.AwaitWaiters(2)
	e.tick(time.Second)
	e.clock.AwaitWaiters(2)
	if n := len(s.calls); n != 0 {
		t.Fatalf("a run with a broken edit started %d sessions", n)
	}
	// The fixed edit: a new var and a new step.
	afero.WriteFile(e.fs, repo+"/workflow.yaml", []byte("name: ed\nvars: {a: '1', b: '2'}\nsteps:\n  - {id: first, run: 'first {{ vars.a }} {{ vars.b }}'}\n  - {id: second, run: 'second {{ vars.b }}'}\n  - {id: third, run: third}\n"), 0o644)
	e.tick(time.Second)
	res := wait(250 * time.Millisecond)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", res.ExitCode, e.out.String())
	}
	var cmds []string
	for _, c := range s.calls {
		cmds = append(cmds, c.Command)
	}
	if !slices.Equal(cmds, []string{"first 1 2", "second 2", "third"}) {
		t.Errorf("commands %q", cmds)
	}
	out := e.out.String()
	if !strings.Contains(out, "does not load; the run stays paused") || !strings.Contains(out, `unknown var "nope"`) {
		t.Errorf("no warning about the broken edit:\n%s", out)
	}
	if st := e.state(e.fs); st.Vars["b"] != "2" {
		t.Errorf("vars %v", st.Vars)
	}
}

// TestHumanExpressionErrors: a human.message or human.timeout that
// cannot be evaluated fails the step with where and why, as any other
// expression does; nobody is left waiting on it.
func TestHumanExpressionErrors(t *testing.T) {
	for _, tc := range []struct {
		name, human, want string
	}{
		{"message", `{message: 'deploy {{ int(vars.v) }}'}`, "human.message"},
		{"timeout", `{message: go, timeout: 'int(vars.v)'}`, "human.timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "name: h\nvars: {v: ten}\nsteps:\n  - {id: gate, human: "+tc.human+"}\n  - {id: b, run: x}\n")
			res := e.run(&scripted{fn: ok}, spec.Options{NoWait: true})
			st := e.state(e.fs)
			g := st.Steps[keytest.K("gate")]
			if res.ExitCode != 1 || g.Status != core.Failed || !strings.Contains(deref(g.LastError), "workflow.yaml:4:") || !strings.Contains(deref(g.LastError), tc.want) {
				t.Fatalf("exit %d, gate %s %q; want it failed with %s and its position", res.ExitCode, g.Status, deref(g.LastError), tc.want)
			}
			if b := st.Steps[keytest.K("b")]; b != nil && b.Status != core.Pending && b.Status != core.Skipped {
				t.Errorf("the step after it is %s", b.Status)
			}
		})
	}
}
