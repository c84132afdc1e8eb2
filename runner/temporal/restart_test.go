package temporal

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
)

const restartable = `
name: restartable
steps:
  - id: side
    run: side
  - id: a
    run: a
  - id: b
    needs: [a]
    run: b
    max_attempts: 1
  - id: c
    needs: [b]
    run: c
`

// restartFrom starts the harness's run again, in a new execution, from
// the state its worker mirrored: what flow retry and --start-at-step do
// once the run's workflow has ended.
func (h *harness) restartFrom(startAt string, retry bool) Result {
	h.t.Helper()
	h.prepareRestart(startAt, retry, "")
	return h.run()
}

// prepareRestart readies a new execution of the harness's run from the
// state its worker mirrored, with the control state the last one
// ended with; delayed callbacks registered after it reach the new one.
func (h *harness) prepareRestart(startAt string, retry bool, control core.ControlState) {
	h.t.Helper()
	st, err := json.Marshal(h.state())
	if err != nil {
		h.t.Fatal(err)
	}
	h.starter.mu.Lock()
	h.starter.calls = nil
	h.starter.mu.Unlock()
	h.newEnv()
	h.in.Restart = &Restart{Host: Host{Name: "w1", Repo: repo, Queue: "q"}, State: st, StartAt: core.Key(startAt), Retry: retry, Control: control}
}

// TestWorkflowRetryAndStartAt: a failed run retried in a new execution
// runs its failed step and what depends on it again, in a new
// generation, and keeps the rest; started again at a step it runs that
// step and what depends on it, and keeps the rest. The worker's record
// goes on across the executions.
func TestWorkflowRetryAndStartAt(t *testing.T) {
	h := failedRestartable(t)
	res := h.restartFrom("", true)
	if res.Status != core.RunCompleted {
		t.Fatalf("retry: %+v", res)
	}
	if got, want := h.starter.steps(), []string{"b.0.1", "c.0.1"}; !slices.Equal(got, want) {
		t.Errorf("retry ran %v, want %v", got, want)
	}
	st := h.state()
	if st.Generation != 1 || st.Status != core.RunCompleted {
		t.Errorf("after the retry: generation %d, status %s", st.Generation, st.Status)
	}
	res = h.restartFrom("b", false)
	if res.Status != core.RunCompleted {
		t.Fatalf("start at b: %+v", res)
	}
	if got, want := h.starter.steps(), []string{"b.0.1", "c.0.1"}; !slices.Equal(got, want) {
		t.Errorf("start at b ran %v, want %v", got, want)
	}
	ev := strings.Join(h.events(), "\n")
	for _, w := range []string{"retry", "start_at b", "run_finished"} {
		if !strings.Contains(ev, w) {
			t.Errorf("events lack %q:\n%s", w, ev)
		}
	}
	if n := strings.Count(ev, "run_created"); n != 1 {
		t.Errorf("%d run_created events, want 1:\n%s", n, ev)
	}
}

// TestWorkflowNewRunAtStep: a new run started at a step skips the
// steps it does not lead to.
func TestWorkflowNewRunAtStep(t *testing.T) {
	h := newHarness(t, restartable, func(c call) reply { return reply{Out: "ok\n"} })
	h.in.StartAt = core.Key("b")
	if res := h.run(); res.Status != core.RunCompleted {
		t.Fatalf("result %+v", res)
	}
	if got, want := h.starter.steps(), []string{"b.0.1", "c.0.1"}; !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
	if s := h.state().Steps[keytest.K("a")]; s.Status != core.Skipped {
		t.Errorf("a is %s, want skipped", s.Status)
	}
}

// TestWorkflowLogsAndRetryNotes: QueryLogs answers the tail of each
// step's last session, and QueryEvents the retries' waits.
func TestWorkflowLogsAndRetryNotes(t *testing.T) {
	h := newHarness(t, `
name: logs
steps:
  - id: flaky
    run: flaky
    max_attempts: 2
    retry: {backoff: 5s}
`, func() func(call) reply {
		n := 0
		return func(c call) reply {
			n++
			if n == 1 {
				return reply{Out: "first\n", Exit: 1}
			}
			return reply{Out: "second\n"}
		}
	}())
	h.run()
	v, err := h.env.QueryWorkflow(QueryLogs)
	if err != nil {
		t.Fatal(err)
	}
	var logs LogsReply
	if err := v.Get(&logs); err != nil {
		t.Fatal(err)
	}
	if len(logs.Tails) != 1 || logs.Tails[0].Tail != "second\n" || logs.Tails[0].Attempt != 2 || logs.Tails[0].Host != "w1" {
		t.Errorf("logs %+v", logs)
	}
	v, err = h.env.QueryWorkflow(QueryEvents, int64(0))
	if err != nil {
		t.Fatal(err)
	}
	var page EventsPage
	if err := v.Get(&page); err != nil {
		t.Fatal(err)
	}
	if len(page.Retries) != 1 || page.Retries[0].Step != keytest.K("flaky") || page.Retries[0].Delay.Seconds() != 5 {
		t.Errorf("retries %+v", page.Retries)
	}
}

