package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/countfs"
	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

var update = flag.Bool("update", false, "rewrite the golden JSON files in testdata")

// reply is what a scripted session does.
type reply struct {
	Out  string
	Exit int
}

// scripted is a proc.Starter whose sessions follow a script instead of
// running processes: each session of a step prints the step's Out and
// exits with its Exit.
type scripted struct {
	fs      afero.Fs
	replies map[string]reply
	mu      sync.Mutex
	calls   []string
}

func (s *scripted) Start(ctx context.Context, spec proc.Spec) (proc.Session, error) {
	step := ""
	for _, kv := range spec.Env {
		if v, ok := strings.CutPrefix(kv, "FLOW_STEP_ID="); ok {
			step = v
		}
	}
	s.mu.Lock()
	s.calls = append(s.calls, step)
	s.mu.Unlock()
	r := s.replies[step]
	if spec.Output != nil && r.Out != "" {
		io.WriteString(spec.Output, r.Out)
	}
	return proc.Ended{Result: proc.Result{ExitCode: r.Exit}}, nil
}

const repo = "/repo"

// wf is the workflow file of the tests.
const wf = repo + "/wf.yaml"

// t0 is the fake clock's start.
var t0 = time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)

// newService returns a Service over an in-memory file system holding
// /repo/wf.yaml (src), a fake clock and scripted sessions.
func newService(t *testing.T, src string, replies map[string]reply) (*Service, *clock.Fake) {
	t.Helper()
	fsys := afero.NewMemMapFs()
	if err := afero.WriteFile(fsys, repo+"/wf.yaml", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	return &Service{
		FS:      fsys,
		Clock:   clk,
		Starter: &scripted{fs: fsys, replies: replies},
		Dir:     repo,
		Host:    "test",
		PID:     4242,
		Environ: []string{"HOME=/home/tester", "CI=true"},
		User:    "tester",
		Alive:   func(runlock.Holder) bool { return false },
	}, clk
}

// run prepares and starts a run, failing the test on an error.
func run(t *testing.T, s *Service, req RunRequest) RunResult {
	t.Helper()
	l, err := s.PrepareRun(req)
	if err != nil {
		t.Fatalf("PrepareRun: %v", err)
	}
	res, err := s.Start(context.Background(), l, Attach{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return res
}

// wantCode checks that err carries code, and that its message contains
// each of msgs.
func wantCode(t *testing.T, err error, code ExitCode, msgs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want exit %d", code)
	}
	if got := CodeOf(err); got != code {
		t.Errorf("exit %d; want %d (%v)", got, code, err)
	}
	for _, m := range msgs {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not say %q", err, m)
		}
	}
}

// golden compares v's JSON with testdata/name.json, or rewrites it
// with -update.
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("marshal %s: %v", name, err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s JSON changed:\n%s\nwant:\n%s", name, got, want)
	}
}

const twoSteps = `name: wf
vars:
  feature: "none"
steps:
  - id: plan
    run: echo plan
    artifacts: [PLAN.md]
  - id: code
    run: echo code
`

func TestPrepareRunRefusals(t *testing.T) {
	tests := []struct {
		name string
		src  string
		req  RunRequest
		msgs []string
	}{
		{"unknown var", twoSteps, RunRequest{Vars: []string{"featur=x"}}, []string{`no var "featur"`, `did you mean "feature"`, "its vars: feature"}},
		{"not key=value", twoSteps, RunRequest{Vars: []string{"feature"}}, []string{`--var "feature": want key=value`}},
		{"a secret", "name: wf\nvars:\n  api_token: x\nsteps:\n  - id: a\n    run: 'true'\n", RunRequest{Vars: []string{"api_token=x"}}, []string{"names a secret", "export API_TOKEN"}},
		{"invalid UTF-8", twoSteps, RunRequest{Vars: []string{"feature=\xff"}}, []string{"not valid UTF-8"}},
		{"unknown start step", twoSteps, RunRequest{StartAt: core.Key("cod")}, []string{`unknown step "cod"`, `did you mean "code"`}},
		{"not a repository", twoSteps, RunRequest{Repo: "/nowhere"}, []string{"not a directory"}},
		{"no workflow file", twoSteps, RunRequest{Workflow: "/repo/missing.yaml"}, []string{"missing.yaml"}},
		{"invalid workflow", "name: wf\nsteps:\n  - id: a\n    runn: x\n", RunRequest{}, []string{"wf.yaml:4:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newService(t, tt.src, nil)
			if tt.req.Workflow == "" {
				tt.req.Workflow = wf
			}
			_, err := s.PrepareRun(tt.req)
			wantCode(t, err, ExitUsage, tt.msgs...)
		})
	}
}

