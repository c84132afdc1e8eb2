package core_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
)

// TestConsensusTable is the table of docs/concepts.md, "Pair review", agentpair's for all.
func TestConsensusTable(t *testing.T) {
	const P, F, M, N = core.VerdictPass, core.VerdictFail, core.VerdictMixed, ""
	for _, tc := range []struct {
		rule     string
		verdicts []string
		want     string
	}{
		{"all", []string{P, P}, P},
		{"all", []string{F, P}, F},
		{"all", []string{P, F}, F},
		{"all", []string{P, N}, N},
		{"all", []string{N, N}, N},
		{"all", []string{M, P}, F},
		{"all", []string{F, N}, F},
		{"any", []string{P, N}, P},
		{"any", []string{P, F}, F},
		{"any", []string{N, N}, N},
		{"any", []string{M, N}, F},
		{"majority", []string{P, P, F}, P},
		{"majority", []string{P, F}, F},
		{"majority", []string{P, N}, P},
		{"majority", []string{N, N}, F},
		{"majority", []string{P, M, M}, F},
	} {
		if got := core.Consensus(tc.rule, tc.verdicts); got != tc.want {
			t.Errorf("%s %q = %q, want %q", tc.rule, tc.verdicts, got, tc.want)
		}
	}
}

// verdict ends a reviewer's session with a verdict.
func (h *coreHarness) verdict(step, v string) []core.Effect {
	return h.decide(core.SessionDone{Step: keytest.K(step), Outcome: core.Outcome{Attempt: h.st.Steps[keytest.K(step)].Attempts, Verdict: v},
		Facts: core.SessionFacts{Verdict: v}})
}

// TestPairReview: two reviewers run side by side (max_parallel 1), a
// FAIL from one does not fail its session but fails the consensus,
// which loops back to the coder with both verdicts; the second round
// passes.
func TestPairReview(t *testing.T) {
	steps := []core.PlanStep{
		{ID: "code", Kind: core.KindAgent, MaxAttempts: 1, MaxIterations: 3},
		{ID: "ra", Kind: core.KindAgent, Needs: []string{"code"}, Reviewer: true, MaxAttempts: 1, MaxIterations: 3},
		{ID: "rb", Kind: core.KindAgent, Needs: []string{"code"}, Reviewer: true, MaxAttempts: 1, MaxIterations: 3},
		{
			ID: "review", Kind: core.KindConsensus, Needs: []string{"ra", "rb"}, Extra: &core.PlanExtra{Reviewers: []string{"ra", "rb"}, Consensus: "all"}, LoopTarget: "code", HasGate: true, MaxAttempts: 1, MaxIterations: 3,
		},
	}
	plan, err := core.NewPlan(steps, 1)
	if err != nil {
		t.Fatal(err)
	}
	h := newPlanHarness(t, plan)
	h.ok("code")
	if got := h.started(); !slices.Equal(got, []string{"ra", "rb"}) {
		t.Fatalf("reviewers started %v, want both at once", got)
	}
	h.verdict("ra", core.VerdictFail)
	h.expect("ra", core.Completed, 0, 1)
	h.verdict("rb", core.VerdictPass)
	h.expect("code", core.Running, 1, 1)
	fb := h.st.Steps[core.Key("code")].Feedback
	if fb == nil || fb.Step != "review" || fb.Reason != "consensus all is FAIL: ra FAIL, rb PASS" || !strings.Contains(string(fb.Report), `"reviewers":[{"step":"ra","verdict":"FAIL"}`) {
		t.Fatalf("feedback %+v", fb)
	}
	h.ok("code")
	h.verdict("ra", core.VerdictPass)
	h.verdict("rb", "")
	if s := h.st.Steps[core.Key("review")]; s.Status != core.Pending || !strings.Contains(h.st.Steps[core.Key("code")].Feedback.Reason, "consensus all is PENDING: ra PASS, rb no verdict") {
		t.Fatalf("a missing verdict: review %s, feedback %+v", s.Status, h.st.Steps[core.Key("code")].Feedback)
	}
	h.ok("code")
	h.verdict("ra", core.VerdictPass)
	if f := h.finish(); f != nil {
		t.Fatalf("decided before every reviewer ran: %+v", f)
	}
	h.verdict("rb", core.VerdictPass)
	if s := h.st.Steps[core.Key("review")]; s.Status != core.Completed || s.Verdict != core.VerdictPass {
		t.Fatalf("review %s %s", s.Status, s.Verdict)
	}
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish %+v", f)
	}
	h.replayed()
}
