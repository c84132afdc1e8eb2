package core_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
)

// The core's side of agent_orchestrator's contract: a loop-back from an
// item resumes at it, a report alone decides a step, and a daily cost
// limit stops the run.

// twoLoops is agent_orchestrator's story shape mapped onto flow's: two
// loops over the same items, the second's body looping back to the
// first, then a step that needs the second.
func twoLoops(t *testing.T, resume bool) *core.Plan {
	t.Helper()
	steps := []core.PlanStep{
		{ID: "split", Kind: core.KindAgent, MaxAttempts: 1, MaxIterations: 5},
		{ID: "build", Kind: core.KindLoop, Needs: []string{"split"}, MaxAttempts: 1, MaxIterations: 5, ForEach: &core.PlanLoop{Body: []string{"build_item"}, MaxParallel: 1}},
		{ID: "build_item", Kind: core.KindAgent, Loop: "build", MaxAttempts: 1, MaxIterations: 5},
		{ID: "check", Kind: core.KindLoop, Needs: []string{"build"}, MaxAttempts: 1, MaxIterations: 5, ForEach: &core.PlanLoop{Body: []string{"check_item"}, MaxParallel: 1}},
		{ID: "check_item", Kind: core.KindCommand, Loop: "check", LoopTarget: "build", HasGate: true, MaxAttempts: 1, MaxIterations: 5},
		{ID: "docs", Kind: core.KindAgent, Needs: []string{"check"}, MaxAttempts: 1, MaxIterations: 5},
	}
	plan, err := core.NewPlan(steps, 1)
	if err != nil {
		t.Fatal(err)
	}
	plan.ResumeItems = resume
	return plan
}

// runTwoLoops runs twoLoops, the check of item b failing once, and
// returns the sessions in the order they started.
func runTwoLoops(t *testing.T, resume bool) (*coreHarness, []string) {
	h := newPlanHarness(t, twoLoops(t, resume))
	var order []string
	step := func(key string, fail bool) {
		t.Helper()
		order = append(order, key)
		if fail {
			h.gateFail(key, "needs work")
		} else {
			h.ok(key)
		}
	}
	step("split", false)
	failed := false
	for range 40 {
		switch {
		case h.expanding("build"):
			h.items("build", "a", "b", "c")
			continue
		case h.expanding("check"):
			h.items("check", "a", "b", "c")
			continue
		}
		started := h.started()
		if len(started) == 0 {
			break
		}
		key := started[0]
		fail := !failed && key == inst("check", "b", "check_item")
		failed = failed || fail
		step(key, fail)
	}
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish = %+v, sessions %v", f, order)
	}
	h.replayed()
	return h, order
}

func TestLoopBackResumesAtItem(t *testing.T) {
	b, c := func(k string) string { return inst("build", k, "build_item") }, func(k string) string { return inst("check", k, "check_item") }
	tests := []struct {
		name   string
		resume bool
		want   []string
	}{
		// agent_orchestrator's: the items before the failed one are kept.
		{"resuming", true, []string{"split", b("a"), b("b"), b("c"), c("a"), c("b"), b("b"), b("c"), c("b"), c("c"), "docs"}},
		// flow's own: every item runs again.
		{"flow's own", false, []string{"split", b("a"), b("b"), b("c"), c("a"), c("b"), b("a"), b("b"), b("c"), c("a"), c("b"), c("c"), "docs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, order := runTwoLoops(t, tt.resume)
			if !slices.Equal(order, tt.want) {
				t.Errorf("sessions:\n%s\nwant\n%s", strings.Join(order, " "), strings.Join(tt.want, " "))
			}
			if !tt.resume {
				return
			}
			// The kept items stay at their iteration; the others, and
			// the loops, are one on.
			for key, want := range map[string]int{b("a"): 0, b("b"): 1, b("c"): 1, c("a"): 0, c("b"): 1, c("c"): 1, "build": 1, "check": 1, "docs": 1, "split": 0} {
				if got := h.st.Steps[keytest.K(key)].IterationCount; got != want {
					t.Errorf("%s: iteration %d, want %d", key, got, want)
				}
			}
			for _, loop := range []string{"build", "check"} {
				ls := h.st.Steps[keytest.K(loop)]
				if ls.Status != core.Completed || *ls.LoopIndex != 3 || !*ls.LoopCompleted || ls.Attempts != 1 {
					t.Errorf("%s: %s index %d completed %v attempts %d", loop, ls.Status, *ls.LoopIndex, *ls.LoopCompleted, ls.Attempts)
				}
			}
		})
	}
}