func TestLoadWorkflowDiagnostics(t *testing.T) {
	s, _ := newService(t, "name: wf\nsteps:\n  - id: a\n    runn: x\n", nil)
	_, err := s.LoadWorkflow(wf, "")
	var ds config.Diagnostics
	if !errors.As(err, &ds) || len(ds) == 0 {
		t.Fatalf("error %v does not wrap diagnostics", err)
	}
	wantCode(t, err, ExitUsage)
}

func TestRunResults(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		replies map[string]reply
		noWait  bool
		code    int
		status  core.RunStatus
		waiting []string
	}{
		{"completed", twoSteps, nil, false, 0, core.RunCompleted, []string{}},
		{"failed", twoSteps, map[string]reply{"code": {Exit: 3}}, false, 1, core.RunFailed, []string{}},
		{"waiting on a human", humanSteps, nil, true, 3, core.RunWaitingOnHuman, []string{"ship_it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newService(t, tt.src, tt.replies)
			res := run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: tt.noWait})
			if res.Type != "result" || res.RunID != "r1" || res.RunDir != record.RunDir(repo, "r1") {
				t.Errorf("result %+v", res)
			}
			if res.ExitCode != tt.code || res.Status != tt.status || fmt.Sprint(res.Waiting) != fmt.Sprint(tt.waiting) {
				t.Errorf("exit %d status %s waiting %v; want %d %s %v", res.ExitCode, res.Status, res.Waiting, tt.code, tt.status, tt.waiting)
			}
		})
	}
}

