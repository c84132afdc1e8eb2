package core_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/configtest"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/spec"
)

// loadWorkflow loads a YAML workflow from a string on a MemMapFs.
func loadWorkflow(t testing.TB, src string) *config.Workflow { return configtest.Load(t, src) }

// coreHarness drives a Core directly, as a driver would, recording the
// events and effects.
type coreHarness struct {
	t      *testing.T
	plan   *core.Plan
	core   *core.Core
	st     *core.State
	now    time.Time
	events []core.Event
	// effects of the last Decide.
	effects []core.Effect
}

func newCoreHarness(t *testing.T, src string, over spec.Budgets) *coreHarness {
	t.Helper()
	wf := loadWorkflow(t, src)
	plan, err := spec.NewPlan(wf, over, func(*config.Limit) (int, error) { return 0, nil })
	if err != nil {
		t.Fatal(err)
	}
	h := &coreHarness{t: t, plan: plan, core: core.NewCore(plan), st: &core.State{}, now: time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)}
	e := core.NewEvent(h.now, core.EvRunCreated, core.StepKey{}, core.RunCreated{RunID: "r1", WorkflowName: wf.Name, RepoDir: "/repo",
		ReportsDir: "/repo/.agents/runs/r1/reports", ManualInputsDir: "/repo/.agents/runs/r1/manual_inputs", Steps: keytest.Keys(plan.IDs()...)})
	if err := core.Apply(h.st, e); err != nil {
		t.Fatal(err)
	}
	h.events = append(h.events, e)
	h.decide(core.Begin{})
	return h
}

func (h *coreHarness) decide(in core.Input) []core.Effect {
	h.t.Helper()
	h.now = h.now.Add(time.Second)
	d := h.core.Decide(h.st, in, h.now)
	for _, e := range d.Events {
		// Events must replay: a state rebuilt from them equals the live one.
		h.events = append(h.events, e)
	}
	effs := d.Effects
	// The harness is the driver: it names a human step's decision file
	// at once, as the local driver does.
	for _, e := range d.Effects {
		if p, ok := e.(core.PrepareHuman); ok {
			path := "/repo/.agents/runs/r1/manual_inputs/r1__" + p.Step.String() + ".json"
			r := h.core.Decide(h.st, core.HumanReady{Step: p.Step, Attempt: p.Attempt, ManualInputPath: path}, h.now)
			h.events = append(h.events, r.Events...)
			effs = append(effs, r.Effects...)
		}
	}
	h.effects = effs
	return effs
}

// started returns the steps whose sessions the last decision started.
func (h *coreHarness) started() []string {
	var ids []string
	for _, e := range h.effects {
		if s, ok := e.(core.StartSession); ok {
			ids = append(ids, s.Step.String())
		}
	}
	return ids
}

func (h *coreHarness) finish() *core.Finish {
	for _, e := range h.effects {
		if f, ok := e.(core.Finish); ok {
			return &f
		}
	}
	return nil
}

func (h *coreHarness) ok(step string) []core.Effect {
	return h.decide(core.SessionDone{Step: keytest.K(step), Outcome: core.Outcome{Attempt: h.st.Steps[keytest.K(step)].Attempts}, Gate: &core.GateFacts{}})
}

func (h *coreHarness) gateFail(step, reason string) []core.Effect {
	return h.decide(core.SessionDone{Step: keytest.K(step), Outcome: core.Outcome{Attempt: h.st.Steps[keytest.K(step)].Attempts},
		Gate: &core.GateFacts{Pass: &core.ExprValue{Value: false, Src: reason}}})
}

func (h *coreHarness) fail(step string, retryable bool) []core.Effect {
	return h.decide(core.SessionDone{Step: keytest.K(step), Outcome: core.Outcome{Attempt: h.st.Steps[keytest.K(step)].Attempts},
		Facts: core.SessionFacts{ExitCode: 1}, RetryIf: &retryable})
}