// TestWorkflowRestartKeepsPause: a paused run that is interrupted and
// started again stays paused — its next session waits for flow
// continue — as a local run reads control.json.
func TestWorkflowRestartKeepsPause(t *testing.T) {
	src := "name: p\nsteps:\n  - {id: a, run: x}\n  - {id: h, human: {message: go}}\n  - {id: b, run: x}\n"
	h := newHarness(t, src, func(c call) reply { return reply{} })
	var perr error
	var pdone bool
	h.update(time.Minute, UpdateControl, ControlRequest{Desired: core.Pause}, &perr, &pdone)
	var before StatusReply
	h.env.RegisterDelayedCallback(func() { before = h.query(QueryStatus) }, 30*time.Minute)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Hour)
	if res := h.run(); res.Status != core.RunInterrupted || perr != nil || !pdone {
		t.Fatalf("first execution: %+v; pause %v", res, perr)
	}
	if before.Control != core.Pause {
		t.Fatalf("status while paused says control %q", before.Control)
	}
	h.prepareRestart("", false, before.Control)
	var aerr, cerr error
	var adone, cdone bool
	h.update(time.Minute, UpdateDecide, DecideRequest{Step: keytest.K("h"), Input: core.HumanInput{Approved: true}}, &aerr, &adone)
	var paused StatusReply
	h.env.RegisterDelayedCallback(func() { paused = h.query(QueryStatus) }, time.Hour)
	h.update(2*time.Hour, UpdateControl, ControlRequest{Desired: core.Continuous}, &cerr, &cdone)
	began := h.env.Now()
	if res := h.run(); res.Status != core.RunCompleted || aerr != nil || cerr != nil || !adone || !cdone {
		t.Fatalf("restart: %+v; approve %v continue %v", res, aerr, cerr)
	}
	if st := paused.State; st == nil || st.Status != core.RunPaused || st.Steps[keytest.K("b")].Status != core.Pending || paused.Control != core.Pause {
		t.Errorf("status an hour into the restart: %+v", paused)
	}
	if got := h.env.Now().Sub(began); got < 2*time.Hour {
		t.Errorf("the restarted run ended after %s, before continue", got)
	}
	if got, want := h.starter.steps(), []string{"b.0.1"}; !slices.Equal(got, want) {
		t.Errorf("the restart ran %v, want %v", got, want)
	}
}

// TestWorkflowRestartEditedWorkflow: a run started again with its
// workflow edited goes on with the edit, recorded as a local resume
// records it: a removed step is dropped, a new one added PENDING and
// run, the new vars and digest kept; the worker reads the new source.
func TestWorkflowRestartEditedWorkflow(t *testing.T) {
	h := failedRestartable(t)
	edited := strings.Replace(restartable, "  - id: side\n    run: side\n", "", 1) +
		"  - id: d\n    needs: [c]\n    run: d\nvars:\n  greeting: hi\n"
	h.prepareRestart("", true, "")
	h.in.Source.Data = []byte(edited)
	if res := h.run(); res.Status != core.RunCompleted {
		t.Fatalf("retry with the edited workflow: %+v", res)
	}
	if got, want := h.starter.steps(), []string{"b.0.1", "c.0.1", "d.0.1"}; !slices.Equal(got, want) {
		t.Errorf("the retry ran %v, want %v", got, want)
	}
	st := h.state()
	wf, err := ParseSource(repo, h.in.Source, h.in.Invocation)
	if err != nil {
		t.Fatal(err)
	}
	digest := wf.Digest()
	if st.Steps[keytest.K("side")] != nil || st.Steps[keytest.K("d")] == nil || st.Steps[keytest.K("d")].Status != core.Completed ||
		!slices.Equal(st.StepOrder, keytest.Keys("a", "b", "c", "d")) || st.Vars["greeting"] != "hi" || st.WorkflowDigest != digest {
		t.Errorf("the record after the retry: order %v, vars %v, digest %s (want %s), side %+v, d %+v",
			st.StepOrder, st.Vars, st.WorkflowDigest, digest, st.Steps[keytest.K("side")], st.Steps[keytest.K("d")])
	}
	ev := strings.Join(h.events(), "\n")
	for _, w := range []string{"step_added d\nstep_removed side\nworkflow_changed\nrunner_started\nretry"} {
		if !strings.Contains(ev, w) {
			t.Errorf("events lack %q:\n%s", w, ev)
		}
	}
}

// failedRestartable runs restartable with its step b failing, and
// returns the harness of that failed run, whose step b passes from then
// on: a run to start again.
func failedRestartable(t *testing.T) *harness {
	t.Helper()
	failB := true
	h := newHarness(t, restartable, func(c call) reply {
		if c.Step == "b" && failB {
			return reply{Exit: 1}
		}
		return reply{Out: c.Step + "\n"}
	})
	if res := h.run(); res.Status != core.RunFailed {
		t.Fatalf("first execution: %+v", res)
	}
	failB = false
	return h
}
