package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/configtest"
	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/internal/faultfs"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// call is one session started through the scripted starter.
type call struct {
	Step string
	// Key is the step's key: its id, or loop[item].step for an
	// instance.
	Key       string
	Attempt   int
	Iteration int
	Command   string
	Env       map[string]string
}

// reply is what a scripted session does.
type reply struct {
	Out         string
	Exit        int
	Report      string
	Interrupted bool
	// Block makes the session run until its context is cancelled.
	Block bool
}

// scripted is a proc.Starter whose sessions follow a script instead of
// running processes. Gate checks (no FLOW_STEP_ID) have Step "check".
type scripted struct {
	fs      afero.Fs
	fn      func(c call) reply
	mu      sync.Mutex
	calls   []call
	started chan call
}

func (s *scripted) Start(ctx context.Context, ps proc.Spec) (proc.Session, error) {
	env := spec.EnvironMap(ps.Env)
	c := call{Step: env["FLOW_STEP_ID"], Key: env["FLOW_STEP_KEY"], Command: ps.Command, Env: env}
	fmt.Sscan(env["FLOW_ATTEMPT"], &c.Attempt)
	fmt.Sscan(env["FLOW_ITERATION"], &c.Iteration)
	if c.Step == "" {
		c.Step = "check"
	}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	if s.started != nil {
		s.started <- c
	}
	r := s.fn(c)
	if r.Report != "" {
		if err := afero.WriteFile(s.fs, env["FLOW_REPORT_PATH"], []byte(r.Report), 0o644); err != nil {
			return nil, err
		}
	}
	if ps.Output != nil && r.Out != "" {
		io.WriteString(ps.Output, r.Out)
	}
	if r.Block {
		return blockedSession{ctx}, nil
	}
	return proc.Ended{Result: proc.Result{ExitCode: r.Exit, Interrupted: r.Interrupted}}, nil
}

// blockedSession is a session that runs until its context is done, and
// is then interrupted.
type blockedSession struct{ ctx context.Context }

func (b blockedSession) Pid() int { return 1 }

func (b blockedSession) Wait() proc.Result {
	<-b.ctx.Done()
	return proc.Result{ExitCode: -1, Interrupted: true}
}

func (b blockedSession) LastOutput() time.Time { return time.Time{} }

func (s *scripted) count(step string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.Step == step {
			n++
		}
	}
	return n
}

// env is a test's file system, clock and workflow.
type env struct {
	t     *testing.T
	fs    afero.Fs
	clock *clock.Fake
	wf    *config.Workflow
	out   strings.Builder
	mu    sync.Mutex
}

const repo = "/repo"

func newEnv(t *testing.T, src string) *env {
	t.Helper()
	e := &env{t: t, fs: afero.NewMemMapFs(), clock: clock.NewFake(time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC))}
	if err := e.fs.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	e.setWorkflow(src)
	return e
}

func (e *env) setWorkflow(src string) {
	e.t.Helper()
	if err := afero.WriteFile(e.fs, repo+"/workflow.yaml", []byte(src), 0o644); err != nil {
		e.t.Fatal(err)
	}
	wf, err := config.Load(e.fs, repo+"/workflow.yaml")
	if err != nil {
		e.t.Fatalf("load workflow: %v", err)
	}
	e.wf = wf
}

func (e *env) runner(fsys afero.Fs, s *scripted) *Runner {
	return &Runner{FS: fsys, Clock: e.clock, Starter: s, Stdout: &syncWriter{mu: &e.mu, b: &e.out}, Host: "test", PID: 4242,
		Alive: func(runlock.Holder) bool { return false }}
}

// run runs (or resumes) the workflow with a script; it fails the test
// on an error of flow itself.
func (e *env) run(s *scripted, opts spec.Options) spec.Result {
	e.t.Helper()
	res, err := e.tryRun(e.fs, s, opts)
	if err != nil {
		e.t.Fatalf("run: %v\noutput:\n%s", err, e.out.String())
	}
	return res
}

