package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/countfs"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// TestEvaluationErrorFailsTheStep: an expression that cannot be
// evaluated fails its step with the expression's position and the
// error in last_error. It never skips the step, never approves it, and
// is not retried; the steps after it do not run.
func TestEvaluationErrorFailsTheStep(t *testing.T) {
	tests := []struct {
		name, src, step, pos string
	}{
		{
			name: "auto_approve reads a missing file",
			src: `name: t
steps:
  - {id: build, run: make}
  - id: approval
    human:
      message: Ship it?
      auto_approve: 'read_file("approved.txt") == "yes"'
  - {id: merge, run: git merge}
`,
			step: "approval", pos: "workflow.yaml:7:21: human.auto_approve:",
		},
		{
			name: "when reads a missing metric",
			src: `name: t
steps:
  - {id: review, run: review}
  - {id: fix, when: 'int(steps.review.metrics.severity_count) > 0', run: fix}
  - {id: merge, run: git merge}
`,
			step: "fix", pos: "workflow.yaml:4:21: when:",
		},
		{
			name: "gate.pass fails to evaluate",
			src: `name: t
steps:
  - id: review
    run: review
    max_attempts: 3
    gate: {pass: 'int(metrics.score) > 3'}
  - {id: merge, run: git merge}
`,
			step: "review", pos: "workflow.yaml:6:18: gate.pass:",
		},
		{
			name: "an artifact template fails to render",
			src: `name: t
steps:
  - id: build
    run: make
    artifacts: ['{{ read_file("missing.txt") }}']
  - {id: merge, run: git merge}
`,
			step: "build", pos: "workflow.yaml:5:17: artifacts:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.src)
			s := &scripted{fn: func(c call) reply { return reply{Report: `{"metrics": {"score": "high"}}`} }}
			res := e.run(s, spec.Options{})
			st := e.state(e.fs)
			step := st.Steps[keytest.K(tt.step)]
			if res.ExitCode != 1 || step.Status != core.Failed {
				t.Fatalf("exit %d, %s is %s; want exit 1 and FAILED\n%s", res.ExitCode, tt.step, step.Status, e.out.String())
			}
			if le := deref(step.LastError); !strings.HasPrefix(le, "/repo/"+tt.pos) {
				t.Errorf("last_error = %q; want it to start with /repo/%s", le, tt.pos)
			}
			if s.count("merge") != 0 {
				t.Error("the step after the failed one ran")
			}
			if step.Attempts > 1 {
				t.Errorf("an evaluation error was retried: %d attempts", step.Attempts)
			}
		})
	}
}

// TestErrorsAreExcerpted: an error that quotes a huge value is kept as
// a bounded excerpt in the record.
func TestErrorsAreExcerpted(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	e := newEnv(t, "name: t\nsteps:\n  - {id: a, run: x}\n")
	s := &scripted{fn: func(c call) reply {
		return reply{Exit: 3, Report: fmt.Sprintf(`{"status": "failed", "error": %q}`, huge[:4000])}
	}}
	res := e.run(s, spec.Options{})
	le := deref(e.state(e.fs).Steps[keytest.K("a")].LastError)
	if res.ExitCode != 1 || len(le) > core.MaxExcerpt+64 {
		t.Fatalf("exit %d, last_error of %d bytes", res.ExitCode, len(le))
	}
}