// expect checks the status, iteration and attempts of a step.
func (h *coreHarness) expect(step string, status core.Status, iteration, attempts int) {
	h.t.Helper()
	s := h.st.Steps[keytest.K(step)]
	if s.Status != status || s.IterationCount != iteration || s.Attempts != attempts {
		h.t.Errorf("%s: %s iteration %d attempts %d; want %s iteration %d attempts %d",
			step, s.Status, s.IterationCount, s.Attempts, status, iteration, attempts)
	}
}

// replayed checks that the events rebuild the live state exactly.
func (h *coreHarness) replayed() {
	h.t.Helper()
	st := &core.State{}
	for i, e := range h.events {
		e.Seq = int64(i + 1)
		if err := core.Apply(st, e); err != nil {
			h.t.Fatal(err)
		}
	}
	live := h.st.Clone()
	live.Seq, st.Seq = 0, 0
	a, b := mustJSON(h.t, live), mustJSON(h.t, st)
	if a != b {
		h.t.Errorf("state rebuilt from events differs from the live state:\nlive:    %s\nrebuilt: %s", a, b)
	}
}

const reviewLoop = `
name: review
defaults: {max_iterations: 3}
steps:
  - id: planning
    run: plan
  - id: coding
    run: code
  - id: code_review
    run: review
    gate:
      pass: verdict == "PASS"
      loop_back_to: coding
  - id: merge
    run: merge
`

// TestCoreLoopBackProgression follows a loop-back (docs/concepts.md,
// "Loop-backs"): a gate failure completes the review, resets coding and everything
// downstream to PENDING at iteration 1, and the second pass completes.
func TestCoreLoopBackProgression(t *testing.T) {
	h := newCoreHarness(t, reviewLoop, spec.Budgets{})
	if got := h.started(); !slices.Equal(got, []string{"planning"}) {
		t.Fatalf("first sessions: %v", got)
	}
	h.ok("planning")
	h.ok("coding")
	h.expect("code_review", core.Running, 0, 1)
	h.gateFail("code_review", "found P0 issues")

	h.expect("planning", core.Completed, 0, 1)
	h.expect("coding", core.Running, 1, 1) // reset to PENDING, then started again at once
	h.expect("code_review", core.Pending, 1, 0)
	h.expect("merge", core.Pending, 1, 0)
	if b := h.st.Steps[core.Key("code_review")].BlockedByLoop; b == nil || *b != "code_review" {
		t.Errorf("code_review blocked_by_loop = %v, want code_review", b)
	}
	if fb := h.st.Steps[core.Key("coding")].Feedback; fb == nil || fb.Step != "code_review" || fb.Reason != "gate.pass is false: found P0 issues" {
		t.Errorf("coding feedback = %+v", fb)
	}
	// The loop-back event sits between the gate failure and the new start.
	types := eventTypes(h.events)
	i := slices.Index(types, core.EvGateFailed)
	if i < 0 || types[i+1] != core.EvStepStarted {
		t.Errorf("events after the gate failure: %v", types[i:])
	}

	h.ok("coding")
	h.expect("coding", core.Completed, 1, 1)
	if b := h.st.Steps[core.Key("merge")].BlockedByLoop; b != nil {
		t.Errorf("merge still blocked by %s after coding completed", *b)
	}
	h.ok("code_review")
	h.expect("code_review", core.Completed, 1, 1)
	h.ok("merge")
	if f := h.finish(); f == nil || f.Status != core.RunCompleted || f.ExitCode != 0 {
		t.Fatalf("finish = %+v", f)
	}
	h.replayed()
}

// TestCoreIterationCap: when the target's iteration count reaches
// max_iterations the gate step fails, the run ends with exit 5, and
// nothing is retried.
func TestCoreIterationCap(t *testing.T) {
	h := newCoreHarness(t, reviewLoop, spec.Budgets{})
	h.ok("planning")
	for it := 0; it < 3; it++ {
		h.ok("coding")
		h.gateFail("code_review", "still broken")
	}
	s := h.st.Steps[core.Key("code_review")]
	if s.Status != core.Failed || !strings.Contains(*s.LastError, "max iterations reached") {
		t.Fatalf("code_review: %s %v", s.Status, deref(s.LastError))
	}
	h.expect("coding", core.Completed, 2, 1)
	if f := h.finish(); f == nil || f.ExitCode != 5 || f.Status != core.RunFailed {
		t.Fatalf("finish = %+v, want exit 5", f)
	}
	if len(h.started()) != 0 {
		t.Errorf("started %v after the cap", h.started())
	}
	h.replayed()
}