func (e *env) tryRun(fsys afero.Fs, s *scripted, opts spec.Options) (spec.Result, error) {
	if s.fs == nil {
		s.fs = fsys
	}
	opts.Workflow, opts.Repo = e.wf, repo
	if opts.RunID == "" {
		opts.RunID = "r1"
	}
	return e.runner(fsys, s).Run(context.Background(), opts)
}

// state reads the run's state from disk, as flow status does, and
// checks that the snapshot on disk plus events equals a replay of the
// events alone.
func (e *env) state(fsys afero.Fs) *core.State {
	e.t.Helper()
	dir := record.RunDir(repo, "r1")
	st, damaged, err := record.LoadState(fsys, dir, false, e.clock.Now())
	if err != nil || damaged {
		e.t.Fatalf("load state: %v (damaged %v)", err, damaged)
	}
	events, err := eventlog.Read(fsys, filepath.Join(dir, record.EventsFile), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	replay := &core.State{}
	for i, ev := range events {
		if ev.Seq != int64(i+1) {
			e.t.Fatalf("event %d has seq %d", i+1, ev.Seq)
		}
		if err := core.Apply(replay, ev); err != nil {
			e.t.Fatal(err)
		}
	}
	a, b := stripRuntime(st), stripRuntime(replay)
	if a != b {
		e.t.Errorf("snapshot+events differs from a replay of events:\n%s\n%s", a, b)
	}
	return st
}

// stripRuntime renders a state without the fields that only the live
// runner refreshes (its heartbeat).
func stripRuntime(st *core.State) string {
	c := st.Clone()
	c.Runner = nil
	b, _ := json.Marshal(c)
	return string(b)
}

type syncWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

const sdlc = `
name: sdlc
vars: {feature: dark mode}
agents:
  coder: {run: 'coder "$FLOW_PROMPT"'}
  reviewer: {run: 'reviewer'}
defaults: {agent: coder}
steps:
  - id: planning
    prompt: Plan {{ vars.feature }}.
    artifacts: [PLAN.md]
  - id: coding
    prompt: Code it.
  - id: tests
    run: go test ./...
  - id: code_review
    agent: reviewer
    prompt: Review.
    gate:
      pass: signals.PASS && !signals.FAIL
      loop_back_to: coding
      max_iterations: 3
  - id: merge
    run: git merge
`

// TestRunSDLC runs a workflow with a review that fails once: the record
// on disk follows a loop-back's progression (docs/concepts.md,
// "Loop-backs"), and every file of the run directory is there.
func TestRunSDLC(t *testing.T) {
	e := newEnv(t, sdlc)
	reviews := 0
	s := &scripted{fn: func(c call) reply {
		switch c.Step {
		case "planning":
			if !strings.Contains(c.Env["FLOW_PROMPT"], "Plan dark mode.") || c.Command != `coder "$FLOW_PROMPT"` {
				t.Errorf("planning session: prompt %q command %q", c.Env["FLOW_PROMPT"], c.Command)
			}
			return reply{Out: "planned\n", Report: `{"status": "Success", "artifacts": ["PLAN.md"], "metrics": {"tasks": 3}, "logs": "made a plan"}`}
		case "code_review":
			reviews++
			if reviews == 1 {
				return reply{Out: "found issues\nFAIL\n"}
			}
			return reply{Out: "<review>PASS</review>\n"}
		case "coding":
			if c.Iteration == 1 {
				fb := c.Env["FLOW_FEEDBACK_FILE"]
				b, err := afero.ReadFile(e.fs, fb)
				if err != nil || !strings.Contains(string(b), "code_review") {
					t.Errorf("re-entered coding: feedback file %q: %s %v", fb, b, err)
				}
			}
		}
		return reply{Out: c.Step + " done\n"}
	}}
	res := e.run(s, spec.Options{})
	if res.ExitCode != 0 || res.Status != core.RunCompleted {
		t.Fatalf("result %+v\n%s", res, e.out.String())
	}
	st := e.state(e.fs)
	want := map[string][2]int{"planning": {0, 1}, "coding": {1, 1}, "tests": {1, 1}, "code_review": {1, 1}, "merge": {1, 1}}
	for id, w := range want {
		s := st.Steps[keytest.K(id)]
		if s.Status != core.Completed || s.IterationCount != w[0] || s.Attempts != w[1] {
			t.Errorf("%s: %s iteration %d attempts %d, want COMPLETED %v", id, s.Status, s.IterationCount, s.Attempts, w)
		}
	}
	p := st.Steps[keytest.K("planning")]
	if p.Metrics["tasks"] != "3" || !slices.Equal(p.Logs, []string{"made a plan"}) || !slices.Equal(p.Artifacts, []string{"PLAN.md"}) {
		t.Errorf("planning report not recorded: %+v", p)
	}
	if s.count("planning") != 1 || s.count("coding") != 2 || s.count("code_review") != 2 {
		t.Errorf("sessions: planning %d coding %d review %d", s.count("planning"), s.count("coding"), s.count("code_review"))
	}
	dir := record.RunDir(repo, "r1")
	for _, f := range []string{record.StateFile, record.EventsFile, record.LoadedWorkflowFile, record.SummaryFile, "logs/coding.1.1.log", "reports/r1__planning.json"} {
		if ok, _ := afero.Exists(e.fs, filepath.Join(dir, f)); !ok {
			t.Errorf("run directory has no %s", f)
		}
	}
	// The snapshot on disk is the final state (written when the run ends).
	b, _ := afero.ReadFile(e.fs, filepath.Join(dir, record.StateFile))
	var disk core.State
	if err := json.Unmarshal(b, &disk); err != nil || disk.Status != core.RunCompleted || disk.Seq != st.Seq {
		t.Errorf("run_state.json on disk: status %s seq %d, want completed seq %d (%v)", disk.Status, disk.Seq, st.Seq, err)
	}
	// Every seed field is present.
	var raw map[string]any
	json.Unmarshal(b, &raw)
	for _, k := range []string{"run_id", "workflow_name", "repo_dir", "reports_dir", "manual_inputs_dir", "created_at", "updated_at", "steps",
		"schema_version", "status", "workflow_file", "workflow_digest", "vars", "runner", "seq"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("run_state.json lacks %q", k)
		}
	}
	step := raw["steps"].(map[string]any)["merge"].(map[string]any)
	for _, k := range []string{"status", "attempts", "iteration_count", "report_path", "started_at", "ended_at", "last_error",
		"artifacts", "metrics", "logs", "manual_input_path", "blocked_by_loop"} {
		if _, ok := step[k]; !ok {
			t.Errorf("step lacks %q", k)
		}
	}
}

