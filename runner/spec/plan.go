package spec

import (
	"fmt"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/gates"
	"github.com/flow-run/flow/runner/core"
)

// Budgets overrides the workflow's default budgets (flow run
// --max-attempts, --max-iterations); zero keeps the workflow's.
type Budgets struct {
	MaxAttempts   int
	MaxIterations int
	// ForceMaxIterations makes MaxIterations win over the steps' and
	// gates' own budgets too (flow retry --max-iterations).
	ForceMaxIterations bool
	// Raise raises the run's cost, token and session budgets (flow
	// resume --budget-cost ...): its limits win over the workflow's for
	// the run, and lift any step's that are lower.
	Raise core.Budget
	// DailyCostUSD is the repository's daily cost limit (the daily cost ledger of the local driver),
	// over the workflow's budget.daily_cost_usd; 0 leaves that.
	DailyCostUSD float64
}

// LimitFunc resolves a budget expression to a number.
type LimitFunc func(l *config.Limit) (int, error)

// NewPlan resolves wf into the core's Plan. Budget expressions are
// evaluated with eval; steps' own budgets win over the overrides, which
// win over the workflow's defaults, which win over agent_orchestrator's defaults (2
// and 4).
func NewPlan(wf *config.Workflow, over Budgets, eval LimitFunc) (*core.Plan, error) {
	steps := make([]core.PlanStep, 0, len(wf.Steps))
	// limit resolves the budget field of step (of the defaults when
	// step is ""); what it names is only spelt out for an error.
	limit := func(step, field string, l *config.Limit) (int, error) {
		if l == nil {
			return 0, nil
		}
		if l.Expr == nil {
			return l.N, nil
		}
		what := field
		if step != "" {
			what = "step " + step + ": " + field
		}
		n, err := eval(l)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
		if n < 1 {
			return 0, fmt.Errorf("%s: %q is %d; it must be at least 1", what, l.Expr.Src, n)
		}
		return n, nil
	}
	pick := func(vals ...int) int {
		for _, v := range vals {
			if v > 0 {
				return v
			}
		}
		return 0
	}
	defAttempts, err := limit("", "defaults.max_attempts", wf.Defaults.MaxAttempts)
	if err != nil {
		return nil, err
	}
	defIter, err := limit("", "defaults.max_iterations", wf.Defaults.MaxIterations)
	if err != nil {
		return nil, err
	}
	maxItems := wf.Limits().MaxItems
	for _, s := range wf.AllSteps() {
		ex := core.PlanExtra{Gates: s.Gates()}
		ps := core.PlanStep{ID: s.ID, Kind: core.Kind(s.Kind), Needs: s.Needs, LoopTarget: s.LoopBack(), HasGate: s.HasGate(), Loop: s.Loop,
			SignalsDecide: s.Kind == config.KindCommand && wf.Signals != defaultSignals,
			ReportDecides: wf.Compat == config.CompatOrchestrator,
			Conditional:   s.When != nil || (s.Kind == config.KindHuman && s.Human.AutoApprove != nil), HumanAfter: s.Human != nil && s.Kind != config.KindHuman}
		a, err := limit(s.ID, "max_attempts", s.MaxAttempts)
		if err != nil {
			return nil, err
		}
		it, err := limit(s.ID, "max_iterations", s.MaxIterations)
		if err != nil {
			return nil, err
		}
		gateIt := 0
		if g := s.Gate; g != nil {
			if gateIt, err = limit(s.ID, "gate.max_iterations", g.MaxIterations); err != nil {
				return nil, err
			}
		}
		ps.MaxAttempts = pick(a, over.MaxAttempts, defAttempts, config.DefaultMaxAttempts)
		ps.MaxIterations = pick(gateIt, it, over.MaxIterations, defIter, config.DefaultMaxIterations)
		if over.ForceMaxIterations && over.MaxIterations > 0 {
			ps.MaxIterations = over.MaxIterations
		}
		if retry := wf.StepRetry(s); retry != nil {
			ex.Backoff, ex.MaxBackoff = retry.Backoff, retry.MaxBackoff
		}
		if g := s.Gate; g != nil && len(g.Reviewers) > 0 {
			ex.Reviewers, ex.Consensus = g.Reviewers, g.Consensus
		}
		ps.Reviewer = wf.ReviewerOf(s.ID) != nil
		ex.Worktree = s.Loop == "" && s.ForEach == nil && s.Workspace.Worktree()
		if b := s.Budget; b != nil {
			ex.Budget = core.Budget{CostUSD: b.CostUSD, Tokens: b.Tokens, Sessions: b.Sessions}.Lifted(over.Raise)
		}
		if !ex.IsZero() {
			e := ex
			ps.Extra = &e
		}
		if fe := s.ForEach; fe != nil {
			pl := &core.PlanLoop{MaxParallel: fe.MaxParallel, ContinueOnError: fe.ContinueOnError, MaxItems: maxItems}
			if fe.MaxItems > 0 {
				pl.MaxItems, pl.OwnMaxItems = fe.MaxItems, true
			}
			for _, b := range fe.Body {
				pl.Body = append(pl.Body, b.ID)
			}
			if m := s.ItemMerge(); m != nil {
				pl.Merge, pl.MergeLoopBack = m.Mode, m.LoopBackTo
				if pl.MergeMaxIterations, err = limit(s.ID, "merge.max_iterations", m.MaxIterations); err != nil {
					return nil, err
				}
			}
			ps.ForEach = pl
		}
		steps = append(steps, ps)
	}
	plan, err := core.NewPlan(steps, wf.MaxParallel)
	if err != nil {
		return nil, err
	}
	if b := wf.Budget; b != nil {
		plan.Budget = core.Budget{CostUSD: b.CostUSD, Tokens: b.Tokens, Sessions: b.Sessions}
	}
	plan.Budget = plan.Budget.Over(over.Raise)
	if b := wf.Budget; b != nil {
		plan.DailyCostUSD = b.DailyCostUSD
	}
	if over.DailyCostUSD > 0 {
		plan.DailyCostUSD = over.DailyCostUSD
	}
	plan.ResumeItems = wf.Compat == config.CompatOrchestrator
	return plan, nil
}

// defaultSignals are the signal words of a workflow that declares none:
// a command step's verdict decides only when the workflow renames them.
var defaultSignals = config.Signals{Done: "DONE", Pass: "PASS", Fail: "FAIL"}

// NewPlanOf resolves wf into the core's plan as a new run of it with
// vars would: budget expressions see the vars and now, nothing of the
// machine (no files, no environment), so that a driver that must decide
// deterministically gets the same plan wherever it runs.
func NewPlanOf(wf *config.Workflow, over Budgets, vars map[string]string, now time.Time) (*core.Plan, error) {
	return NewPlan(wf, over, func(l *config.Limit) (int, error) {
		v, err := l.Expr.Program().Eval(&gates.Env{Vars: vars, Steps: map[string]gates.StepInfo{}, Env: map[string]string{}, Now: now})
		if err != nil {
			return 0, err
		}
		return gates.Int(v)
	})
}
