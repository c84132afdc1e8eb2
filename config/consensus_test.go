package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
)

// TestPairReviewExample loads the example pair reviews in both formats:
// equal models and digests, the consensus steps' kind, reviewers, rule
// and needs, and ReviewerOf.
func TestPairReviewExample(t *testing.T) {
	y, h := loadTwins(t, "testdata/pairs/review")
	for _, w := range []*config.Workflow{y, h} {
		r := w.Step("review")
		if r.Kind != config.KindConsensus || !r.HasGate() || r.LoopBack() != "code" || r.Gate.MaxIterations.N != 3 ||
			r.Gate.Consensus != config.ConsensusAll || !slices.Equal(r.Gate.Reviewers, []string{"claude_review", "codex_review"}) ||
			r.Agent != "" || r.Prompt != nil || r.Feedback != "" {
			t.Errorf("%s: review %+v gate %+v", w.Format, r, r.Gate)
		}
		if !slices.Equal(r.Needs, []string{"claude_review", "codex_review"}) || r.NeedsSet() {
			t.Errorf("%s: review needs %v (set %v), want its reviewers", w.Format, r.Needs, r.NeedsSet())
		}
		if got := w.Step("claude_review").Needs; !slices.Equal(got, []string{"code"}) {
			t.Errorf("%s: claude_review needs %v", w.Format, got)
		}
		if got := w.Step("ship").Needs; !slices.Equal(got, []string{"review"}) {
			t.Errorf("%s: ship needs %v", w.Format, got)
		}
		p := w.Step("ported")
		if p.Kind != config.KindConsensus || p.Loop != "langs" || p.Gate.Consensus != config.ConsensusMajority || p.Gate.Check != nil ||
			!slices.Equal(p.Gate.Reviewers, []string{"lint_review", "test_review"}) || !slices.Equal(p.Needs, []string{"lint_review", "test_review"}) {
			t.Errorf("%s: ported %+v gate %+v", w.Format, p, p.Gate)
		}
		for id, want := range map[string]*config.Step{
			"claude_review": r, "codex_review": r, "lint_review": p, "test_review": p,
			"code": nil, "review": nil, "ship": nil, "port": nil, "nope": nil,
		} {
			if got := w.ReviewerOf(id); got != want {
				t.Errorf("%s: ReviewerOf(%q) = %v, want %v", w.Format, id, got, want)
			}
		}
		if got := w.Order(); !slices.Equal(got, []string{"code", "claude_review", "codex_review", "review", "ship", "langs"}) {
			t.Errorf("%s: Order %v", w.Format, got)
		}
	}
	var graph strings.Builder
	if err := y.Mermaid(&graph); err != nil || !strings.Contains(graph.String(), `{"review<br/>consensus: all of claude_review, codex_review"}`) {
		t.Errorf("Mermaid: %v\n%s", err, graph.String())
	}
	// Without the index Load builds, ReviewerOf searches.
	if got := (&config.Workflow{Steps: y.Steps}).ReviewerOf("codex_review"); got != y.Step("review") {
		t.Errorf("ReviewerOf without the index = %v", got)
	}
	spec, _ := y.Spec()
	for _, want := range []string{`"kind": "consensus"`, `"reviewers": [`, `"consensus": "all"`, `"consensus": "majority"`} {
		if !strings.Contains(string(spec), want) {
			t.Errorf("spec has no %s:\n%s", want, spec)
		}
	}
}

// TestPairReviewDigest checks that a gate without reviewers keeps the
// spec it had (no reviewers, no consensus), and that the consensus rule
// and the reviewers change the digest.
func TestPairReviewDigest(t *testing.T) {
	plain := parse(t, "yaml", "name: x\nsteps:\n  - {id: a, run: a, gate: {pass: exit_code == 0}}\n")
	if spec, _ := plain.Spec(); strings.Contains(string(spec), "reviewers") || strings.Contains(string(spec), "consensus") {
		t.Errorf("a gate without reviewers has them in its spec:\n%s", spec)
	}
	base := "name: x\nsteps:\n  - {id: a, run: a}\n  - {id: b, run: b}\n  - {id: c, run: c}\n  - id: r\n    gate: {reviewers: [a, b]}\n"
	d := parse(t, "yaml", base).Digest()
	if explicit := strings.Replace(base, "[a, b]}", "[a, b], consensus: all}", 1); parse(t, "yaml", explicit).Digest() != d {
		t.Errorf("consensus: all, the default, changed the digest")
	}
	for _, edit := range []string{
		strings.Replace(base, "[a, b]}", "[a, b], consensus: any}", 1),
		strings.Replace(base, "[a, b]", "[a, c]", 1),
		strings.Replace(base, "[a, b]", "[b, a]", 1),
	} {
		if parse(t, "yaml", edit).Digest() == d {
			t.Errorf("digest unchanged by the edit:\n%s", edit)
		}
	}
}