// TestRunIDs: a run id names a directory; anything that could leave
// .agents/runs, read as a flag, or break a file name is refused with
// exit 2, and nothing is written.
func TestRunIDs(t *testing.T) {
	good := []string{"r1", "20250115-143000-f8c1a4", "a.b_c-d", "A", strings.Repeat("a", 64)}
	bad := []string{"", ".", "..", "../../../tmp/x", "a/b", "/abs", "-rf", "with space", "new\nline", ".hidden", strings.Repeat("a", 65), "tab\t", "ünïcode"}
	for _, id := range good {
		if err := record.CheckRunID(id); err != nil {
			t.Errorf("CheckRunID(%q) = %v", id, err)
		}
	}
	for _, id := range bad {
		err := record.CheckRunID(id)
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "1 to 64 characters") {
			t.Errorf("CheckRunID(%q) = %v; want an invalid-request error with the rule", id, err)
		}
	}
	e := newEnv(t, "name: t\nsteps:\n  - {id: a, run: x}\n")
	for _, id := range []string{"../../../tmp/x", "a/b", "-rf"} {
		_, err := e.tryRun(e.fs, &scripted{fn: ok}, spec.Options{RunID: id})
		if !errors.Is(err, core.ErrInvalid) {
			t.Errorf("run --run-id %q: %v", id, err)
		}
		if _, err := record.FindRun(e.fs, repo, id, ""); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("FindRun(%q): %v", id, err)
		}
	}
	if ok, _ := afero.Exists(e.fs, "/tmp/x"); ok {
		t.Error("a run was written outside the repository")
	}
}

// TestFinishedRunIsNotResumed: resuming a finished run appends nothing
// and is refused with exit 8, pointing to --start-at-step.
func TestFinishedRunIsNotResumed(t *testing.T) {
	e := newEnv(t, "name: t\nsteps:\n  - {id: a, run: x}\n")
	e.run(&scripted{fn: ok}, spec.Options{})
	path := filepath.Join(record.RunDir(repo, "r1"), record.EventsFile)
	before, _ := afero.ReadFile(e.fs, path)
	for range 3 {
		_, err := e.tryRun(e.fs, &scripted{fn: ok}, spec.Options{Resume: true})
		if !errors.Is(err, core.ErrRefused) || !strings.Contains(err.Error(), "--start-at-step") {
			t.Fatalf("resume of a finished run: %v", err)
		}
	}
	if after, _ := afero.ReadFile(e.fs, path); !bytes.Equal(before, after) {
		t.Errorf("events.jsonl changed:\n%s", after[len(before):])
	}
}

// TestSnapshotThatDisagreesIsRebuilt: a run_state.json edited by hand —
// claiming a seq beyond the log, or a status the events never gave — is
// not trusted by a runner: the state is rebuilt from events.jsonl and
// the edited file kept aside.
func TestSnapshotThatDisagreesIsRebuilt(t *testing.T) {
	for name, edit := range map[string]func(st *core.State){
		"seq beyond the log":  func(st *core.State) { st.Seq = 999; st.Steps[keytest.K("b")].Status = core.Completed },
		"a status never seen": func(st *core.State) { st.Steps[keytest.K("b")].Status = core.Completed },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "name: t\nsteps:\n  - {id: a, run: x}\n  - {id: h, human: {message: go}}\n  - {id: b, run: x}\n")
			e.run(&scripted{fn: ok}, spec.Options{NoWait: true})
			dir := record.RunDir(repo, "r1")
			st, _, err := record.LoadState(e.fs, dir, false, e.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			edit(st)
			if err := record.WriteSnapshot(e.fs, dir, st); err != nil {
				t.Fatal(err)
			}
			_, _ = record.SubmitDecision(e.fs, dir, keytest.K("h"), core.HumanInput{Approved: true}, e.clock.Now())
			s := &scripted{fn: ok}
			res := e.run(s, spec.Options{Resume: true})
			if res.ExitCode != 0 || s.count("b") != 1 {
				t.Fatalf("exit %d, b ran %d times\n%s", res.ExitCode, s.count("b"), e.out.String())
			}
			aside, _ := afero.Glob(e.fs, filepath.Join(dir, record.StateFile+".corrupt-*"))
			if len(aside) != 1 {
				t.Errorf("kept aside: %v", aside)
			}
			if !strings.Contains(e.out.String(), "disagreed with events.jsonl") {
				t.Errorf("no warning:\n%s", e.out.String())
			}
			e.state(e.fs)
		})
	}
}