// TestSessionOutcomes: exit codes, reports (lenient, partial,
// unreadable) and strict signals decide a session.
func TestSessionOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		step    string // step YAML after "- id: s"
		reply   reply
		status  core.Status
		lastErr string
	}{
		{"exit 0", "run: x", reply{}, core.Completed, ""},
		{"exit 3", "run: x", reply{Exit: 3}, core.Failed, "exit code 3"},
		{"report failed", "run: x", reply{Report: `{"status": "ERROR", "error": "no disk"}`}, core.Failed, "report status failed: no disk"},
		{"report ok alias", "run: x", reply{Report: `{"status": "ok"}`}, core.Completed, ""},
		{"report unreadable", "run: x", reply{Report: `{"status": "comp`}, core.Failed, "unreadable report"},
		{"report unknown word", "run: x", reply{Report: `{"status": "maybe"}`}, core.Failed, `report status "maybe"`},
		{"a FAIL line decides nothing in a command step", "run: x", reply{Out: "work\n  FAIL  \n"}, core.Completed, ""},
		{"PASSWORD is no signal", "run: x\n    gate: {pass: signals.PASS}", reply{Out: "PASSWORD\ntests PASS\nlooks good\n"}, core.Failed, "gate.pass is false"},
		{"review tag passes", "run: x\n    gate: {pass: signals.PASS}", reply{Out: "<review>PASS</review>\n"}, core.Completed, ""},
		{"last verdict wins", "run: x\n    gate: {pass: verdict == \"PASS\"}", reply{Out: "PASS\nFAIL\n"}, core.Failed, "gate.pass is false"},
		{"gate_failure in report", "run: x\n    gate: {pass: 'true'}", reply{Report: `{"status": "completed", "gate_failure": true}`}, core.Failed, "gate_failure"},
		{"verdict FAIL fails a bare gate", "run: x\n    gate: {check: 'true'}", reply{Out: "FAIL\n"}, core.Failed, "verdict is FAIL"},
		{"metric in gate", "run: x\n    gate: {fail: metrics.severity == \"high\"}", reply{Report: `{"metrics": {"severity": "high"}}`}, core.Failed, "gate.fail is true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "name: o\nsteps:\n  - id: s\n    max_attempts: 1\n    "+tt.step+"\n")
			s := &scripted{fn: func(c call) reply {
				if c.Step == "check" {
					return reply{}
				}
				return tt.reply
			}}
			e.run(s, spec.Options{})
			st := e.state(e.fs).Steps[keytest.K("s")]
			if st.Status != tt.status || !strings.Contains(deref(st.LastError), tt.lastErr) {
				t.Errorf("status %s, last_error %q; want %s containing %q", st.Status, deref(st.LastError), tt.status, tt.lastErr)
			}
		})
	}
}