// TestCoreBudgetOverride: --max-iterations overrides the workflow's
// default, but a step's own value wins.
func TestCoreBudgetOverride(t *testing.T) {
	h := newCoreHarness(t, reviewLoop, spec.Budgets{MaxIterations: 2})
	h.ok("planning")
	h.ok("coding")
	h.gateFail("code_review", "x")
	h.ok("coding")
	h.gateFail("code_review", "x")
	if f := h.finish(); f == nil || f.ExitCode != 5 {
		t.Fatalf("with --max-iterations 2 the second failure should end the run: %+v", f)
	}
	own := strings.Replace(reviewLoop, "loop_back_to: coding", "loop_back_to: coding\n      max_iterations: 5", 1)
	h = newCoreHarness(t, own, spec.Budgets{MaxIterations: 2})
	h.ok("planning")
	for i := 0; i < 4; i++ {
		h.ok("coding")
		h.gateFail("code_review", "x")
	}
	if f := h.finish(); f != nil {
		t.Fatalf("gate.max_iterations 5 should allow 4 loop-backs: %+v", f)
	}
}

// TestCoreRetries: a failed session is retried while attempts <
// max_attempts, with doubling backoff capped at max_backoff; retry_if
// false fails at once.
func TestCoreRetries(t *testing.T) {
	src := `
name: retries
steps:
  - id: flaky
    run: x
    max_attempts: 4
    retry: {backoff: 10s, max_backoff: 15s}
`
	h := newCoreHarness(t, src, spec.Budgets{})
	var delays []time.Duration
	for i := 0; i < 3; i++ {
		effs := h.fail("flaky", true)
		var timer *core.StartTimer
		for _, e := range effs {
			if st, ok := e.(core.StartTimer); ok {
				timer = &st
			}
		}
		if timer == nil {
			t.Fatalf("attempt %d: no retry timer: %#v", i+1, effs)
		}
		delays = append(delays, timer.Delay)
		h.expect("flaky", core.Pending, 0, i+1)
		if len(h.decide(core.TimerFired{Step: core.Key("flaky")})) == 0 {
			t.Fatal("timer fired, nothing started")
		}
	}
	if want := []time.Duration{10 * time.Second, 15 * time.Second, 15 * time.Second}; !slices.Equal(delays, want) {
		t.Errorf("backoff delays %v, want %v", delays, want)
	}
	h.fail("flaky", true)
	h.expect("flaky", core.Failed, 0, 4)
	if f := h.finish(); f == nil || f.ExitCode != 1 {
		t.Fatalf("finish = %+v", f)
	}

	h = newCoreHarness(t, src, spec.Budgets{})
	h.fail("flaky", false) // retry_if said no
	h.expect("flaky", core.Failed, 0, 1)
	h.replayed()
}

// TestCoreInterruptDoesNotCountAttempt: a session cut short by SIGINT
// goes back to PENDING with its attempt given back.
func TestCoreInterruptDoesNotCountAttempt(t *testing.T) {
	h := newCoreHarness(t, reviewLoop, spec.Budgets{})
	h.decide(core.Interrupt{})
	h.decide(core.SessionDone{Step: core.Key("planning"), Interrupted: true})
	h.expect("planning", core.Pending, 0, 0)
	if f := h.finish(); f == nil || f.ExitCode != 130 || f.Status != core.RunInterrupted {
		t.Fatalf("finish = %+v", f)
	}
	h.replayed()
}

