package temporal

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"go.temporal.io/sdk/testsuite"
)

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

// reviewer fails the first n reviews.
func reviewer(n int) func(call) reply {
	reviews := 0
	return func(c call) reply {
		if c.Step == "code_review" {
			reviews++
			if reviews <= n {
				return reply{Out: "found issues\nFAIL\n"}
			}
			return reply{Out: "<review>PASS</review>\n"}
		}
		return reply{Out: c.Step + " done\n"}
	}
}

// TestWorkflowLoopBackProgression follows a loop-back
// (docs/concepts.md, "Loop-backs") on Temporal: a failed review loops
// back to coding once, the second pass completes, and the worker's
// record says so.
func TestWorkflowLoopBackProgression(t *testing.T) {
	h := newHarness(t, reviewLoop, reviewer(1))
	res := h.run()
	if res.Status != core.RunCompleted || res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	want := []string{"planning.0.1", "coding.0.1", "code_review.0.1", "coding.1.1", "code_review.1.1", "merge.1.1"}
	if got := h.starter.steps(); !slices.Equal(got, want) {
		t.Errorf("sessions %v, want %v", got, want)
	}
	st := h.state()
	if st.Status != core.RunCompleted || st.Steps[keytest.K("coding")].IterationCount != 1 || st.Steps[keytest.K("merge")].Status != core.Completed {
		t.Errorf("mirrored state: %s, coding iteration %d", st.Status, st.Steps[keytest.K("coding")].IterationCount)
	}
	ev := strings.Join(h.events(), "\n")
	for _, w := range []string{"run_created", "runner_started", "gate_failed code_review", "session_started coding", "run_finished"} {
		if !strings.Contains(ev, w) {
			t.Errorf("events lack %q:\n%s", w, ev)
		}
	}
}

// TestWorkflowIterationCap: a review that always fails ends the run at
// its iteration budget with exit 5.
func TestWorkflowIterationCap(t *testing.T) {
	h := newHarness(t, reviewLoop, reviewer(100))
	res := h.run()
	if res.Status != core.RunFailed || res.ExitCode != 5 {
		t.Fatalf("result %+v", res)
	}
	// max_iterations 3: the review runs at iterations 0, 1 and 2.
	if n := strings.Count(strings.Join(h.starter.steps(), " "), "code_review"); n != 3 {
		t.Errorf("%d reviews, want 3", n)
	}
}

// TestWorkflowRetryBackoff: a failed attempt waits for its backoff on a
// Temporal timer (virtual time) before the next one.
func TestWorkflowRetryBackoff(t *testing.T) {
	src := `
name: retry
steps:
  - id: flaky
    run: x
    max_attempts: 3
    retry: {backoff: 10m}
`
	tries := 0
	h := newHarness(t, src, func(c call) reply {
		tries++
		if tries < 3 {
			return reply{Exit: 1}
		}
		return reply{}
	})
	res := h.run()
	if res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	// Backoff 10m then 20m: the run took half an hour of virtual time.
	if got := h.env.Now().Sub(start); got < 30*time.Minute {
		t.Errorf("the run took %s of virtual time, want at least 30m of backoff", got)
	}
	if got := h.starter.steps(); !slices.Equal(got, []string{"flaky.0.1", "flaky.0.2", "flaky.0.3"}) {
		t.Errorf("sessions %v", got)
	}
}

const humanFlow = `
name: ship
steps:
  - id: build
    run: make
  - id: approve
    human:
      message: ship it?
      inputs:
        - {name: channel, default: stable}
  - id: release
    run: release
`

// update sends an Update after delay and records how it ended.
func (h *harness) update(delay time.Duration, name string, arg any, errp *error, done *bool) {
	h.env.RegisterDelayedCallback(func() {
		h.env.UpdateWorkflow(name, name+"-"+delay.String(), &testsuite.TestUpdateCallback{
			OnReject:   func(err error) { *errp = err; *done = true },
			OnAccept:   func() {},
			OnComplete: func(_ interface{}, err error) { *errp = err; *done = true },
		}, arg)
	}, delay)
}

// TestWorkflowHumanApprovedByUpdate: a human step waits until an
// Update approves it; a second decision of the same step is refused.
func TestWorkflowHumanApprovedByUpdate(t *testing.T) {
	h := newHarness(t, humanFlow, func(c call) reply { return reply{} })
	var early, first, second error
	var earlyDone, firstDone, secondDone bool
	h.update(time.Millisecond, UpdateDecide, DecideRequest{Step: keytest.K("release"), Input: core.HumanInput{Approved: true}}, &early, &earlyDone)
	h.update(time.Hour, UpdateDecide, DecideRequest{Step: keytest.K("approve"), Input: core.HumanInput{Approved: true, By: "ann"}}, &first, &firstDone)
	h.update(2*time.Hour, UpdateDecide, DecideRequest{Step: keytest.K("approve"), Input: core.HumanInput{Approved: false, By: "bob"}}, &second, &secondDone)
	var status StatusReply
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QueryStatus)
		if err != nil {
			t.Error(err)
			return
		}
		if err := v.Get(&status); err != nil {
			t.Error(err)
		}
	}, 30*time.Minute)
	res := h.run()
	if res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	if !earlyDone || early == nil {
		t.Errorf("a decision of a step that does not wait was not refused")
	}
	if !firstDone || first != nil {
		t.Errorf("approval: %v (done %v)", first, firstDone)
	}
	if st := status.State; st == nil || st.Steps[keytest.K("approve")].Status != core.WaitingOnHuman || st.Status != core.RunWaitingOnHuman {
		t.Errorf("status while waiting: %+v", status.State)
	}
	st := h.state()
	hi := st.Steps[keytest.K("approve")].Human
	if hi == nil || !hi.Approved || hi.By != "ann" || hi.Input["channel"] != "stable" {
		t.Errorf("recorded decision %+v", hi)
	}
	if st.Steps[keytest.K("release")].Status != core.Completed {
		t.Errorf("release %s", st.Steps[keytest.K("release")].Status)
	}
	// The workflow ended before the second decision came: it is lost.
	if secondDone && second == nil {
		t.Errorf("a second decision of a decided step won")
	}
}