// TestRetryIf: retry_if decides which failures are retried.
func TestRetryIf(t *testing.T) {
	e := newEnv(t, `
name: r
steps:
  - id: s
    run: x
    max_attempts: 3
    retry_if: exit_code == 75
`)
	codes := []int{75, 1}
	n := 0
	s := &scripted{fn: func(c call) reply { n++; return reply{Exit: codes[n-1]} }}
	res := e.run(s, spec.Options{})
	st := e.state(e.fs).Steps[keytest.K("s")]
	if res.ExitCode != 1 || st.Attempts != 2 || st.Status != core.Failed {
		t.Errorf("exit %d, attempts %d, %s; want exit 1 after 2 attempts", res.ExitCode, st.Attempts, st.Status)
	}
}

// TestExpressionsSeeEarlierSteps: when, templates and gates read
// earlier steps' output, metrics and exit codes.
func TestExpressionsSeeEarlierSteps(t *testing.T) {
	e := newEnv(t, `
name: x
steps:
  - id: probe
    run: probe
  - id: deploy
    when: steps.probe.output contains "ready"
    run: deploy {{ steps.probe.metrics.version }}
  - id: rollback
    when: steps.probe.exit_code != 0
    run: rollback
`)
	s := &scripted{fn: func(c call) reply {
		if c.Step == "probe" {
			return reply{Out: "system ready\n", Report: `{"metrics": {"version": 7}}`}
		}
		return reply{}
	}}
	e.run(s, spec.Options{})
	st := e.state(e.fs)
	if st.Steps[keytest.K("deploy")].Status != core.Completed || st.Steps[keytest.K("rollback")].Status != core.Skipped {
		t.Errorf("deploy %s rollback %s", st.Steps[keytest.K("deploy")].Status, st.Steps[keytest.K("rollback")].Status)
	}
	for _, c := range s.calls {
		if c.Step == "deploy" && c.Command != "deploy 7" {
			t.Errorf("deploy command %q", c.Command)
		}
	}
}