// TestReportDecides: under agent_orchestrator's contract a gate without
// an explicit verdict passes, and a FAIL line fails nothing; only the
// report's gate_failure fails the gate.
func TestReportDecides(t *testing.T) {
	plan := func(reportDecides bool) *core.Plan {
		p, err := core.NewPlan([]core.PlanStep{
			{ID: "code", Kind: core.KindAgent, MaxAttempts: 1, MaxIterations: 3, ReportDecides: reportDecides},
			{ID: "review", Kind: core.KindAgent, Needs: []string{"code"}, LoopTarget: "code", HasGate: true, MaxAttempts: 1, MaxIterations: 3, ReportDecides: reportDecides},
		}, 1)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name          string
		reportDecides bool
		facts         core.SessionFacts
		wantLoop      bool
	}{
		{"no verdict: agent_orchestrator's passes", true, core.SessionFacts{}, false},
		{"no verdict: flow's fails", false, core.SessionFacts{}, true},
		{"a FAIL line: agent_orchestrator's passes", true, core.SessionFacts{Verdict: core.VerdictFail}, false},
		{"gate_failure", true, core.SessionFacts{Report: &core.ReportFacts{Status: "completed", GateFailure: true, GateFailureGiven: true}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newPlanHarness(t, plan(tt.reportDecides))
			h.decide(core.SessionDone{Step: core.Key("code"), Outcome: core.Outcome{Attempt: 1}, Facts: core.SessionFacts{Verdict: core.VerdictFail}})
			if s := h.st.Steps[core.Key("code")]; s.Status != core.Completed && tt.reportDecides {
				t.Fatalf("code after a FAIL line: %s", s.Status)
			}
			if h.st.Steps[core.Key("review")].Status != core.Running {
				return // flow's own: code failed on its FAIL line
			}
			h.decide(core.SessionDone{Step: core.Key("review"), Outcome: core.Outcome{Attempt: 1}, Facts: tt.facts, Gate: &core.GateFacts{}})
			looped := h.st.Steps[core.Key("code")].IterationCount == 1
			if looped != tt.wantLoop {
				t.Errorf("looped back = %v, want %v (review: %s %v)", looped, tt.wantLoop, h.st.Steps[core.Key("review")].Status, h.st.Steps[core.Key("review")].LastError)
			}
		})
	}
}

// TestDailyCostLimit: the day's spending, as the driver tells it, stops
// the run once it reaches the limit, before any session when it is
// reached already; a higher limit lets a new core go on.
func TestDailyCostLimit(t *testing.T) {
	spent := func(v float64) *float64 { return &v }
	p := budgetPlan(t, core.Budget{}, core.Budget{})
	p.DailyCostUSD = 1
	h := newPlanHarness(t, p)
	if got := h.started(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("started %v", got)
	}
	h.decide(core.SessionDone{Step: core.Key("a"), Outcome: core.Outcome{Attempt: 1}, DailySpent: spent(0.4), Gate: &core.GateFacts{}})
	if got := h.started(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("started %v after 0.4 of 1", got)
	}
	// Another run spent meanwhile: this session brings the day to 1.3.
	h.decide(core.SessionDone{Step: core.Key("b"), Outcome: core.Outcome{Attempt: 1}, DailySpent: spent(1.3), Gate: &core.GateFacts{}})
	f := h.finish()
	if f == nil || f.Status != core.RunBudgetExceeded || f.ExitCode != 6 || !strings.Contains(f.Reason, "daily cost limit is spent (1.3 of 1 USD today, UTC)") {
		t.Fatalf("finish = %+v", f)
	}
	if len(h.started()) != 0 {
		t.Errorf("started %v", h.started())
	}

	// A run that begins over the limit starts nothing; a higher limit
	// goes on.
	h2 := newPlanHarness(t, p)
	h2.decide(core.Begin{DailySpent: 1.3})
	if f := h2.finish(); f == nil || f.Status != core.RunBudgetExceeded || len(h2.started()) != 0 {
		t.Errorf("begun over the limit: %+v, started %v", f, h2.started())
	}
	p.DailyCostUSD = 2
	h3 := newPlanHarness(t, p)
	h3.decide(core.Begin{DailySpent: 1.3})
	if f := h3.finish(); f != nil {
		t.Errorf("under a higher limit: %+v", f)
	}
}