// TestSnapshotThatAgreesIsKept: a runner trusts a snapshot that equals
// the replay of the log at its seq: nothing is kept aside, and the
// heartbeat, which only the snapshot records, is taken from it.
func TestSnapshotThatAgreesIsKept(t *testing.T) {
	e := newEnv(t, "name: t\nsteps:\n  - {id: a, run: x}\n  - {id: h, human: {message: go}}\n  - {id: b, run: x}\n")
	e.run(&scripted{fn: ok}, spec.Options{NoWait: true})
	dir := record.RunDir(repo, "r1")
	snap, _, err := record.ReadSnapshot(e.fs, dir+"/"+record.StateFile)
	if err != nil || snap == nil || snap.Runner == nil || snap.Runner.HeartbeatAt == nil {
		t.Fatalf("snapshot %+v, %v: want one with a runner's heartbeat", snap, err)
	}
	st, damaged, err := record.LoadState(e.fs, dir, true, e.clock.Now())
	if err != nil || damaged {
		t.Fatalf("LoadState for a runner: damaged %v, %v", damaged, err)
	}
	if st.Runner == nil || st.Runner.HeartbeatAt == nil || !st.Runner.HeartbeatAt.Equal(snap.Runner.HeartbeatAt.Time) {
		t.Errorf("heartbeat after the replay %+v, want the snapshot's %v", st.Runner, snap.Runner.HeartbeatAt)
	}
	if aside, _ := afero.Glob(e.fs, filepath.Join(dir, record.StateFile+".corrupt-*")); len(aside) != 0 {
		t.Errorf("an untouched snapshot was kept aside: %v", aside)
	}
	if d1, ok1 := record.Digest(st); !ok1 {
		t.Error("the replayed state has no digest")
	} else if d2, _ := record.Digest(snap); d1 != d2 {
		t.Error("the replay and the snapshot it agrees with have different digests")
	}
	if _, fast := record.FastSnapshotCheck(e.fs, filepath.Join(dir, record.StateFile)); !fast {
		t.Error("a snapshot as flow writes it is not checked by its bytes")
	}
	// Checked by its bytes, it is read twice (its head, its digest) and
	// never decoded whole (a third reading).
	counted := countfs.New(e.fs)
	if _, damaged, err := record.LoadState(counted, dir, true, e.clock.Now()); err != nil || damaged || counted.Opens(filepath.Join(dir, record.StateFile)) != 2 {
		t.Errorf("LoadState for a runner: damaged %v, %v; the snapshot opened %d times, want 2", damaged, err, counted.Opens(filepath.Join(dir, record.StateFile)))
	}

	// The same state in other bytes — a blank line at the end, the
	// whole file compact — is decoded and still agrees.
	raw, _ := afero.ReadFile(e.fs, filepath.Join(dir, record.StateFile))
	compact, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"a blank line at the end": append(raw, '\n'), "compact": compact} {
		if err := afero.WriteFile(e.fs, filepath.Join(dir, record.StateFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		st, damaged, err := record.LoadState(e.fs, dir, true, e.clock.Now())
		if err != nil || damaged {
			t.Errorf("%s: damaged %v, %v", name, damaged, err)
			continue
		}
		if st.Runner == nil || st.Runner.HeartbeatAt == nil || !st.Runner.HeartbeatAt.Equal(snap.Runner.HeartbeatAt.Time) {
			t.Errorf("%s: heartbeat %+v, want the snapshot's", name, st.Runner)
		}
	}
	if aside, _ := afero.Glob(e.fs, filepath.Join(dir, record.StateFile+".corrupt-*")); len(aside) != 0 {
		t.Errorf("a snapshot in other bytes was kept aside: %v", aside)
	}
}

// TestRecordedRunnerIsChecked: deleting the lock file of a live run
// does not let a second runner in: the record names a runner that is
// alive and beating.
func TestRecordedRunnerIsChecked(t *testing.T) {
	e := newEnv(t, "name: t\nsteps:\n  - {id: a, run: x}\n  - {id: b, run: x}\n")
	dir := record.RunDir(repo, "r1")
	// A runner (pid 777) that is running a: its record, without a lock.
	first := &scripted{fs: e.fs, fn: func(c call) reply { return reply{Block: c.Step == "a"} }, started: make(chan call, 4)}
	r := e.runner(e.fs, first)
	r.PID = 777
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(t.Context(), spec.Options{Workflow: e.wf, Repo: repo, RunID: "r1"})
		done <- err
	}()
	<-first.started
	if err := e.fs.Remove(filepath.Join(dir, record.LockFile)); err != nil {
		t.Fatal(err)
	}
	second := e.runner(e.fs, &scripted{fs: e.fs, fn: ok})
	second.Alive = func(h runlock.Holder) bool { return h.PID == 777 }
	_, err := second.Run(t.Context(), spec.Options{Workflow: e.wf, Repo: repo, RunID: "r1", Resume: true})
	var held *record.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("second runner: %v; want held by a live runner", err)
	}
	if ok, _ := afero.Exists(e.fs, filepath.Join(dir, record.LockFile)); ok {
		t.Error("the refused runner left a lock file behind")
	}
}