// TestInterruptAndResume: an interrupt gives back the attempt of the
// session in flight; resume runs it and nothing finished again.
func TestInterruptAndResume(t *testing.T) {
	e := newEnv(t, "name: i\nsteps:\n  - {id: a, run: x}\n  - {id: b, run: x}\n  - {id: c, run: x}\n")
	s := &scripted{started: make(chan call, 10), fn: func(c call) reply { return reply{Block: c.Step == "b"} }}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for c := range s.started {
			if c.Step == "b" {
				cancel()
			}
		}
	}()
	opts := spec.Options{Workflow: e.wf, Repo: repo, RunID: "r1"}
	s.fs = e.fs
	res, err := e.runner(e.fs, s).Run(ctx, opts)
	if err != nil || res.ExitCode != 130 {
		t.Fatalf("interrupted run: %+v %v", res, err)
	}
	st := e.state(e.fs)
	if st.Steps[keytest.K("b")].Status != core.Pending || st.Steps[keytest.K("b")].Attempts != 0 || st.Status != core.RunInterrupted {
		t.Fatalf("b after interrupt: %+v, run %s", st.Steps[keytest.K("b")], st.Status)
	}
	s2 := &scripted{fn: func(c call) reply { return reply{} }}
	res = e.run(s2, spec.Options{Resume: true})
	if res.ExitCode != 0 || s2.count("a") != 0 || s2.count("b") != 1 || s2.count("c") != 1 {
		t.Fatalf("resume: exit %d, sessions a=%d b=%d c=%d", res.ExitCode, s2.count("a"), s2.count("b"), s2.count("c"))
	}
	if st := e.state(e.fs); st.Steps[keytest.K("b")].Attempts != 1 {
		t.Errorf("b attempts %d after resume, want 1", st.Steps[keytest.K("b")].Attempts)
	}
	close(s.started)
}