// TestCoreParallel: independent steps run at once up to max_parallel,
// and a join waits for all of them.
func TestCoreParallel(t *testing.T) {
	src := `
name: par
max_parallel: 2
steps:
  - {id: a, run: x, needs: []}
  - {id: b, run: x, needs: []}
  - {id: c, run: x, needs: []}
  - {id: join, run: x, needs: [a, b, c]}
`
	h := newCoreHarness(t, src, spec.Budgets{})
	if got := h.started(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("started %v, want [a b]", got)
	}
	h.ok("b")
	if got := h.started(); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("after b: started %v, want [c]", got)
	}
	h.ok("a")
	if len(h.started()) != 0 {
		t.Fatalf("join started before c finished")
	}
	h.ok("c")
	if got := h.started(); !slices.Equal(got, []string{"join"}) {
		t.Fatalf("after c: started %v", got)
	}
	h.ok("join")
	if h.finish() == nil {
		t.Fatal("not finished")
	}
}

// TestCoreFailureWaitsForRunningBranch: a failure starts nothing new
// but lets the sessions in flight end before the run finishes.
func TestCoreFailureWaitsForRunningBranch(t *testing.T) {
	src := `
name: par
max_parallel: 2
steps:
  - {id: a, run: x, needs: [], max_attempts: 1}
  - {id: b, run: x, needs: []}
  - {id: c, run: x, needs: [a]}
`
	h := newCoreHarness(t, src, spec.Budgets{})
	h.fail("a", true)
	if h.finish() != nil {
		t.Fatal("finished while b still runs")
	}
	h.ok("b")
	if f := h.finish(); f == nil || f.ExitCode != 1 {
		t.Fatalf("finish = %+v", f)
	}
	h.expect("c", core.Pending, 0, 0)
}

// TestCoreHuman: a human step waits; approval completes it, rejection
// loops back when it has a loop-back, and fails it otherwise.
func TestCoreHuman(t *testing.T) {
	src := `
name: human
steps:
  - id: coding
    run: x
  - id: approval
    human: {message: "ok?"}
    loop_back_to: coding
  - id: ship
    run: x
`
	h := newCoreHarness(t, src, spec.Budgets{})
	effs := h.ok("coding")
	var await *core.AwaitHuman
	for _, e := range effs {
		if a, ok := e.(core.AwaitHuman); ok {
			await = &a
		}
	}
	if await == nil || await.ManualInputPath != "/repo/.agents/runs/r1/manual_inputs/r1__approval.json" {
		t.Fatalf("await = %+v", await)
	}
	h.expect("approval", core.WaitingOnHuman, 0, 1)
	if p := h.st.Steps[core.Key("approval")].ManualInputPath; p == nil || *p != await.ManualInputPath {
		t.Errorf("manual_input_path = %v", p)
	}
	var idle bool
	for _, e := range effs {
		_, idle = e.(core.Idle)
		if idle {
			break
		}
	}
	if !idle {
		t.Errorf("no Idle effect while waiting on a human: %#v", effs)
	}
	h.decide(core.HumanDecision{Step: core.Key("approval"), Input: core.HumanInput{Approved: false, By: "alice", Reason: "needs tests"}})
	h.expect("coding", core.Running, 1, 1)
	if fb := h.st.Steps[core.Key("coding")].Feedback; fb == nil || !strings.Contains(fb.Reason, "rejected by alice: needs tests") {
		t.Errorf("feedback = %+v", fb)
	}
	h.ok("coding")
	h.decide(core.HumanDecision{Step: core.Key("approval"), Input: core.HumanInput{Approved: true, By: "bob", Input: map[string]any{"ticket": "OPS-1"}}})
	h.expect("approval", core.Completed, 1, 1)
	if in := h.st.Steps[core.Key("approval")].Human; in == nil || in.By != "bob" || in.Input["ticket"] != "OPS-1" {
		t.Errorf("human input = %+v", in)
	}
	h.ok("ship")
	if f := h.finish(); f == nil || f.ExitCode != 0 {
		t.Fatalf("finish = %+v", f)
	}
	h.replayed()
}