// TestCheckRecordedRunner: the record's runner, not only the lock file
// or the event log's lock, decides whether a run may be taken over: a
// live runner that beats is refused; a dead one, one that stopped
// beating, one that let go of the run, or this very runner are not.
func TestCheckRecordedRunner(t *testing.T) {
	now := time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)
	beat := func(ago time.Duration) *core.Time { return &core.Time{Time: now.Add(-ago)} }
	tests := []struct {
		name   string
		runner *core.RunnerInfo
		status core.RunStatus
		alive  bool
		held   bool
	}{
		{"live and beating", &core.RunnerInfo{PID: 777, Host: "h", HeartbeatAt: beat(2 * time.Second)}, core.RunRunning, true, true},
		{"process gone", &core.RunnerInfo{PID: 777, Host: "h", HeartbeatAt: beat(2 * time.Second)}, core.RunRunning, false, false},
		{"stale heartbeat", &core.RunnerInfo{PID: 777, Host: "h", HeartbeatAt: beat(20 * time.Second)}, core.RunRunning, true, false},
		{"waiting on a human", &core.RunnerInfo{PID: 777, Host: "h", HeartbeatAt: beat(time.Second)}, core.RunWaitingOnHuman, true, false},
		{"this runner", &core.RunnerInfo{PID: 4242, Host: "test", HeartbeatAt: beat(time.Second)}, core.RunRunning, true, false},
		{"no runner yet", nil, core.RunPending, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{PID: 4242, Host: "test", HeartbeatEvery: 5 * time.Second, Alive: func(runlock.Holder) bool { return tt.alive }}
			x := &run{r: r}
			err := x.checkRecordedRunner(&core.State{RunID: "r1", Status: tt.status, Runner: tt.runner}, now)
			var h *record.HeldError
			if held := errors.As(err, &h); held != tt.held {
				t.Errorf("checkRecordedRunner = %v; want held %v", err, tt.held)
			}
		})
	}
}