// TestStartAt: --start-at-step resets the step and everything
// downstream, keeps upstream, and reports missing artifacts.
func TestStartAt(t *testing.T) {
	e := newEnv(t, sdlc)
	ok := &scripted{fn: func(c call) reply {
		if c.Step == "code_review" {
			return reply{Out: "PASS\n"}
		}
		return reply{}
	}}
	e.run(ok, spec.Options{})
	st := e.state(e.fs)
	plan, err := spec.PlanStartAt(e.fs, e.wf, st, repo, core.Key("coding"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.Kept, keytest.Keys("planning")) || !slices.Equal(plan.Rerun, keytest.Keys("coding", "tests", "code_review", "merge")) {
		t.Errorf("plan %+v", plan)
	}
	if len(plan.Missing) != 1 || plan.Missing[0].Path != "PLAN.md" {
		t.Errorf("missing %+v, want PLAN.md", plan.Missing)
	}
	afero.WriteFile(e.fs, repo+"/PLAN.md", []byte("plan"), 0o644)
	if plan, _ := spec.PlanStartAt(e.fs, e.wf, st, repo, core.Key("coding")); len(plan.Missing) != 0 {
		t.Errorf("missing %+v after writing PLAN.md", plan.Missing)
	}
	again := &scripted{fn: ok.fn}
	res := e.run(again, spec.Options{Resume: true, StartAt: core.Key("coding")})
	if res.ExitCode != 0 || again.count("planning") != 0 || again.count("coding") != 1 || again.count("merge") != 1 {
		t.Errorf("start-at: exit %d sessions %+v", res.ExitCode, again.calls)
	}

	// With no earlier run: a new run whose earlier steps are SKIPPED.
	e2 := newEnv(t, sdlc)
	fresh := &scripted{fn: ok.fn}
	e2.run(fresh, spec.Options{StartAt: core.Key("tests")})
	st = e2.state(e2.fs)
	if st.Steps[keytest.K("planning")].Status != core.Skipped || st.Steps[keytest.K("coding")].Status != core.Skipped || st.Steps[keytest.K("tests")].Status != core.Completed {
		t.Errorf("new run at tests: planning %s coding %s tests %s", st.Steps[keytest.K("planning")].Status, st.Steps[keytest.K("coding")].Status, st.Steps[keytest.K("tests")].Status)
	}
}

// TestEditedWorkflowOnResume: steps added to the workflow start
// PENDING, removed ones are dropped with an event, and the digest
// change is recorded.
func TestEditedWorkflowOnResume(t *testing.T) {
	e := newEnv(t, "name: ed\nsteps:\n  - {id: a, run: x}\n  - {id: old, run: x}\n  - {id: wait, human: {message: go}}\n  - {id: c, run: x}\n")
	s := &scripted{fn: func(c call) reply { return reply{} }}
	res := e.run(s, spec.Options{NoWait: true})
	if res.ExitCode != 3 {
		t.Fatalf("exit %d, want 3 at the human step", res.ExitCode)
	}
	before := e.state(e.fs).WorkflowDigest
	e.setWorkflow("name: ed\nsteps:\n  - {id: a, run: x}\n  - {id: wait, human: {message: go}}\n  - {id: new, run: x}\n  - {id: c, run: x}\n")
	if _, err := record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("wait"), core.HumanInput{Approved: true, By: "alice"}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	s2 := &scripted{fn: s.fn}
	res = e.run(s2, spec.Options{Resume: true, NoWait: true})
	st := e.state(e.fs)
	if res.ExitCode != 0 || st.Steps[keytest.K("old")] != nil || st.Steps[keytest.K("new")].Status != core.Completed || s2.count("a") != 0 {
		t.Fatalf("exit %d, steps %v, a ran %d times", res.ExitCode, st.StepOrder, s2.count("a"))
	}
	if !slices.Equal(st.StepOrder, keytest.Keys("a", "wait", "new", "c")) || st.WorkflowDigest == before {
		t.Errorf("order %v digest %s (before %s)", st.StepOrder, st.WorkflowDigest, before)
	}
	events, _ := eventlog.Read(e.fs, filepath.Join(record.RunDir(repo, "r1"), record.EventsFile), 0)
	types := eventTypes(events)
	for _, want := range []string{core.EvStepAdded, core.EvStepRemoved, core.EvWorkflowChanged, core.EvHumanInput} {
		if !slices.Contains(types, want) {
			t.Errorf("no %s event", want)
		}
	}
}

// TestDamagedStateIsRebuilt: a torn run_state.json is rebuilt from
// events.jsonl on resume and kept aside.
func TestDamagedStateIsRebuilt(t *testing.T) {
	e := newEnv(t, "name: d\nsteps:\n  - {id: a, run: x}\n  - {id: h, human: {message: go}}\n")
	e.run(&scripted{fn: func(call) reply { return reply{} }}, spec.Options{NoWait: true})
	path := filepath.Join(record.RunDir(repo, "r1"), record.StateFile)
	afero.WriteFile(e.fs, path, []byte(`{"run_id": "r1", "steps": {"a": {"sta`), 0o644)
	st, damaged, err := record.LoadState(e.fs, record.RunDir(repo, "r1"), false, e.clock.Now())
	if err != nil || !damaged || st.Steps[keytest.K("a")].Status != core.Completed {
		t.Fatalf("reader: %v damaged %v", err, damaged)
	}
	_, _ = record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("h"), core.HumanInput{Approved: true}, e.clock.Now())
	s := &scripted{fn: func(call) reply { return reply{} }}
	res := e.run(s, spec.Options{Resume: true})
	if res.ExitCode != 0 || s.count("a") != 0 {
		t.Fatalf("exit %d, a ran %d times", res.ExitCode, s.count("a"))
	}
	aside, _ := afero.Glob(e.fs, path+".corrupt-*")
	if len(aside) != 1 {
		t.Errorf("damaged file kept aside: %v", aside)
	}
	e.state(e.fs)
}

