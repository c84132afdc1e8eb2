package wftest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// Options say which tests of a file to run.
type Options struct {
	// Filter, when set, runs only the tests whose name it matches.
	Filter *regexp.Regexp
	// Format forces the format the workflows are read in (flow test's
	// --as): config.FormatFlow or config.FormatOrchestrator; "" detects
	// it.
	Format string
}

// Result is how one test went.
type Result struct {
	Name string `json:"name"`
	// Pos is where the test is written in its file.
	Pos    config.Pos `json:"-"`
	Passed bool       `json:"passed"`
	// Failures say what did not match, each as file:line:col: message
	// at the expectation in the test file.
	Failures []string `json:"failures,omitempty"`
	// Path is the order in which steps started: one entry per
	// step_started event (each attempt of each iteration) and per
	// step_waiting event (each wait of a human step).
	Path     []string `json:"path"`
	ExitCode int      `json:"exit_code"`
	Status   string   `json:"status"`
	// Duration is the real time the test took.
	Duration time.Duration `json:"-"`
	// Events are the run's events, for coverage.
	Events []core.Event `json:"-"`
}

// epoch is the fake time every test starts at.
var epoch = time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)

const (
	repo  = "/repo"
	runID = "test"
	// maxResumes bounds the rounds of human decisions one test may take.
	maxResumes = 1000
)

// Run runs the tests of tf, each in process through the real core and
// driver, on a memory file system with a fake clock and scripted
// sessions: nothing touches the disk or starts a process. A test whose
// run waits on a human step gets the next scripted decision for it and
// the run is resumed; with no decision scripted, the run ends waiting
// (exit 3).
func Run(ctx context.Context, tf *config.TestFile, opts Options) []Result {
	var out []Result
	for _, t := range tf.Tests {
		if opts.Filter != nil && !opts.Filter.MatchString(t.Name) {
			continue
		}
		out = append(out, runOne(ctx, tf, t))
	}
	return out
}

func runOne(ctx context.Context, tf *config.TestFile, t *config.WorkflowTest) Result {
	began := time.Now()
	res := Result{Name: t.Name, Pos: t.Pos}
	fail := func(pos config.Pos, format string, args ...any) {
		res.Failures = append(res.Failures, fmt.Sprintf("%s:%d:%d: %s", pos.File, pos.Line, pos.Col, fmt.Sprintf(format, args...)))
	}
	mem := afero.NewMemMapFs()
	for _, f := range t.Files {
		if err := writeFile(mem, filepath.Join(repo, filepath.FromSlash(f.Path)), f.Content); err != nil {
			fail(f.Pos, "write %s: %v", f.Path, err)
		}
	}
	if err := mem.MkdirAll(repo, 0o755); err != nil {
		fail(t.Pos, "make the repository: %v", err)
	}
	fake := clock.NewFake(epoch)
	runDir := record.RunDir(repo, runID)
	st := newStarter(mem, fake, repo, runDir, tf.Workflow, t)
	st.def = tf.Default
	// Serial: sessions end in the order the core started them, so that a
	// test of parallel steps or items takes one path every time.
	r := &local.Runner{FS: mem, Clock: virtualClock{fake}, Starter: st, Stdout: discard{}, Host: "flow-test", PID: 1, Serial: true,
		Alive: func(runlock.Holder) bool { return false }, HeartbeatEvery: never, PollEvery: never, TempDir: "/tmp",
		Git: newScriptedGit(repo, t)}
	ro := spec.Options{Workflow: tf.Workflow, Repo: repo, RunID: runID, Vars: t.Vars, NoWait: true}
	decided := map[core.StepKey]int{}
	controlled := map[string]int{}
	var rr spec.Result
	for round := 0; ; round++ {
		var err error
		rr, err = r.Run(ctx, ro)
		if err != nil {
			fail(t.Pos, "run: %v", err)
			break
		}
		if rr.State == nil || round >= maxResumes {
			break
		}
		if rr.Status == core.RunPaused {
			// The run stopped paused: go on with the next scripted state.
			if !goOn(mem, runDir, t, controlled, fake.Now(), fail) {
				break
			}
		} else if rr.Status != core.RunWaitingOnHuman {
			break
		} else if !decide(mem, rr, t, decided, fake.Now(), fail) && !waitOut(tf.Workflow, rr, fake) && !mergeWaits(rr.State) {
			break
		}
		ro.Resume = true
	}
	res.ExitCode, res.Status = rr.ExitCode, string(rr.Status)
	if events, err := record.ReadEvents(mem, runDir, 0); err == nil {
		res.Events = events
	} else if len(res.Failures) == 0 {
		fail(t.Pos, "read the run's events: %v", err)
	}
	res.Path = pathOf(res.Events)
	if len(res.Failures) == 0 {
		check(&res, t, rr.State, mem, st, fail)
	}
	res.Passed = len(res.Failures) == 0
	res.Duration = time.Since(began)
	return res
}