func TestPairReviewRules(t *testing.T) {
	const head = "name: x\nagents: {a: {run: a}}\ndefaults: {agent: a}\nsteps:\n"
	tests := []struct {
		name string
		src  string // the steps, after head (line 5 on)
		want []loopDiag
	}{
		{"good with when, timeout and explicit needs", `  - {id: code, run: c}
  - {id: r1, prompt: Review.}
  - {id: r2, prompt: Review., needs: [code]}
  - id: r
    needs: [r2, code, r1]
    when: steps.code.exit_code == 0
    timeout: 1m
    gate: {reviewers: [r1, r2], consensus: any, loop_back_to: code}
`, nil},
		{"expressions belong on a reviewer", `  - {id: code, run: c}
  - {id: r1, prompt: Review.}
  - {id: r2, prompt: Review., needs: [code]}
  - id: r
    gate: {reviewers: [r1, r2], pass: steps.r1.verdict == "PASS", check: make test}
`, []loopDiag{{9, 39, `gate.pass: step "r" decides by its reviewers' consensus; put gate.pass on a reviewer`}, {9, 74, `gate.check: step "r" decides by its reviewers' consensus; put gate.check on a reviewer`}}},
		{"one reviewer", `  - {id: r1, run: a}
  - id: r
    gate: {reviewers: [r1]}
`, []loopDiag{{7, 12, `gate.reviewers: step "r" names 1 distinct reviewer; a pair review needs at least 2`}}},
		{"no reviewers", `  - id: r
    gate:
      reviewers: []
`, []loopDiag{{7, 7, `gate.reviewers: step "r" names 0 distinct reviewers; a pair review needs at least 2`}}},
		{"twice, itself, unknown", `  - {id: code_review, run: a}
  - id: r
    gate: {reviewers: [code_review, code_review, r, code_reveiw]}
`, []loopDiag{
			{7, 37, `gate.reviewers: "code_review" is listed twice`},
			{7, 50, `gate.reviewers: step "r" cannot review itself`},
			{7, 53, `gate.reviewers: unknown step "code_reveiw" (did you mean "code_review"?)`},
		}},
		{"not the same scope", `  - {id: top, run: a}
  - id: l
    for_each: [x]
    steps:
      - {id: b1, run: b}
      - {id: b2, run: b}
      - id: br
        gate: {reviewers: [b1, top]}
  - id: r
    gate: {reviewers: [top, b2]}
`, []loopDiag{
			{12, 32, `gate.reviewers: "top" is a step of the top level and "br" is a step of the body of loop "l"; a reviewer is a step of its gate's scope, the top level or the same loop's body`},
			{14, 29, `gate.reviewers: "b2" is a step of the body of loop "l" and "r" is a step of the top level; a reviewer is a step of its gate's scope, the top level or the same loop's body`},
		}},
		{"a reviewer that gives no verdict", `  - {id: h, human: {message: ok}}
  - {id: l, for_each: [x], steps: [{id: b, run: b}]}
  - id: r
    gate: {reviewers: [h, l]}
  - id: rr
    gate: {reviewers: [r, h]}
`, []loopDiag{
			{8, 24, `gate.reviewers: "h" is a human step; a reviewer runs a session that ends with a verdict`},
			{8, 27, `gate.reviewers: "l" is a loop step; a reviewer runs a session that ends with a verdict`},
			{10, 24, `gate.reviewers: "r" is a consensus step; a reviewer runs a session that ends with a verdict`},
			{10, 27, `gate.reviewers: "h" is a human step; a reviewer runs a session that ends with a verdict`},
		}},
		{"a reviewer of two gates", `  - {id: a, run: a}
  - {id: b, run: b}
  - {id: c, run: c}
  - {id: r1, gate: {reviewers: [a, b]}}
  - {id: r2, needs: [a, b, c], gate: {reviewers: [c, b]}}
`, []loopDiag{{9, 54, `gate.reviewers: "b" already reviews for "r1"; a step reviews for one pair review`}}},
		{"consensus without reviewers, and unknown", `  - {id: a, run: a}
  - {id: b, run: a, gate: {consensus: all}}
  - id: r
    gate: {reviewers: [a, b], consensus: majorty}
`, []loopDiag{
			{6, 39, `gate.consensus: step "b" has no gate.reviewers; only a pair review has a consensus`},
			{8, 42, `gate.consensus: unknown consensus "majorty" (did you mean "majority"?) (want all, any or majority)`},
		}},
		{"the keys of a session", `  - {id: a, run: a}
  - {id: b, run: b}
  - id: r
    run: x
    prompt: y
    prompt_file: z.md
    agent: a
    human: {message: m}
    max_attempts: 2
    retry: {backoff: 1s}
    retry_if: "true"
    idle_timeout: 1m
    feedback: none
    budget: {sessions: 1}
    gate: {reviewers: [a, b]}
`, []loopDiag{
			{8, 10, `step "r" decides from its reviewers: run belongs on a reviewer`},
			{9, 13, `step "r" decides from its reviewers: prompt belongs on a reviewer`},
			{10, 18, `step "r" decides from its reviewers: prompt_file belongs on a reviewer`},
			{11, 12, `step "r" decides from its reviewers: agent belongs on a reviewer`},
			{12, 5, `step "r" decides from its reviewers: human belongs on a reviewer`},
			{13, 19, `step "r" decides from its reviewers: max_attempts belongs on a reviewer`},
			{14, 12, `step "r" decides from its reviewers: retry belongs on a reviewer`},
			{15, 15, `step "r" decides from its reviewers: retry_if belongs on a reviewer`},
			{16, 19, `step "r" decides from its reviewers: idle_timeout belongs on a reviewer`},
			{17, 15, `step "r" decides from its reviewers: feedback belongs on a reviewer`},
			{18, 5, `step "r" decides from its reviewers: budget belongs on a reviewer`},
		}},
		{"for_each", `  - {id: a, run: a}
  - {id: b, run: b}
  - id: r
    for_each: [x]
    steps: [{id: c, run: c}]
    gate: {reviewers: [a, b]}
`, []loopDiag{{8, 15, `step "r" decides from its reviewers: for_each belongs on a reviewer`}}},
		{"explicit needs without a reviewer", `  - {id: a, run: a}
  - {id: b, run: b}
  - id: r
    needs: [a]
    gate: {reviewers: [a, b]}
`, []loopDiag{{8, 5, `needs: step "r" does not need its reviewer "b"; a pair review needs every reviewer (leave needs out to need just them)`}}},
		{"a reviewer that needs its gate", `  - {id: a, run: a}
  - {id: b, run: b, needs: [r]}
  - id: r
    gate: {reviewers: [a, b]}
`, []loopDiag{{6, 21, `dependency cycle: b -> r -> b`}}},
		{"a body's explicit needs without a reviewer", `  - id: l
    for_each: [x]
    steps:
      - {id: a, run: a}
      - {id: b, run: b}
      - {id: r, needs: [b], gate: {reviewers: [a, b]}}
`, []loopDiag{{10, 17, `needs: step "r" does not need its reviewer "a"; a pair review needs every reviewer (leave needs out to need just them)`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDiags(t, "yaml", head+tt.src, tt.want)
		})
	}
}

// TestPairReviewRulesHCL checks the HCL forms of the rules' positions.
func TestPairReviewRulesHCL(t *testing.T) {
	checkDiags(t, "hcl", `name = "x"
step "code_review" {
  run = "a"
}
step "r" {
  run = "x"
  gate {
    reviewers = ["code_review", "code_reveiw"]
    consensus = "most"
  }
}
step "s" {
  needs = ["r"]
  gate {
    reviewers = ["r"]
  }
}
`, []loopDiag{
		{6, 9, `step "r" decides from its reviewers: run belongs on a reviewer`},
		{8, 33, `gate.reviewers: unknown step "code_reveiw" (did you mean "code_review"?)`},
		{9, 17, `gate.consensus: unknown consensus "most" (want all, any or majority)`},
		{15, 5, `gate.reviewers: step "s" names 1 distinct reviewer; a pair review needs at least 2`},
		{15, 18, `gate.reviewers: "r" is a consensus step; a reviewer runs a session that ends with a verdict`},
	})
}