// TestOneDecisionWins: approvals and rejections racing for one waiting
// step: exactly one decision is recorded, every caller that reported
// success asked for that decision, and everybody else was told what
// was decided (exit 8).
func TestOneDecisionWins(t *testing.T) {
	dir := t.TempDir()
	fsys := afero.NewOsFs()
	src := "name: t\nsteps:\n  - {id: h, human: {message: go}}\n  - {id: b, run: x}\n"
	wfPath := filepath.Join(dir, "workflow.yaml")
	if err := os.WriteFile(wfPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	wf, err := config.Load(fsys, wfPath)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{FS: fsys, Starter: &scripted{fs: fsys, fn: ok}, Host: "test", PID: 4242, Alive: func(runlock.Holder) bool { return false }}
	if res, err := r.Run(t.Context(), spec.Options{Workflow: wf, Repo: dir, RunID: "r1", NoWait: true}); err != nil || res.ExitCode != 3 {
		t.Fatalf("run: %+v %v", res, err)
	}
	runDir := record.RunDir(dir, "r1")
	type answer struct {
		approved bool
		already  *record.Decided
		err      error
	}
	answers := make([]answer, 20)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := core.HumanInput{Approved: i%2 == 0, By: fmt.Sprintf("user%d", i)}
			if !in.Approved {
				in.Reason = "no"
			}
			d, err := record.SubmitDecision(fsys, runDir, keytest.K("h"), in, time.Now())
			answers[i] = answer{in.Approved, d, err}
		}()
	}
	wg.Wait()
	in, err := record.ReadManualInput(fsys, filepath.Join(runDir, record.InputsDir, "r1__h.json"))
	if err != nil || in == nil {
		t.Fatalf("decision file: %v %v", in, err)
	}
	winners := 0
	for i, a := range answers {
		switch {
		case a.err == nil && a.already == nil:
			winners++
			if a.approved != in.Approved {
				t.Errorf("caller %d was told its decision won, but %s was recorded", i, record.DescribeDecision(*in))
			}
		case a.err == nil:
			if a.approved != in.Approved {
				t.Errorf("caller %d was told the same decision was made, but %s was recorded", i, record.DescribeDecision(*in))
			}
		default:
			if !errors.Is(a.err, core.ErrRefused) || !strings.Contains(a.err.Error(), "already "+record.Verb(in.Approved)+" by "+in.By) {
				t.Errorf("caller %d: %v", i, a.err)
			}
		}
	}
	if winners != 1 {
		t.Errorf("%d callers were told their decision won", winners)
	}
}