// decide writes the next scripted decision of each waiting step, as
// flow approve and flow reject do; it returns false when no waiting
// step has one.
func decide(mem afero.Fs, rr spec.Result, t *config.WorkflowTest, decided map[core.StepKey]int, now time.Time, fail func(config.Pos, string, ...any)) bool {
	did := false
	for _, id := range rr.State.StepOrder {
		s := rr.State.Steps[id]
		list := t.Human[id.String()]
		if len(list) == 0 {
			list = t.Human[id.Step] // every item's instance of a body step
		}
		if s == nil || s.Status != core.WaitingOnHuman || len(list) == 0 {
			continue
		}
		d := list[min(decided[id], len(list)-1)]
		decided[id]++
		in := core.HumanInput{Approved: d.Approved, Input: d.Input, Reason: d.Reason, By: "flow test"}
		if _, err := record.SubmitDecision(mem, rr.RunDir, id, in, now); err != nil {
			fail(d.Pos, "decide %s: %v", id, err)
			return false
		}
		did = true
	}
	return did
}

// pathOf lists the steps in the order they started: step_started and
// step_waiting events, and loop_items (a loop starting its items).
func pathOf(events []core.Event) []string {
	path := []string{}
	for _, e := range events {
		if e.Type == core.EvStepStarted || e.Type == core.EvStepWaiting || e.Type == core.EvLoopItems {
			path = append(path, e.Step.String())
		}
	}
	return path
}

// check compares the run with the test's expectations.
func check(res *Result, t *config.WorkflowTest, st *core.State, mem afero.Fs, s *starter, fail func(config.Pos, string, ...any)) {
	e := t.Expect
	if e.ExitCode != nil && e.ExitCode.Value != res.ExitCode {
		fail(e.ExitCode.Pos, "exit_code: got %d, want %d", res.ExitCode, e.ExitCode.Value)
	}
	if e.Status != nil && e.Status.Value != res.Status {
		fail(e.Status.Pos, "status: got %s, want %s", res.Status, e.Status.Value)
	}
	if e.Path != nil {
		if msg := pathDiff(e.Path.Value, res.Path); msg != "" {
			fail(e.Path.Pos, "%s", msg)
		}
	}
	if e.PathContains != nil {
		if msg := subsequence(e.PathContains.Value, res.Path); msg != "" {
			fail(e.PathContains.Pos, "%s", msg)
		}
	}
	for _, se := range e.Steps {
		checkStep(se, st, fail)
	}
	for _, f := range e.Files {
		b, err := afero.ReadFile(mem, filepath.Join(repo, filepath.FromSlash(f.Path)))
		switch {
		case err != nil:
			fail(f.Pos, "files: %s is not in the repository", f.Path)
		case string(b) != f.Content:
			fail(f.Pos, "files: %s holds %q, want %q", f.Path, clip(string(b)), clip(f.Content))
		}
	}
	for _, pc := range e.PromptContains {
		prompts := s.prompts[pc.Step]
		if !slices.ContainsFunc(prompts, func(p string) bool { return strings.Contains(p, pc.Text) }) {
			got := "it never ran"
			if len(prompts) > 0 {
				got = fmt.Sprintf("its last prompt was %q", clip(prompts[len(prompts)-1]))
			}
			fail(pc.Pos, "prompt_contains: no prompt of %s contains %q; %s", pc.Step, pc.Text, got)
		}
	}
}

