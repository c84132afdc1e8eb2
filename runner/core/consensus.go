package core

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Pair review (docs/concepts.md, "Pair review"): a consensus step runs no session; once its
// reviewers have run it weighs their verdicts by its rule, and passes,
// or fails its gate — looping back with every reviewer's verdict as the
// feedback.

// The consensus rules.
const (
	ConsensusAll      = "all"
	ConsensusAny      = "any"
	ConsensusMajority = "majority"
)

// Consensus returns the decision of rule over verdicts (in reviewer
// order): VerdictPass, VerdictFail, or "" — pending, when a verdict the
// rule needs is missing. MIXED counts as FAIL.
//   - all: PASS when every reviewer passed; any FAIL fails; otherwise
//     pending.
//   - any: PASS on one PASS and no FAIL; any FAIL fails; no PASS is
//     pending.
//   - majority: PASS when more reviewers passed than failed; otherwise
//     FAIL (a tie fails).
func Consensus(rule string, verdicts []string) string {
	pass, fail, none := 0, 0, 0
	for _, v := range verdicts {
		switch {
		case v == VerdictPass:
			pass++
		case failed(v):
			fail++
		default:
			none++
		}
	}
	switch rule {
	case ConsensusAny:
		switch {
		case fail > 0:
			return VerdictFail
		case pass > 0:
			return VerdictPass
		}
		return ""
	case ConsensusMajority:
		if pass > fail {
			return VerdictPass
		}
		return VerdictFail
	}
	switch {
	case fail > 0:
		return VerdictFail
	case none > 0:
		return ""
	}
	return VerdictPass
}

// reviewVerdict is one reviewer's verdict, as a consensus step's
// feedback reports it.
type reviewVerdict struct {
	Step    StepKey `json:"step"`
	Verdict string  `json:"verdict"`
}

// decideConsensus decides a consensus step that is ready: its reviewers
// have run.
func (c *Core) decideConsensus(x *decider, key StepKey, ps *PlanStep) {
	s := x.st.Steps[key]
	reviewers, rule := ps.reviewers()
	verdicts := make([]string, len(reviewers))
	var table []reviewVerdict
	var parts []string
	for i, r := range reviewers {
		id := Key(r)
		if key.IsInstance() {
			id = Instance(key.Loop, key.Item, r)
		}
		v := ""
		if rs := x.st.Steps[id]; rs != nil {
			v = rs.Verdict
		}
		verdicts[i] = v
		table = append(table, reviewVerdict{Step: id, Verdict: v})
		shown := v
		if shown == "" {
			shown = "no verdict"
		}
		parts = append(parts, id.String()+" "+shown)
	}
	if rule == "" {
		rule = ConsensusAll
	}
	decision := Consensus(rule, verdicts)
	c.rescan = true
	o := Outcome{Attempt: s.Attempts + 1, Verdict: decision}
	x.emit(EvStepStarted, key, StepStarted{Attempt: o.Attempt, Iteration: s.IterationCount})
	if decision == VerdictPass {
		x.emit(EvStepCompleted, key, o)
		return
	}
	if decision == "" {
		o.Verdict = "PENDING"
	}
	reason := fmt.Sprintf("consensus %s is %s: %s", rule, o.Verdict, strings.Join(parts, ", "))
	o.Report, _ = json.Marshal(map[string]any{"consensus": rule, "verdict": o.Verdict, "reviewers": table})
	c.gateFailure(x, key, reason, "", o)
}
