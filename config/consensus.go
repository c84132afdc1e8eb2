package config

import (
	"fmt"
	"slices"
)

// A pair review (docs/concepts.md, "Pair review") is a step whose gate names reviewers: steps
// of its scope, each ending with a verdict, whose verdicts the step
// decides from by its consensus rule. The step runs no session of its
// own (KindConsensus); without needs it needs its reviewers. Its gate's
// pass, fail and check, when given, are evaluated once the consensus
// passes. The rules that make a pair review hang together are checked
// here.

// consensusStep checks a step whose gate has reviewers: it runs no
// session, so the keys of a session belong on a reviewer.
func (b *builder) consensusStep(s *Step, rs *rawStep) {
	s.Kind, s.Feedback = KindConsensus, ""
	type key struct {
		name string
		set  bool
		pos  func() Pos
	}
	for _, k := range []key{
		{"feedback", rs.feedback.set, rs.feedback.pos},
		{"run", rs.run.set, rs.run.pos},
		{"prompt", rs.prompt.set, rs.prompt.pos},
		{"prompt_file", rs.promptFile.set, rs.promptFile.pos},
		{"agent", rs.agent.set, rs.agent.pos},
		{"human", rs.human != nil, func() Pos { return rs.human.pos }},
		{"max_attempts", rs.maxAttempts.set, rs.maxAttempts.pos},
		{"retry", rs.retry != nil, func() Pos { return rs.retry.pos }},
		{"retry_if", rs.retryIf.set, rs.retryIf.pos},
		{"idle_timeout", rs.idleTimeout.set, rs.idleTimeout.pos},
		{"budget", rs.budget != nil, func() Pos { return rs.budget.pos }},
	} {
		if k.set {
			b.d.errorf(k.pos(), "step %q decides from its reviewers: %s belongs on a reviewer", s.ID, k.name)
		}
	}
}

// consensus reads the consensus rule of a gate, and keeps its reviewers
// as written for reviewers to resolve.
func (b *builder) consensus(s *Step, g *Gate, rg *rawGate) {
	c := rg.consensus
	if !rg.reviewersSet {
		if c.set {
			b.d.errorf(c.pos(), "gate.consensus: step %q has no gate.reviewers; only a pair review has a consensus", s.ID)
		}
		return
	}
	g.Consensus, g.ReviewersPos = ConsensusAll, rg.reviewersPos
	// The consensus is the whole decision: an expression or a check
	// belongs on a reviewer's own gate.
	for _, k := range []struct {
		name string
		v    str
	}{{"pass", rg.pass}, {"fail", rg.fail}, {"check", rg.check}} {
		if k.v.set {
			b.d.errorf(k.v.pos(), "gate.%s: step %q decides by its reviewers' consensus; put gate.%s on a reviewer", k.name, s.ID, k.name)
		}
	}
	b.rawReviewers[s] = rg.reviewers
	if !c.ok() {
		return
	}
	if slices.Contains(Consensuses, c.val) {
		g.Consensus = c.val
		return
	}
	b.d.unknown(c.pos(), "consensus", c.val, Consensuses)
	d := &b.d.list[len(b.d.list)-1]
	d.Message = "gate.consensus: " + d.Message + " (want all, any or majority)"
}

// reviewers resolves the reviewers of every consensus step: at least two
// distinct steps of its scope (the top level, or the same loop's body),
// not the step itself, each running a session and reviewing for no other
// gate. It runs before needs, which gives a consensus step without needs
// its reviewers.
func (b *builder) reviewers() {
	w := b.w
	w.reviewerOf = map[string]*Step{}
	// scopes lists the ids of the steps of each scope, by the id of its
	// loop ("" for the top level): the candidates of did-you-mean.
	scopes := map[string][]string{}
	for _, s := range w.AllSteps() {
		scopes[s.Loop] = append(scopes[s.Loop], s.ID)
	}
	for _, s := range w.AllSteps() {
		if s.Kind != KindConsensus || s.Gate == nil {
			continue
		}
		scope := slices.DeleteFunc(slices.Clone(scopes[s.Loop]), func(id string) bool { return id == s.ID })
		seen := map[string]bool{}
		for _, r := range b.rawReviewers[s] {
			if r.bad {
				continue
			}
			if seen[r.val] {
				b.d.errorf(r.pos(), "gate.reviewers: %q is listed twice", r.val)
				continue
			}
			seen[r.val] = true
			rs := w.Step(r.val)
			switch {
			case r.val == s.ID:
				b.d.errorf(r.pos(), "gate.reviewers: step %q cannot review itself", s.ID)
			case rs == nil:
				b.d.unknown(r.pos(), "step", r.val, scope)
				b.d.list[len(b.d.list)-1].Message = "gate.reviewers: " + b.d.list[len(b.d.list)-1].Message
			case rs.Loop != s.Loop:
				b.d.errorf(r.pos(), "gate.reviewers: %q is %s and %q is %s; a reviewer is a step of its gate's scope, the top level or the same loop's body", r.val, scopeOf(rs), s.ID, scopeOf(s))
			case rs.Kind == KindLoop || rs.Kind == KindHuman || rs.Kind == KindConsensus:
				b.d.errorf(r.pos(), "gate.reviewers: %q is a %s step; a reviewer runs a session that ends with a verdict", r.val, rs.Kind)
			case w.reviewerOf[r.val] != nil:
				b.d.errorf(r.pos(), "gate.reviewers: %q already reviews for %q; a step reviews for one pair review", r.val, w.reviewerOf[r.val].ID)
			default:
				s.Gate.Reviewers = append(s.Gate.Reviewers, r.val)
				w.reviewerOf[r.val] = s
			}
		}
		if n := len(seen); n < 2 {
			b.d.errorf(s.Gate.ReviewersPos, "gate.reviewers: step %q names %d distinct %s; a pair review needs at least 2", s.ID, n, plural(n, "reviewer", "reviewers"))
		}
	}
}

// needsReviewers checks that a consensus step that writes its needs
// needs every reviewer, whose verdicts it decides from.
func (b *builder) needsReviewers(s *Step) {
	if s.Kind != KindConsensus || s.Gate == nil {
		return
	}
	for _, r := range s.Gate.Reviewers {
		if !slices.Contains(s.Needs, r) {
			b.d.errorf(s.NeedsPos(), "needs: step %q does not need its reviewer %q; a pair review needs every reviewer (leave needs out to need just them)", s.ID, r)
		}
	}
}

// scopeOf says where a step is, for messages.
func scopeOf(s *Step) string {
	if s.Loop == "" {
		return "a step of the top level"
	}
	return fmt.Sprintf("a step of the body of loop %q", s.Loop)
}

// ReviewerOf returns the consensus step whose gate names the step with
// the id as a reviewer, or nil. A reviewer's FAIL verdict is its pair
// review's to weigh: it does not fail the reviewer's own session.
func (w *Workflow) ReviewerOf(id string) *Step {
	if w.reviewerOf != nil {
		return w.reviewerOf[id]
	}
	for _, s := range w.AllSteps() {
		if s.Kind == KindConsensus && s.Gate != nil && slices.Contains(s.Gate.Reviewers, id) {
			return s
		}
	}
	return nil
}