func checkStep(se config.StepExpect, st *core.State, fail func(config.Pos, string, ...any)) {
	var s *core.StepState
	if k, err := core.ParseStepKey(se.Step); err == nil && st != nil {
		s = st.Steps[k]
	}
	if s == nil {
		fail(se.Pos, "steps.%s: the run has no state for it", se.Step)
		return
	}
	str := func(w *config.Want[string], key, got string) {
		if w != nil && w.Value != got {
			fail(w.Pos, "steps.%s.%s: got %q, want %q", se.Step, key, got, w.Value)
		}
	}
	num := func(w *config.Want[int], key string, got *int) {
		switch {
		case w == nil:
		case got == nil:
			fail(w.Pos, "steps.%s.%s: not set, want %d", se.Step, key, w.Value)
		case *got != w.Value:
			fail(w.Pos, "steps.%s.%s: got %d, want %d", se.Step, key, *got, w.Value)
		}
	}
	str(se.Status, "status", string(s.Status))
	str(se.Verdict, "verdict", s.Verdict)
	num(se.Attempts, "attempts", &s.Attempts)
	num(se.Iteration, "iteration", &s.IterationCount)
	num(se.ExitCode, "exit_code", s.ExitCode)
	if w := se.LastError; w != nil {
		got := ""
		if s.LastError != nil {
			got = *s.LastError
		}
		if re, err := regexp.Compile(w.Value); err != nil || !re.MatchString(got) {
			fail(w.Pos, "steps.%s.last_error: %q does not match /%s/", se.Step, got, w.Value)
		}
	}
}

// pathDiff explains how got differs from want, or returns "".
func pathDiff(want, got []string) string {
	if slices.Equal(want, got) {
		return ""
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	at := func(p []string) string {
		if i < len(p) {
			return p[i]
		}
		return "(end)"
	}
	return fmt.Sprintf("path differs at step %d: want %s, got %s\n    want: %s\n    got:  %s",
		i+1, at(want), at(got), strings.Join(want, " "), strings.Join(got, " "))
}

// subsequence explains why want is not an ordered subsequence of got,
// or returns "".
func subsequence(want, got []string) string {
	j := 0
	for i, w := range want {
		for j < len(got) && got[j] != w {
			j++
		}
		if j == len(got) {
			after := ""
			if i > 0 {
				after = " after " + want[i-1]
			}
			return fmt.Sprintf("path_contains: %s (item %d) does not occur%s\n    want in order: %s\n    got:  %s",
				w, i+1, after, strings.Join(want, " "), strings.Join(got, " "))
		}
		j++
	}
	return ""
}

// clip shortens a value for a message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// discard drops the runner's progress lines.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// MarshalJSON writes the result with its duration in milliseconds and
// its position as "file:line:col".
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(struct {
		plain
		Pos        string  `json:"pos"`
		DurationMS float64 `json:"duration_ms"`
	}{plain(r), fmt.Sprintf("%s:%d:%d", r.Pos.File, r.Pos.Line, r.Pos.Col), float64(r.Duration.Microseconds()) / 1000})
}

// goOn sets the next scripted control state after a run stopped paused:
// the next state of the step whose control paused it. It reports
// whether there was one.
func goOn(fs afero.Fs, runDir string, t *config.WorkflowTest, used map[string]int, now time.Time, fail func(config.Pos, string, ...any)) bool {
	for _, step := range slices.Sorted(maps.Keys(t.Control)) {
		cs := t.Control[step]
		n := used[step] + 1
		if n >= len(cs) {
			continue
		}
		used[step] = n
		if err := record.SetDesired(fs, runDir, controlState(cs[n].State), "flow test", "", now, false); err != nil {
			fail(cs[n].Pos, "set control: %v", err)
			return false
		}
		return true
	}
	return false
}

// waitOut lets the fake time pass for a run that waits on human steps
// nobody decides, when one of them has a fixed human.timeout: the clock
// moves past the earliest such timeout, and the resumed run fails that
// step as a real one would. It reports whether it did.
func waitOut(wf *config.Workflow, rr spec.Result, fake *clock.Fake) bool {
	var until time.Time
	for _, id := range rr.State.StepOrder {
		s, st := rr.State.Steps[id], wf.Step(id.Step)
		if s == nil || s.Status != core.WaitingOnHuman || s.StartedAt == nil || st == nil || st.Human == nil {
			continue
		}
		if to := st.Human.Timeout; to != nil && to.Expr == nil && to.D > 0 {
			if t := s.StartedAt.Add(to.D); until.IsZero() || t.Before(until) {
				until = t
			}
		}
	}
	if until.IsZero() || !until.After(fake.Now()) {
		return false
	}
	fake.Advance(until.Sub(fake.Now()) + time.Second)
	return true
}

// mergeWaits reports whether an item's merge waits for the checkout: a
// resumed run tries it again, taking its next scripted outcome.
func mergeWaits(st *core.State) bool {
	for _, w := range st.Workspaces {
		if w.WaitingFor == "merge" {
			return true
		}
	}
	return false
}