// TestSecondRunnerRefused: a run held by a live runner is refused.
func TestSecondRunnerRefused(t *testing.T) {
	e := newEnv(t, "name: l\nsteps:\n  - {id: h, human: {message: go}}\n  - {id: a, run: x}\n")
	e.run(&scripted{fn: ok}, spec.Options{NoWait: true})
	dir := record.RunDir(repo, "r1")
	if _, err := runlock.Acquire(e.fs, filepath.Join(dir, record.LockFile), runlock.Holder{PID: 99, Host: "other"}, nil); err != nil {
		t.Fatal(err)
	}
	r := e.runner(e.fs, &scripted{fn: func(call) reply { return reply{} }})
	r.Alive = func(runlock.Holder) bool { return true }
	_, err := r.Run(context.Background(), spec.Options{Workflow: e.wf, Repo: repo, RunID: "r1", Resume: true})
	if err == nil || !strings.Contains(err.Error(), "pid 99") {
		t.Fatalf("err = %v, want a refusal naming pid 99", err)
	}
}

const faultWorkflow = `
name: faults
steps:
  - {id: a, run: x}
  - {id: b, run: x}
  - id: review
    run: x
    gate: {pass: verdict == "PASS", loop_back_to: b}
  - {id: c, run: x}
`

// TestFaultInjection fails the k-th write, sync and rename of a run,
// for every k, then resumes with a fresh runner on what the file system
// holds: the run completes like an undisturbed one, and no step whose
// completion was recorded runs again.
func TestFaultInjection(t *testing.T) {
	script := func() *scripted {
		return &scripted{fn: func(c call) reply {
			if c.Step == "review" {
				if c.Iteration == 0 {
					return reply{Out: "FAIL\n"}
				}
				return reply{Out: "PASS\n"}
			}
			return reply{}
		}}
	}
	// b and review run again by the review's own loop-back.
	faultInjection(t, faultWorkflow, script, []bool{false, true}, func(key string) bool { return key == "b" || key == "review" })
}

// faultInjection runs src undisturbed, counting its writes, syncs and
// renames; then, for each operation and every k, fails the k-th (once,
// or from then on when sticky) and resumes with a fresh runner on what
// the file system holds. The resumed run must complete like the
// undisturbed one, and no step or instance recorded COMPLETED before the
// crash may run again unless again says it may (a loop-back of the
// script's own).
func faultInjection(t *testing.T, src string, script func() *scripted, stickiness []bool, again func(key string) bool) {
	t.Helper()
	base := newEnv(t, src)
	counter := faultfs.New(base.fs, faultfs.Plan{})
	if res, err := base.tryRun(counter, script(), spec.Options{RunID: "r1"}); err != nil || res.ExitCode != 0 {
		t.Fatalf("undisturbed run: %+v %v\n%s", res, err, base.out.String())
	}
	want := finalSummary(base.state(base.fs))
	for _, op := range []faultfs.Op{faultfs.OpWrite, faultfs.OpSync, faultfs.OpRename} {
		n := counter.Count(op)
		if n == 0 {
			t.Fatalf("the run did no %v", op)
		}
		for k := 1; k <= n; k++ {
			for _, sticky := range stickiness {
				t.Run(fmt.Sprintf("%v-%d-sticky=%v", op, k, sticky), func(t *testing.T) {
					e := newEnv(t, src)
					ffs := faultfs.New(e.fs, faultfs.Plan{Op: op, N: k, Sticky: sticky, Partial: op == faultfs.OpWrite})
					res, err := e.tryRun(ffs, script(), spec.Options{RunID: "r1"})
					if err == nil && res.ExitCode == 0 {
						t.Log("the fault hit nothing that mattered")
						return
					}
					// What a reader sees after the crash.
					var done []string
					if st, _, err := record.LoadState(e.fs, record.RunDir(repo, "r1"), false, e.clock.Now()); err == nil {
						for id, s := range st.Steps {
							if s.Status == core.Completed {
								done = append(done, id.String())
							}
						}
					}
					second := script()
					opts := spec.Options{RunID: "r1", Resume: true}
					if ok, _ := afero.Exists(e.fs, filepath.Join(record.RunDir(repo, "r1"), record.EventsFile)); !ok {
						opts.Resume = false
					} else if _, _, err := record.LoadState(e.fs, record.RunDir(repo, "r1"), false, e.clock.Now()); err != nil {
						// The crash came before the run was recorded at all:
						// start it afresh under another id.
						opts = spec.Options{RunID: "r2"}
					}
					res, err = e.tryRun(e.fs, second, opts)
					if errors.Is(err, core.ErrRefused) && e.state(e.fs).Status == core.RunCompleted {
						// The fault hit after the run's end was recorded: a
						// finished run is not resumed.
						err = nil
					}
					if err != nil || res.ExitCode != 0 {
						t.Fatalf("resume after fault: %+v %v\n%s", res, err, e.out.String())
					}
					if opts.RunID == "r2" {
						return
					}
					for _, id := range done {
						for _, c := range second.calls {
							if c.Key == id && !again(id) {
								t.Errorf("%s was recorded COMPLETED before the crash, yet ran again", id)
							}
						}
					}
					if got := finalSummary(e.state(e.fs)); got != want {
						t.Errorf("final state differs from an undisturbed run:\n got %s\nwant %s", got, want)
					}
				})
			}
		}
	}
}