// TestWorkflowPauseContinue: a pause asked for while the run waits on
// a human holds the next session after the approval, until continue.
func TestWorkflowPauseContinue(t *testing.T) {
	src := "name: p\nsteps:\n  - {id: a, run: x}\n  - {id: h, human: {message: go}}\n  - {id: b, run: x}\n  - {id: c, run: x}\n"
	h := newHarness(t, src, func(c call) reply { return reply{} })
	var perr, aerr, cerr error
	var pdone, adone, cdone bool
	h.update(time.Minute, UpdateControl, ControlRequest{Desired: core.Pause}, &perr, &pdone)
	h.update(2*time.Minute, UpdateDecide, DecideRequest{Step: keytest.K("h"), Input: core.HumanInput{Approved: true}}, &aerr, &adone)
	var paused *core.State
	h.env.RegisterDelayedCallback(func() {
		v, err := h.env.QueryWorkflow(QueryStatus)
		if err != nil {
			t.Error(err)
			return
		}
		var s StatusReply
		if err := v.Get(&s); err != nil {
			t.Error(err)
		}
		paused = s.State
	}, time.Hour)
	h.update(2*time.Hour, UpdateControl, ControlRequest{Desired: core.Continuous}, &cerr, &cdone)
	res := h.run()
	if res.ExitCode != 0 || perr != nil || aerr != nil || cerr != nil || !pdone || !adone || !cdone {
		t.Fatalf("result %+v; pause %v approve %v continue %v", res, perr, aerr, cerr)
	}
	if paused == nil || paused.Status != core.RunPaused || paused.Steps[keytest.K("b")].Status != core.Pending {
		t.Fatalf("status while paused: %+v", paused)
	}
	if got := h.env.Now().Sub(start); got < 2*time.Hour {
		t.Errorf("the run ended after %s, before continue", got)
	}
}

// TestWorkflowCancelInterrupts: cancelling the workflow interrupts the
// run as SIGINT does locally: it ends interrupted, exit 130, recorded.
func TestWorkflowCancelInterrupts(t *testing.T) {
	h := newHarness(t, humanFlow, func(c call) reply { return reply{} })
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Hour)
	res := h.run()
	if res.Status != core.RunInterrupted || res.ExitCode != 130 {
		t.Fatalf("result %+v", res)
	}
	if st := h.state(); st.Status != core.RunInterrupted {
		t.Errorf("mirrored status %s", st.Status)
	}
}

// TestWorkflowHumanTimeout: a human step nobody decides fails at its
// human.timeout, a duration or an expression evaluated on a worker, as
// it does locally, on the workflow's clock.
func TestWorkflowHumanTimeout(t *testing.T) {
	for _, tc := range []struct {
		timeout string
		want    time.Duration
	}{
		{"90m", 90 * time.Minute},
		{"int(vars.hours) * 3600", 2 * time.Hour},
	} {
		t.Run(tc.timeout, func(t *testing.T) {
			src := "name: wait\nvars: {hours: \"2\"}\nsteps:\n  - id: approve\n    human:\n      message: ship?\n      timeout: " + tc.timeout + "\n  - id: after\n    run: x\n"
			h := newHarness(t, src, func(c call) reply { return reply{} })
			began := h.env.Now()
			res := h.run()
			if res.Status != core.RunFailed {
				t.Fatalf("result %+v", res)
			}
			st := h.state()
			if s := st.Steps[keytest.K("approve")]; s.Status != core.Failed || s.LastError == nil {
				t.Errorf("approve %+v", s)
			}
			if got := h.env.Now().Sub(began); got < tc.want || got > tc.want+time.Minute {
				t.Errorf("timed out after %s of workflow time, want %s", got, tc.want)
			}
		})
	}
}

// TestWorkflowHumanExpressionErrors: a human.message or human.timeout
// that cannot be evaluated fails the step with where and why, as on a
// local runner (local.TestHumanExpressionErrors); nobody is left
// waiting on it.
func TestWorkflowHumanExpressionErrors(t *testing.T) {
	for _, tc := range []struct {
		name, human, want string
	}{
		{"message", `{message: 'deploy {{ int(vars.v) }}'}`, "human.message"},
		{"timeout", `{message: go, timeout: 'int(vars.v)'}`, "human.timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "name: h\nvars: {v: ten}\nsteps:\n  - {id: gate, human: " + tc.human + "}\n  - {id: b, run: x}\n"
			h := newHarness(t, src, func(c call) reply { return reply{} })
			res := h.run()
			st := h.state()
			g := st.Steps[keytest.K("gate")]
			if res.Status != core.RunFailed || res.ExitCode != 1 || g.Status != core.Failed || g.LastError == nil ||
				!strings.Contains(*g.LastError, "workflow.yaml:4:") || !strings.Contains(*g.LastError, tc.want) {
				t.Fatalf("result %+v, gate %+v; want it failed with %s and its position", res, g, tc.want)
			}
			if b := st.Steps[keytest.K("b")]; b != nil && b.Status != core.Pending && b.Status != core.Skipped {
				t.Errorf("the step after it is %s", b.Status)
			}
		})
	}
}