func TestRunIDTaken(t *testing.T) {
	s, _ := newService(t, twoSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1"})
	l, err := s.PrepareRun(RunRequest{Workflow: wf, RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Start(context.Background(), l, Attach{})
	wantCode(t, err, ExitUsage, "r1")
}

// engineFunc is an Engine whose Run is a function; its other
// operations are the local engine's.
type engineFunc struct {
	*Local
	run func(ctx context.Context, opts spec.Options, att Attach) (spec.Result, error)
}

func (f engineFunc) Run(ctx context.Context, opts spec.Options, att Attach) (spec.Result, error) {
	return f.run(ctx, opts, att)
}

func TestStartUsesTheEngine(t *testing.T) {
	s, _ := newService(t, twoSteps, nil)
	var got spec.Options
	var out io.Writer
	s.Stdout = &bytes.Buffer{}
	s.Engine = engineFunc{Local: s.Local(), run: func(_ context.Context, opts spec.Options, att Attach) (spec.Result, error) {
		got, out = opts, att.Output
		return spec.Result{RunID: "x", Status: core.RunCompleted}, nil
	}}
	l, err := s.PrepareRun(RunRequest{Workflow: wf, Vars: []string{"feature=dark"}, NoWait: true, Budgets: spec.Budgets{MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Start(context.Background(), l, Attach{})
	if err != nil || res.RunID != "x" {
		t.Fatalf("Start = %+v, %v", res, err)
	}
	if got.Repo != repo || got.Vars["feature"] != "dark" || !got.NoWait || got.Budgets.MaxAttempts != 3 || got.Resume {
		t.Errorf("engine asked for %+v", got)
	}
	if out != s.Stdout {
		t.Errorf("the engine's output is not the Service's Stdout")
	}
}

// TestStartAtReadsTheWorkflowOnce: a restart at a step reads the
// workflow to find the run it restarts, and reads it again only when
// the run's kept invocation changes how it is read.
func TestStartAtReadsTheWorkflowOnce(t *testing.T) {
	s, _ := newService(t, twoSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "plain"})
	count := countfs.New(s.FS)
	s.FS = count
	if _, err := s.PrepareRun(RunRequest{Workflow: wf, StartAt: core.Key("code"), RunID: "plain", Force: true}); err != nil {
		t.Fatal(err)
	}
	if n := count.Opens(wf); n != 1 {
		t.Errorf("a restart read the workflow %d times, want once", n)
	}
	run(t, s, RunRequest{Workflow: wf, RunID: "flow", Invocation: record.Invocation{Format: config.FormatFlow}})
	count.Reset()
	l, err := s.PrepareRun(RunRequest{Workflow: wf, StartAt: core.Key("code"), RunID: "flow", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := count.Opens(wf); n != 2 || l.Options.Invocation.Format != config.FormatFlow {
		t.Errorf("a restart whose run was read as %q read the workflow %d times (want 2), format %q", config.FormatFlow, n, l.Options.Invocation.Format)
	}
}

func TestStartAtPlan(t *testing.T) {
	s, _ := newService(t, twoSteps, nil)
	// No earlier run: a new run starts at the step.
	l, err := s.PrepareRun(RunRequest{Workflow: wf, StartAt: core.Key("code")})
	if err != nil {
		t.Fatal(err)
	}
	if p := l.Plan; p == nil || !p.NewRun || p.Step != core.Key("code") || l.Options.Resume {
		t.Fatalf("plan %+v, options %+v", l.Plan, l.Options)
	}
	run(t, s, RunRequest{Workflow: wf, RunID: "r1"})

	// plan's artifact PLAN.md is missing: refused unless forced.
	l, err = s.PrepareRun(RunRequest{Workflow: wf, StartAt: core.Key("code")})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "start_at_plan", l.Plan)
	if !l.Plan.Refused || !l.Options.Resume || l.Options.RunID != "r1" {
		t.Fatalf("plan %+v, options %+v", l.Plan, l.Options)
	}
	_, err = s.Start(context.Background(), l, Attach{})
	wantCode(t, err, ExitUsage, "artifacts are missing", "--force")

	l, err = s.PrepareResume(ResumeRequest{RunID: "r1", StartAt: core.Key("code"), Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.Plan.Refused || fmt.Sprint(l.Plan.Kept) != "[plan]" || fmt.Sprint(l.Plan.Rerun) != "[code]" {
		t.Fatalf("forced plan %+v", l.Plan)
	}
	res, err := s.Start(context.Background(), l, Attach{})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("forced restart: %+v, %v", res, err)
	}
	if n := strings.Count(fmt.Sprint(s.Starter.(*scripted).calls), "code"); n != 2 {
		t.Errorf("code ran %d times; want 2", n)
	}
}

func TestResumeReroots(t *testing.T) {
	s, _ := newService(t, twoSteps, map[string]reply{"code": {Exit: 1}})
	run(t, s, RunRequest{Workflow: wf, RunID: "r1"})
	// Copy the repository, run and all, to another checkout.
	err := afero.Walk(s.FS, repo, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := afero.ReadFile(s.FS, path)
		if err != nil {
			return err
		}
		return afero.WriteFile(s.FS, "/copy"+strings.TrimPrefix(path, repo), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.FS.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	s.Starter.(*scripted).replies = nil
	l, err := s.PrepareResume(ResumeRequest{Repo: "/copy", RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Workflow.File != "/copy/wf.yaml" || l.Options.Repo != "/copy" {
		t.Errorf("resumed with %s in %s", l.Workflow.File, l.Options.Repo)
	}
}

func TestFindRunErrors(t *testing.T) {
	s, _ := newService(t, twoSteps, nil)
	_, err := s.Status("", "")
	wantCode(t, err, ExitUsage, "no such run", "try: flow run WORKFLOW")
	run(t, s, RunRequest{Workflow: wf, RunID: "one"})
	_, err = s.Status("", "onw")
	wantCode(t, err, ExitUsage, `did you mean "one"`, "try: flow runs")
	_, err = s.Status("", "../one")
	wantCode(t, err, ExitUsage, "path separator")
}

func TestStatusAndRuns(t *testing.T) {
	s, _ := newService(t, twoSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1"})
	st, err := s.Status("", "")
	if err != nil {
		t.Fatal(err)
	}
	if st.State.RunID != "r1" || st.Liveness.State != record.LiveDone || !st.Over() || st.Fault != "" {
		t.Errorf("status %+v", st)
	}
	list, err := s.ListRuns("")
	if err != nil {
		t.Fatal(err)
	}
	if list.RunsDir != record.RunsDir(repo) || len(list.Runs) != 1 {
		t.Fatalf("runs %+v", list)
	}
	golden(t, "run_summary", list.Runs[0])
	golden(t, "run_list", list)
}

// TestStatusJSON checks the shape of flow status --json and of a
// watch's updates on a status built by hand, so that it does not
// depend on what a run records.
func TestStatusJSON(t *testing.T) {
	at := core.Time{Time: t0}
	msg := "exit code 4"
	st := Status{
		State: &core.State{SchemaVersion: 1, RunID: "r1", WorkflowName: "wf", RepoDir: repo, CreatedAt: &at, UpdatedAt: &at,
			Status: core.RunFailed, ExitCode: 1, WorkflowFile: wf, Vars: map[string]string{}, Seq: 7,
			StepOrder: keytest.Keys("a"),
			Steps: map[core.StepKey]*core.StepState{keytest.K("a"): {Status: core.Failed, Attempts: 1, StartedAt: &at, EndedAt: &at,
				LastError: &msg, Artifacts: []string{}, Metrics: map[string]string{}, Logs: []string{}}}},
		Liveness: record.Liveness{State: record.LiveDone, Reason: "the run failed"},
		RunDir:   record.RunDir(repo, "r1"),
		At:       t0,
	}
	golden(t, "status", st)
	streamed(t, st)
	golden(t, "update_status", Update{Status: &st, First: true, Changed: true})
	st.Fault = "events.jsonl:9: seq 3 after seq 8"
	golden(t, "status_fault", st)
	streamed(t, st)
	st.State.Steps, st.State.StepOrder = map[core.StepKey]*core.StepState{}, nil
	streamed(t, st)
	golden(t, "update_event", Update{Event: &core.Event{Seq: 3, At: at, Type: "step_started", Step: keytest.K("a"), Data: json.RawMessage(`{"attempt":1}`)}})
}

// streamed checks that the status flow status --json streams is what
// json.MarshalIndent makes of it, byte for byte.
func streamed(t *testing.T, st Status) {
	t.Helper()
	want, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := st.WriteIndented(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("WriteIndented:\n%s\nwant (json.MarshalIndent):\n%s", got.Bytes(), want)
	}
}

func TestStatusLiveness(t *testing.T) {
	s, _ := newService(t, humanSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
	st, err := s.Status("", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Liveness.State != record.LiveStuck || st.Liveness.Hook != keytest.K("ship_it") || st.Over() {
		t.Errorf("liveness %+v", st.Liveness)
	}
}

const humanSteps = `name: wf
steps:
  - id: build
    run: echo build
  - id: ship_it
    human:
      message: Ship it?
  - id: deploy
    run: echo deploy
`

func TestDecide(t *testing.T) {
	s, clk := newService(t, humanSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})

	_, err := s.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_it")})
	wantCode(t, err, ExitUsage, "reject needs --reason")
	_, err = s.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_ti"), Approve: true})
	wantCode(t, err, ExitUsage, `did you mean "ship_it"`, "its steps: build, ship_it, deploy")
	_, err = s.Decide(DecideRequest{RunID: "r1", Step: core.Key("build"), Approve: true})
	wantCode(t, err, ExitRefused)

	in, err := ParseInputs([]string{"ticket=OPS-12"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_it"), Approve: true, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "decision", d)
	if d.Already || d.By != "tester" {
		t.Errorf("decision %+v", d)
	}
	clk.Advance(time.Minute)
	again, err := s.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_it"), Approve: true, Input: in})
	if err != nil || !again.Already || again.At != d.At {
		t.Errorf("the same decision again = %+v, %v; want it already made at %s", again, err, d.At)
	}
	_, err = s.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_it"), Reason: "no", By: "bob"})
	wantCode(t, err, ExitRefused, "approved")

	l, err := s.PrepareResume(ResumeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Start(context.Background(), l, Attach{})
	if err != nil || res.ExitCode != 0 || len(res.Waiting) != 0 {
		t.Fatalf("resume after approval: %+v, %v", res, err)
	}
	golden(t, "run_result", res)
	_, err = ParseInputs([]string{"=x"})
	wantCode(t, err, ExitUsage, "want key=value")
}

func TestControl(t *testing.T) {
	s, _ := newService(t, humanSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
	res, err := s.Control(ControlRequest{State: core.Pause, Note: "lunch"})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "control_result", res)
	c, err := record.ReadControl(s.FS, record.RunDir(repo, "r1"))
	if err != nil || c.DesiredState != core.Pause || c.SetBy != "tester" {
		t.Errorf("control.json = %+v, %v", c, err)
	}
	_, err = s.Control(ControlRequest{State: "sleep"})
	wantCode(t, err, ExitUsage, "unknown desired state")

	s2, _ := newService(t, twoSteps, nil)
	run(t, s2, RunRequest{Workflow: wf, RunID: "done"})
	_, err = s2.Control(ControlRequest{RunID: "done", State: core.RunOnce})
	wantCode(t, err, ExitRefused, "has already completed", "there is no next session to run once")
	_, err = s2.Control(ControlRequest{RunID: "done", State: core.Pause})
	wantCode(t, err, ExitRefused, "has already completed", "pause applies to a run that has not ended")
}

func TestLogs(t *testing.T) {
	src := "name: wf\nsteps:\n  - id: plan\n    run: echo\n  - id: quiet\n    run: 'true'\n  - id: code\n    run: echo\n  - id: after\n    run: 'true'\n"
	s, _ := newService(t, src, map[string]reply{"plan": {Out: "the plan\n"}, "code": {Out: "coded\n", Exit: 1}})
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", Budgets: spec.Budgets{MaxAttempts: 2}})

	logs, err := s.Logs("", "r1", core.Key("code"), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs.Logs) != 2 || logs.Logs[0].Attempt != 1 || logs.Logs[1].Attempt != 2 {
		t.Fatalf("logs %+v", logs.Logs)
	}
	latest, err := s.Logs("", "r1", core.Key("code"), false)
	if err != nil || len(latest.Logs) != 1 || latest.Logs[0] != logs.Logs[1] {
		t.Fatalf("latest = %+v, %v", latest, err)
	}
	golden(t, "step_logs", latest)
	var out bytes.Buffer
	if err := s.CopyLog(&out, latest.Logs[0]); err != nil || out.String() != "coded\n" {
		t.Errorf("CopyLog = %q, %v", out.String(), err)
	}
	out.Reset()
	if err := s.Follow(context.Background(), latest, &out); err != nil || out.String() != "coded\n" {
		t.Errorf("Follow of a finished session = %q, %v", out.String(), err)
	}

	quiet, err := s.Logs("", "r1", core.Key("quiet"), false)
	if err != nil || len(quiet.Logs) != 0 {
		t.Errorf("a step that printed nothing: %+v, %v", quiet, err)
	}
	_, err = s.Logs("", "r1", core.Key("after"), false)
	wantCode(t, err, ExitRefused, "has not run yet")
	_, err = s.Logs("", "r1", core.Key("cod"), false)
	wantCode(t, err, ExitUsage, `has no step "cod"`, "plan, quiet, code, after")
}

func TestValidate(t *testing.T) {
	s, _ := newService(t, twoSteps, nil)
	afero.WriteFile(s.FS, repo+"/flows/bad.yaml", []byte("name: bad\nsteps:\n  - id: a\n    runn: x\n"), 0o644)
	afero.WriteFile(s.FS, repo+"/flows/notes.txt", []byte("not a workflow"), 0o644)
	res, err := s.Validate([]string{wf, repo + "/flows"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid || len(res.Files) != 2 || !res.Files[0].Valid || res.Files[0].Steps != 2 || res.Files[1].Valid || len(res.Diagnostics) == 0 {
		t.Errorf("validate %+v", res)
	}
	golden(t, "validate_result", res)
}

func TestWatch(t *testing.T) {
	s, _ := newService(t, humanSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
	// The watch has a clock of its own, with no timer of the run's left.
	clk := clock.NewFake(t0.Add(time.Hour))
	s.Clock = clk
	if _, err := s.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_it"), Approve: true}); err != nil {
		t.Fatal(err)
	}
	// Another runner, with a clock of its own, finishes the run while
	// the watch waits.
	other := *s
	other.Clock = clock.NewFake(t0.Add(time.Hour + time.Minute))
	var updates []Update
	done := make(chan error, 1)
	go func() {
		done <- s.Watch(context.Background(), "", "r1", WatchOptions{Events: true}, func(u Update) error {
			updates = append(updates, u)
			if u.Status != nil && u.First {
				l, err := other.PrepareResume(ResumeRequest{RunID: "r1"})
				if err != nil {
					return err
				}
				_, err = other.Start(context.Background(), l, Attach{})
				return err
			}
			return nil
		})
	}()
	clk.AwaitWaiters(1)
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var statuses []*Status
	var events []string
	lastSeq := int64(0)
	for _, u := range updates {
		if u.Event != nil {
			if u.Event.Seq <= lastSeq {
				t.Errorf("event %d after %d", u.Event.Seq, lastSeq)
			}
			lastSeq = u.Event.Seq
			events = append(events, u.Event.Type)
			continue
		}
		statuses = append(statuses, u.Status)
	}
	if len(statuses) != 2 || statuses[0].State.Status != core.RunWaitingOnHuman || statuses[1].State.Status != core.RunCompleted {
		t.Fatalf("statuses %+v", statuses)
	}
	last := updates[len(updates)-1]
	if last.First || !last.Changed || !strings.Contains(fmt.Sprint(last.Changes), "{run completed}") {
		t.Errorf("last update %+v", last)
	}
	if len(events) == 0 || events[len(events)-1] == "" {
		t.Errorf("events %v", events)
	}
	b, err := json.Marshal(last)
	if err != nil || !bytes.HasPrefix(b, []byte(`{"type":"status","schema_version":`)) || !bytes.Contains(b, []byte(`"liveness":{"state":"done"`)) {
		t.Errorf("status update JSON %s, %v", b, err)
	}
	b, err = json.Marshal(updates[0])
	if err != nil || !bytes.HasPrefix(b, []byte(`{"seq":1,`)) {
		t.Errorf("event update JSON %s, %v", b, err)
	}
}

func TestWatchEndsWithTheContext(t *testing.T) {
	s, _ := newService(t, humanSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := s.Watch(ctx, "", "", WatchOptions{Every: true}, func(u Update) error {
		n++
		cancel()
		return nil
	})
	if err != nil || n != 1 {
		t.Errorf("Watch = %v after %d updates; want nil after 1", err, n)
	}
	stop := errors.New("stop")
	err = s.Watch(context.Background(), "", "", WatchOptions{}, func(Update) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("Watch = %v; want the callback's error", err)
	}
}

func TestGetenvAndWho(t *testing.T) {
	s := &Service{Environ: []string{"CI=false", "A=1=2", "CI=true"}}
	if s.Getenv("CI") != "true" || s.Getenv("A") != "1=2" || s.Getenv("B") != "" {
		t.Errorf("Getenv: CI=%q A=%q B=%q", s.Getenv("CI"), s.Getenv("A"), s.Getenv("B"))
	}
	if s.Who("") != "unknown" || s.Who("alice") != "alice" {
		t.Errorf("Who without a user: %q", s.Who(""))
	}
	looked := 0
	s.LookupUser = func() string { looked++; return "os-user" }
	if s.Who("alice") != "alice" || looked != 0 {
		t.Errorf("Who(alice) looked the user up %d times", looked)
	}
	if got := s.Who(""); got != "os-user" {
		t.Errorf("Who with a lookup = %q, want os-user", got)
	}
	s.User = "set"
	if got := s.Who(""); got != "set" || looked != 1 {
		t.Errorf("Who with User set = %q (looked up %d times), want set without a lookup", got, looked)
	}
	s.User, s.LookupUser = "", func() string { return "" }
	if got := s.Who(""); got != "unknown" {
		t.Errorf("Who when the lookup finds nobody = %q, want unknown", got)
	}
}

func TestPublicURL(t *testing.T) {
	for env, want := range map[string]string{"": "", "FLOW_PUBLIC_URL=https://flow.example.com": "https://flow.example.com/",
		"FLOW_PUBLIC_URL=http://h:8080/": "http://h:8080/"} {
		if got := publicURL([]string{"A=b", env}); got != want {
			t.Errorf("publicURL(%q) = %q, want %q", env, got, want)
		}
	}
}

// TestWatchGoesOnThroughAPause: a paused run whose runner waits in it is
// watched on (flow continue lets it go on); once its runner is gone the
// watch ends.
func TestWatchGoesOnThroughAPause(t *testing.T) {
	s, _ := newService(t, humanSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
	dir := record.RunDir(repo, "r1")
	log, err := eventlog.Open(s.FS, filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(eventlog.Event{At: eventlog.NewTime(t0), Type: core.EvRunPaused, Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	log.Close()
	holder := runlock.Holder{PID: 777, Host: "test", StartedAt: t0}
	if _, err := runlock.Acquire(s.FS, filepath.Join(dir, record.LockFile), holder, func(runlock.Holder) bool { return false }); err != nil {
		t.Fatal(err)
	}
	var alive atomic.Bool
	alive.Store(true)
	s.Alive = func(h runlock.Holder) bool { return h.PID == 777 && alive.Load() }
	clk := clock.NewFake(t0)
	s.Clock = clk
	done := make(chan error, 1)
	var looks atomic.Int32
	go func() {
		done <- s.Watch(context.Background(), "", "r1", WatchOptions{Every: true}, func(u Update) error {
			looks.Add(1)
			if u.Status.State.Status != core.RunPaused {
				return fmt.Errorf("status %s, want paused", u.Status.State.Status)
			}
			return nil
		})
	}()
	for range 2 {
		clk.AwaitWaiters(1)
		clk.Advance(time.Second)
	}
	// The runner goes: the watch ends at its next look (no deadline: a
	// watch that never ends is bounded by the test binary's -timeout).
	alive.Store(false)
	for ended := false; !ended; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			ended = true
		default:
			if clk.BlockUntil(1, 50*time.Millisecond) {
				clk.Advance(time.Second)
			}
		}
	}
	if n := looks.Load(); n < 3 {
		t.Errorf("%d looks, want at least 3", n)
	}
}

// TestRunnerStartedBy: a runner's runner_started event names who
// started it: the request's By, else $USER; nothing without either.
func TestRunnerStartedBy(t *testing.T) {
	s, _ := newService(t, humanSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true, By: "alice"})
	if _, err := s.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_it"), Approve: true}); err != nil {
		t.Fatal(err)
	}
	s.Environ = append(s.Environ, "USER=bob")
	l, err := s.PrepareResume(ResumeRequest{RunID: "r1", NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(context.Background(), l, Attach{}); err != nil {
		t.Fatal(err)
	}
	s.Environ = s.Environ[:len(s.Environ)-1]
	run(t, s, RunRequest{Workflow: wf, RunID: "r2", NoWait: true})
	by := func(id string) []string {
		events, err := record.ReadEvents(s.FS, record.RunDir(repo, id), 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range events {
			if e.Type == core.EvRunnerStarted {
				var d core.RunnerStarted
				if err := json.Unmarshal(e.Data, &d); err != nil {
					t.Fatal(err)
				}
				out = append(out, d.By)
			}
		}
		return out
	}
	if got := by("r1"); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Errorf("r1's runners were started by %q, want alice then bob", got)
	}
	if got := by("r2"); !slices.Equal(got, []string{""}) {
		t.Errorf("r2's runner was started by %q, want nobody named", got)
	}
}