// finalSummary is the part of a final state that must not depend on
// crashes: each step's status and iteration.
func finalSummary(st *core.State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", st.Status)
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		fmt.Fprintf(&b, " %s=%s/%d", id, s.Status, s.IterationCount)
	}
	return b.String()
}

// TestStepsInWorkflowOrder: run_state.json lists steps in workflow
// order, as docs/record.md says.
func TestStepsInWorkflowOrder(t *testing.T) {
	e := newEnv(t, "name: ord\nsteps:\n  - {id: zeta, run: x}\n  - {id: alpha, run: x}\n  - {id: mid, run: x}\n")
	e.run(&scripted{fn: func(call) reply { return reply{} }}, spec.Options{})
	b, _ := afero.ReadFile(e.fs, filepath.Join(record.RunDir(repo, "r1"), record.StateFile))
	z, a, m := strings.Index(string(b), `"zeta":`), strings.Index(string(b), `"alpha":`), strings.Index(string(b), `"mid":`)
	if !(z >= 0 && z < a && a < m) {
		t.Errorf("steps not in workflow order (zeta %d, alpha %d, mid %d)", z, a, m)
	}
	var st core.State
	if err := json.Unmarshal(b, &st); err != nil || len(st.Steps) != 3 {
		t.Errorf("ordered state does not read back: %v", err)
	}
}

func eventTypes(evs []core.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// loadWorkflow loads a YAML workflow from a string on a MemMapFs.
func loadWorkflow(t testing.TB, src string) *config.Workflow { return configtest.Load(t, src) }

// TestStateExistsForSessions: a session may read $FLOW_STATE_PATH as
// soon as it starts, the first session of a new run too, although the
// run's first snapshot is not due yet (the test's clock stands still).
func TestStateExistsForSessions(t *testing.T) {
	e := newEnv(t, "name: s\nsteps:\n  - {id: a, run: x}\n  - {id: b, run: x}\n")
	seen := map[string]string{}
	s := &scripted{fs: e.fs}
	s.fn = func(c call) reply {
		b, err := afero.ReadFile(s.fs, c.Env["FLOW_STATE_PATH"])
		if err != nil {
			seen[c.Step] = err.Error()
			return reply{}
		}
		var st core.State
		if err := json.Unmarshal(b, &st); err != nil {
			seen[c.Step] = err.Error()
			return reply{}
		}
		seen[c.Step] = st.RunID + " " + string(st.Steps[keytest.K("a")].Status)
		return reply{}
	}
	if res := e.run(s, spec.Options{}); res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	if seen["a"] != "r1 RUNNING" || !strings.HasPrefix(seen["b"], "r1 ") {
		t.Errorf("the sessions read %q", seen)
	}
}