// TestSecretsAreNeverWritten: the values of secret environment
// variables appear nowhere in the run directory nor on the terminal,
// though an expression's error, a prompt and a session's output all
// held them; the session itself gets the prompt whole, in a private
// file outside the run directory that is gone afterwards.
func TestSecretsAreNeverWritten(t *testing.T) {
	const token, key, declared = "s3cr3t-abc123", "k3y-value-999", "d3clared-value"
	src := `name: t
secrets: [DEPLOY_CREDENTIAL]
agents:
  coder: {run: coder}
steps:
  - {id: talk, agent: coder, prompt: 'use {{ env.API_TOKEN }} and {{ env.DEPLOY_CREDENTIAL }}'}
  - {id: echo, run: 'echo $SIGNING_KEY'}
  - {id: bad, when: 'int(env.SECRET_TOKEN) > 0', run: x}
`
	e := newEnv(t, src)
	var promptFile, promptSeen string
	s := &scripted{fs: e.fs, fn: func(c call) reply {
		switch c.Step {
		case "talk":
			promptFile = c.Env["FLOW_PROMPT_FILE"]
			b, _ := afero.ReadFile(e.fs, promptFile)
			promptSeen = string(b)
			return reply{Out: "I used " + token + "\n"}
		case "echo":
			return reply{Out: "key is " + key + "\n", Report: `{"status": "completed", "metrics": {"k": "` + key + `"}}`}
		}
		return reply{}
	}}
	r := e.runner(e.fs, s)
	r.TempDir = "/private"
	r.Live = true
	r.Environ = []string{"API_TOKEN=" + token, "SIGNING_KEY=" + key, "SECRET_TOKEN=" + token, "DEPLOY_CREDENTIAL=" + declared, "HOME=/home/u"}
	res, err := r.Run(t.Context(), spec.Options{Workflow: e.wf, Repo: repo, RunID: "r1"})
	if err != nil || res.ExitCode != 1 {
		t.Fatalf("run: %+v %v\n%s", res, err, e.out.String())
	}
	if want := "use " + token + " and " + declared; promptSeen != want {
		t.Errorf("the session read the prompt %q; want %q", promptSeen, want)
	}
	if !strings.HasPrefix(promptFile, "/private/") {
		t.Errorf("FLOW_PROMPT_FILE = %s; want a private file under /private", promptFile)
	}
	if ok, _ := afero.Exists(e.fs, promptFile); ok {
		t.Error("the private prompt file outlived its session")
	}
	for _, v := range []string{token, key, declared} {
		if strings.Contains(e.out.String(), v) {
			t.Errorf("the terminal shows %q:\n%s", v, e.out.String())
		}
	}
	err = afero.Walk(e.fs, record.RunDir(repo, "r1"), func(path string, fi fs.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		if rel, _ := filepath.Rel(record.RunDir(repo, "r1"), path); strings.HasPrefix(rel, record.SessionsDir+string(filepath.Separator)) {
			return nil // the session's own directory: written by the session, not by flow
		}
		b, _ := afero.ReadFile(e.fs, path)
		for _, v := range []string{token, key, declared} {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s holds the secret %q", path, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := e.state(e.fs)
	if le := deref(st.Steps[keytest.K("bad")].LastError); !strings.Contains(le, "***") {
		t.Errorf("bad: last_error %q does not show where the secret was hidden", le)
	}
	if b, _ := afero.ReadFile(e.fs, filepath.Join(record.RunDir(repo, "r1"), record.PromptsDir, "talk.0.1.md")); string(b) != "use *** and ***" {
		t.Errorf("recorded prompt %q", b)
	}
}

// TestLongPromptOnlyInFile: a prompt longer than Linux allows in one
// environment string goes to the session in FLOW_PROMPT_FILE only.
func TestLongPromptOnlyInFile(t *testing.T) {
	e := newEnv(t, "name: t\nvars: {n: '150000'}\nagents:\n  a: {run: a}\nsteps:\n  - {id: p, agent: a, prompt: '{{ repeat(\"x\", int(vars.n)) }}'}\n")
	var env map[string]string
	s := &scripted{fn: func(c call) reply { env = c.Env; return reply{} }}
	if res := e.run(s, spec.Options{}); res.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", res.ExitCode, e.out.String())
	}
	if _, ok := env["FLOW_PROMPT"]; ok {
		t.Error("a 150 KB prompt was put in the environment")
	}
	if b, _ := afero.ReadFile(e.fs, env["FLOW_PROMPT_FILE"]); len(b) != 150000 {
		t.Errorf("FLOW_PROMPT_FILE holds %d bytes", len(b))
	}
}

// TestRenderedTemplatesAreCapped: a small workflow cannot render a huge
// command or prompt: the step fails with the limit named, and the
// record stays small.
func TestRenderedTemplatesAreCapped(t *testing.T) {
	parts := strings.Repeat(`{{ repeat("x", 999999) }}`, 300)
	tests := []struct{ name, src, want string }{
		{"command", "name: t\nsteps:\n  - {id: a, run: '" + parts + "'}\n", "run: rendered text is larger than 100 KiB (defaults.command_limit raises the limit)"},
		{"prompt", "name: t\nagents:\n  c: {run: c}\nsteps:\n  - {id: a, agent: c, prompt: '" + parts + "'}\n", "prompt: rendered text is larger than 1 MiB (defaults.prompt_limit raises the limit)"},
		{"raised limit", "name: t\ndefaults: {command_limit: 2MiB}\nsteps:\n  - {id: a, run: '{{ repeat(\"x\", 700000) }}{{ repeat(\"x\", 700000) }}'}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.src)
			s := &scripted{fn: ok}
			res := e.run(s, spec.Options{})
			st := e.state(e.fs)
			if tt.want == "" {
				if res.ExitCode != 0 {
					t.Fatalf("exit %d: %s", res.ExitCode, deref(st.Steps[keytest.K("a")].LastError))
				}
				return
			}
			if res.ExitCode != 1 || s.count("a") != 0 || !strings.Contains(deref(st.Steps[keytest.K("a")].LastError), tt.want) {
				t.Fatalf("exit %d, %d sessions, last_error %q", res.ExitCode, s.count("a"), deref(st.Steps[keytest.K("a")].LastError))
			}
			if fi, _ := e.fs.Stat(filepath.Join(record.RunDir(repo, "r1"), record.EventsFile)); fi.Size() > 64<<10 {
				t.Errorf("events.jsonl is %d bytes", fi.Size())
			}
		})
	}
}

// TestSourceRefs: the runner keeps the output of exactly the steps whose
// output some expression reads, and gives the run-wide environment to
// the steps whose expressions read steps or run — from the compiled
// expressions, in every quoting.
func TestSourceRefs(t *testing.T) {
	e := newEnv(t, `name: t
agents:
  a: {run: 'a {{ steps.plan.output }}'}
steps:
  - {id: plan, run: x}
  - {id: code, agent: a, prompt: go}
  - {id: test, run: "echo {{ steps['code']['output'] }}"}
  - {id: quiet, run: 'echo "steps.test.output"'}
  - {id: late, when: 'run.iteration > 1', run: x}
`)
	outputs, runWide := sourceRefs(e.wf)
	if !outputs["plan"] || !outputs["code"] || outputs["test"] || outputs["quiet"] || len(outputs) != 2 {
		t.Errorf("outputs kept: %v", outputs)
	}
	if !runWide["code"] || !runWide["test"] || !runWide["late"] || runWide["plan"] || runWide["quiet"] {
		t.Errorf("run-wide: %v", runWide)
	}
}

// TestResumeUsesTheStateItWasGiven: a resume given the run's state as
// its caller just read it (Options.Read) does not read the run again
// for the checks before its lock — and refuses a finished run from it
// as it would from the record.
func TestResumeUsesTheStateItWasGiven(t *testing.T) {
	e := newEnv(t, "name: t\nsteps:\n  - {id: a, run: x}\n  - {id: h, human: {message: go}}\n  - {id: b, run: x}\n")
	e.run(&scripted{fn: ok}, spec.Options{NoWait: true})
	dir := record.RunDir(repo, "r1")
	read, _, err := record.LoadState(e.fs, dir, false, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	opens := func(given *core.State) int {
		c := countfs.New(e.fs)
		if _, err := e.tryRun(c, &scripted{fn: ok}, spec.Options{Resume: true, NoWait: true, Read: given}); err != nil {
			t.Fatal(err)
		}
		return c.Opens(filepath.Join(dir, record.StateFile))
	}
	if without, with := opens(nil), opens(read); with != without-1 {
		t.Errorf("run_state.json opened %d times with the state given, %d without: want one fewer", with, without)
	}
	done := *read
	done.Status, done.ExitCode = core.RunCompleted, 0
	_, err = e.tryRun(e.fs, &scripted{fn: ok}, spec.Options{Resume: true, Read: &done})
	if !errors.Is(err, core.ErrRefused) {
		t.Errorf("resume given a completed run's state: %v, want refused (exit 8)", err)
	}
}

// TestUndatedDecisionIgnored: in flow's format a decision file without a
// time, or with one from the future, was not made by flow approve for
// this wait: it is ignored, with a warning, and the step keeps waiting.
func TestUndatedDecisionIgnored(t *testing.T) {
	for name, body := range map[string]string{
		"no time":    `{"approved": true, "by": "release-manager"}`,
		"from later": `{"approved": true, "by": "release-manager", "at": "2030-01-01T00:00:00Z"}`,
		"not a time": `{"approved": true, "by": "release-manager", "at": "soon"}`,
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "name: t\nsteps:\n  - id: ok\n    human: {message: go}\n  - {id: b, run: deploy}\n")
			e.run(&scripted{fn: ok}, spec.Options{NoWait: true})
			path := record.RunDir(repo, "r1") + "/manual_inputs/r1__ok.json"
			if err := afero.WriteFile(e.fs, path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			s := &scripted{fn: ok}
			res := e.run(s, spec.Options{Resume: true, NoWait: true})
			if res.ExitCode != core.ExitHuman || len(s.calls) != 0 {
				t.Fatalf("exit %d, calls %+v: an undated decision was taken", res.ExitCode, s.calls)
			}
			if !strings.Contains(e.out.String(), "manual input") || !strings.Contains(e.out.String(), "ignored") {
				t.Errorf("no warning:\n%s", e.out.String())
			}
		})
	}
}