// TestCoreControl: pause stops new sessions after the current one,
// continue resumes, run_once runs exactly one session then pauses.
func TestCoreControl(t *testing.T) {
	src := `
name: ctl
steps:
  - {id: a, run: x}
  - {id: b, run: x}
  - {id: c, run: x}
  - {id: d, run: x}
`
	h := newCoreHarness(t, src, spec.Budgets{})
	h.decide(core.ControlChanged{Desired: core.Pause})
	h.expect("a", core.Running, 0, 1) // never interrupted
	effs := h.ok("a")
	if len(h.started()) != 0 {
		t.Fatalf("paused, yet started %v", h.started())
	}
	if !hasEffect[core.Idle](effs) {
		t.Errorf("no Idle effect when paused: %#v", effs)
	}
	h.decide(core.ControlChanged{Desired: core.RunOnce})
	if got := h.started(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("run_once started %v", got)
	}
	effs = h.ok("b")
	if len(h.started()) != 0 {
		t.Fatalf("run_once started a second session: %v", h.started())
	}
	var set *core.SetControl
	for _, e := range effs {
		if s, ok := e.(core.SetControl); ok {
			set = &s
		}
	}
	if set == nil || set.Desired != core.Pause || set.Current != core.Pause {
		t.Errorf("after run_once: SetControl = %+v, want pause/pause", set)
	}
	h.decide(core.ControlChanged{Desired: core.Continuous})
	if got := h.started(); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("continue started %v", got)
	}
	h.ok("c")
	h.ok("d")
	if h.finish() == nil {
		t.Fatal("not finished")
	}
}

// TestCoreUnknownControlIsPause: an unknown desired state is treated as
// pause.
func TestCoreUnknownControlIsPause(t *testing.T) {
	h := newCoreHarness(t, "name: u\nsteps:\n  - {id: a, run: x}\n  - {id: b, run: x}\n", spec.Budgets{})
	h.decide(core.ControlChanged{Desired: "sprint"})
	h.ok("a")
	if len(h.started()) != 0 {
		t.Fatalf("unknown control state did not pause: started %v", h.started())
	}
}

// TestCoreReconcileOnBegin: a step found RUNNING when a runner takes
// the run (its runner died) runs again with its attempt counted.
func TestCoreReconcileOnBegin(t *testing.T) {
	h := newCoreHarness(t, reviewLoop, spec.Budgets{})
	h.ok("planning")
	h.expect("coding", core.Running, 0, 1)
	h.core = core.NewCore(h.plan) // a new runner
	h.decide(core.Begin{})
	h.expect("coding", core.Running, 0, 2)
	h.expect("planning", core.Completed, 0, 1)
	if !slices.Contains(eventTypes(h.events), core.EvReconciled) {
		t.Error("no reconcile event")
	}
	h.replayed()
}

// TestCoreWhenSkips: a step whose when is false is SKIPPED, and its
// dependents still run.
func TestCoreWhenSkips(t *testing.T) {
	src := `
name: w
steps:
  - {id: a, run: x}
  - {id: b, run: x, when: 'vars.x == "y"'}
  - {id: c, run: x}
vars: {x: "n"}
`
	h := newCoreHarness(t, src, spec.Budgets{})
	effs := h.ok("a")
	if len(effs) != 1 || effs[0] != (core.Evaluate{Step: core.Key("b")}) {
		t.Fatalf("effects %#v, want Evaluate b", effs)
	}
	h.decide(core.WhenResult{Step: core.Key("b"), Run: false, Reason: "when is false"})
	h.expect("b", core.Skipped, 0, 0)
	if got := h.started(); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("started %v", got)
	}
}

func hasEffect[T core.Effect](effs []core.Effect) bool {
	for _, e := range effs {
		if _, ok := e.(T); ok {
			return true
		}
	}
	return false
}

func eventTypes(evs []core.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCoreRunOnceDuringSession: run_once asked for while a session runs
// lets exactly one more session start after it.
func TestCoreRunOnceDuringSession(t *testing.T) {
	h := newCoreHarness(t, "name: o\nsteps:\n  - {id: a, run: x}\n  - {id: b, run: x}\n  - {id: c, run: x}\n", spec.Budgets{})
	h.decide(core.ControlChanged{Desired: core.RunOnce})
	h.ok("a")
	if got := h.started(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("after a: started %v, want [b]", got)
	}
	h.ok("b")
	if got := h.started(); len(got) != 0 {
		t.Fatalf("after the run_once session: started %v", got)
	}
	h.expect("c", core.Pending, 0, 0)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
