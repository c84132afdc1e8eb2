package runner

import (
	"fmt"
	"time"

	"github.com/flow-run/flow/config"
)

// Plan is what the decision core needs to know of a workflow: each
// step's dependencies, loop-back target and resolved budgets. It is
// built from a config.Workflow by NewPlan, with every budget expression
// already evaluated, so that the core never evaluates anything.
type Plan struct {
	Steps       []PlanStep
	MaxParallel int
	index       map[string]int
	// dependents lists, for each step, the steps that need it directly.
	dependents [][]int
}

// PlanStep is one step of a Plan.
type PlanStep struct {
	ID    string
	Kind  config.StepKind
	Needs []string
	// LoopTarget is the step a failed gate (or a rejected human step)
	// loops back to, or "".
	LoopTarget string
	// HasGate is true when the step has a gate to evaluate.
	HasGate bool
	// Conditional is true when the step has a when, or an auto_approve,
	// that the driver evaluates before the step starts.
	Conditional   bool
	MaxAttempts   int
	MaxIterations int
	Backoff       time.Duration
	MaxBackoff    time.Duration
	// Downstream lists the steps that depend on this one, transitively,
	// in workflow order; it is filled in for loop-back targets only, the
	// steps a loop-back resets.
	Downstream []string
}

// Budgets overrides the workflow's default budgets (flow run
// --max-attempts, --max-iterations); zero keeps the workflow's.
type Budgets struct {
	MaxAttempts   int
	MaxIterations int
}

// LimitFunc resolves a budget expression to a number.
type LimitFunc func(l *config.Limit) (int, error)

// NewPlan resolves wf into a Plan. Budget expressions are evaluated with
// eval; steps' own budgets win over the overrides, which win over the
// workflow's defaults, which win over the seed defaults (2 and 4).
func NewPlan(wf *config.Workflow, over Budgets, eval LimitFunc) (*Plan, error) {
	p := &Plan{MaxParallel: max(wf.MaxParallel, 1), index: map[string]int{}}
	limit := func(what string, l *config.Limit) (int, error) {
		if l == nil {
			return 0, nil
		}
		if l.Expr == nil {
			return l.N, nil
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
	defAttempts, err := limit("defaults.max_attempts", wf.Defaults.MaxAttempts)
	if err != nil {
		return nil, err
	}
	defIter, err := limit("defaults.max_iterations", wf.Defaults.MaxIterations)
	if err != nil {
		return nil, err
	}
	for i, s := range wf.Steps {
		ps := PlanStep{ID: s.ID, Kind: s.Kind, Needs: s.Needs, LoopTarget: s.LoopBackTo,
			Conditional: s.When != nil || (s.Human != nil && s.Human.AutoApprove != nil)}
		a, err := limit("step "+s.ID+": max_attempts", s.MaxAttempts)
		if err != nil {
			return nil, err
		}
		it, err := limit("step "+s.ID+": max_iterations", s.MaxIterations)
		if err != nil {
			return nil, err
		}
		gateIt := 0
		if g := s.Gate; g != nil {
			ps.HasGate = true
			if g.LoopBackTo != "" {
				ps.LoopTarget = g.LoopBackTo
			}
			if gateIt, err = limit("step "+s.ID+": gate.max_iterations", g.MaxIterations); err != nil {
				return nil, err
			}
		}
		ps.MaxAttempts = pick(a, over.MaxAttempts, defAttempts, config.DefaultMaxAttempts)
		ps.MaxIterations = pick(gateIt, it, over.MaxIterations, defIter, config.DefaultMaxIterations)
		retry := s.Retry
		if retry == nil {
			retry = wf.Defaults.Retry
		}
		if retry != nil {
			ps.Backoff, ps.MaxBackoff = retry.Backoff, retry.MaxBackoff
		}
		p.Steps = append(p.Steps, ps)
		p.index[s.ID] = i
	}
	p.dependents = make([][]int, len(p.Steps))
	for i, s := range p.Steps {
		for _, n := range s.Needs {
			if j, ok := p.index[n]; ok {
				p.dependents[j] = append(p.dependents[j], i)
			}
		}
	}
	for _, s := range p.Steps {
		if t := p.Step(s.LoopTarget); t != nil && t.Downstream == nil {
			t.Downstream = wf.Downstream(t.ID)
		}
	}
	return p, nil
}

// Step returns the step with the given id, or nil.
func (p *Plan) Step(id string) *PlanStep {
	i, ok := p.index[id]
	if !ok {
		return nil
	}
	return &p.Steps[i]
}

// IDs returns the step ids in workflow order.
func (p *Plan) IDs() []string {
	ids := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		ids[i] = s.ID
	}
	return ids
}

// backoff returns the delay before attempt number next (2, 3, …):
// Backoff doubled for each earlier retry, capped at MaxBackoff.
func (s *PlanStep) backoff(next int) time.Duration {
	if s.Backoff <= 0 || next < 2 {
		return 0
	}
	d := s.Backoff
	for i := 2; i < next; i++ {
		d *= 2
		if s.MaxBackoff > 0 && d >= s.MaxBackoff {
			return s.MaxBackoff
		}
	}
	if s.MaxBackoff > 0 && d > s.MaxBackoff {
		d = s.MaxBackoff
	}
	return d
}
