package core

import (
	"fmt"
	"time"
)

// Kind is what a step does.
type Kind string

// The step kinds (the workflow's).
const (
	KindCommand Kind = "command"
	KindAgent   Kind = "agent"
	KindHuman   Kind = "human"
)

// Plan is what the decision core needs to know of a workflow: each
// step's dependencies, loop-back target and resolved budgets. The driver
// builds it from the workflow, with every budget expression already
// evaluated, so that the core never evaluates anything.
type Plan struct {
	Steps       []PlanStep
	MaxParallel int
	index       map[string]int
	// dependents lists, for each step, the steps that need it directly.
	dependents [][]int
	// down holds the Downstream sets computed so far.
	down map[string][]string
}

// PlanStep is one step of a Plan.
type PlanStep struct {
	ID    string
	Kind  Kind
	Needs []string
	// LoopTarget is the step a failed gate (or a rejected human step)
	// loops back to, or "".
	LoopTarget string
	// HasGate is true when the step has a gate: gate:, or loop_back_to
	// on the step itself. A FAIL verdict then fails the gate, not the
	// session, and the gate decides after a session that succeeded.
	HasGate bool
	// SignalsDecide is true for a command step of a workflow that
	// declares signals:, whose FAIL verdict then fails a session as an
	// agent's does (a command step is otherwise decided by its exit
	// code).
	SignalsDecide bool
	// Conditional is true when the step has a when, or an auto_approve,
	// that the driver evaluates before the step starts.
	Conditional   bool
	MaxAttempts   int
	MaxIterations int
	Backoff       time.Duration
	MaxBackoff    time.Duration
}

// NewPlan indexes steps (in workflow order, each with its budgets
// resolved) for the core: who needs whom, and which steps a loop-back
// to each target resets. It fails on a need or loop-back target that is
// not a step of the plan.
func NewPlan(steps []PlanStep, maxParallel int) (*Plan, error) {
	p := &Plan{Steps: steps, MaxParallel: max(maxParallel, 1), index: make(map[string]int, len(steps))}
	for i, s := range steps {
		if _, dup := p.index[s.ID]; dup {
			return nil, fmt.Errorf("plan: step %s twice", s.ID)
		}
		p.index[s.ID] = i
	}
	p.dependents = make([][]int, len(p.Steps))
	for i, s := range p.Steps {
		for _, n := range s.Needs {
			j, ok := p.index[n]
			if !ok {
				return nil, fmt.Errorf("plan: step %s needs %s, which is not a step", s.ID, n)
			}
			p.dependents[j] = append(p.dependents[j], i)
		}
	}
	for _, s := range p.Steps {
		if s.LoopTarget == "" {
			continue
		}
		if p.Step(s.LoopTarget) == nil {
			return nil, fmt.Errorf("plan: step %s loops back to %s, which is not a step", s.ID, s.LoopTarget)
		}
	}
	return p, nil
}

// Downstream lists the steps that depend on step id, transitively, in
// plan order: what a loop-back to id resets. It is computed when a
// loop-back first needs it, and kept, so that a plan whose every step
// loops back costs nothing until loop-backs happen, and each target's
// set is built once.
func (p *Plan) Downstream(id string) []string {
	if d, ok := p.down[id]; ok {
		return d
	}
	i, ok := p.index[id]
	if !ok {
		return nil
	}
	if p.down == nil {
		p.down = map[string][]string{}
	}
	d := p.downstream(i)
	p.down[id] = d
	return d
}

// downstream lists the steps that depend on step i, transitively, in
// plan order.
func (p *Plan) downstream(i int) []string {
	seen := make([]bool, len(p.Steps))
	stack := []int{i}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range p.dependents[j] {
			if !seen[d] {
				seen[d] = true
				stack = append(stack, d)
			}
		}
	}
	out := []string{}
	for j, ok := range seen {
		if ok && j != i {
			out = append(out, p.Steps[j].ID)
		}
	}
	return out
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
