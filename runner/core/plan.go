package core

import (
	"fmt"
	"slices"
	"time"
)

// Kind is what a step does.
type Kind string

// The step kinds (the workflow's).
const (
	KindCommand Kind = "command"
	KindAgent   Kind = "agent"
	KindHuman   Kind = "human"
	// KindLoop is a for_each step: it runs its body once per item.
	KindLoop Kind = "loop"
	// KindConsensus is a pair-review gate: it runs no session and
	// decides from its reviewers' verdicts.
	KindConsensus Kind = "consensus"
)

// Plan is what the decision core needs to know of a workflow: each
// step's dependencies, loop-back target and resolved budgets. The driver
// builds it from the workflow, with every budget expression already
// evaluated, so that the core never evaluates anything.
type Plan struct {
	Steps       []PlanStep
	MaxParallel int
	// Budget is the run's cost, token and session budget.
	Budget Budget
	// DailyCostUSD is the most every run of the repository may spend in
	// a UTC day, or 0 (Begin and SessionDone say what was spent).
	DailyCostUSD float64
	// ResumeItems makes a loop-back from an item of a loop resume at
	// that item (resume.go): agent_orchestrator's rule.
	ResumeItems bool
	// index maps a step's id to its place in Steps.
	index map[string]int
	// loops lists the indices of the loop steps.
	loops []int
	// deps lists, for each step, the steps that need it directly: those
	// of step i are deps[depStart[i]:depStart[i+1]] (see dependents).
	depStart []int32
	deps     []int32
	// down holds the Downstream sets computed so far.
	down map[string][]string
}

// PlanStep is one step of a Plan: how it runs, its loop-back and
// limits, and how its outcome is decided. What most steps leave unset
// (gates of the gate-state file, backoff, a budget, reviewers) is in
// Extra.
type PlanStep struct {
	ID    string
	Kind  Kind
	Needs []string
	// Extra holds the rest of the step's plan, or is nil when all of it
	// is unset.
	Extra *PlanExtra
	// LoopTarget is the step a failed gate (or a rejected human step)
	// loops back to, or "".
	LoopTarget string
	// Loop is, for a step of a loop's body, the id of its loop step; ""
	// for a step of the top level. A body step's Needs name steps of the
	// same body (this item's instances) or of the top level.
	Loop string
	// ForEach is set for a loop step (KindLoop): how its items run.
	ForEach       *PlanLoop
	MaxAttempts   int
	MaxIterations int
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
	Conditional bool
	// HumanAfter is true for a session step that also has human: once
	// its session succeeded and its gate passed, it waits on a human
	// (WAITING_ON_HUMAN) as a human step does, instead of completing.
	HumanAfter bool
	// Reviewer is true for a step a consensus step reviews with: its
	// verdict is the consensus step's to weigh, so FAIL does not fail
	// its session, and it runs beside the other reviewers whatever
	// max_parallel says.
	Reviewer bool
	// ReportDecides is true for a step of a workflow that follows
	// agent_orchestrator's contract: its report alone decides it, and
	// its gate fails only on the report's gate_failure (or a check,
	// pass or fail of its own); no verdict of its output counts.
	ReportDecides bool
}

// PlanExtra is the part of a PlanStep that most steps leave unset.
type PlanExtra struct {
	// Gates are the gates of the gate-state file that must be open
	// before the step starts.
	Gates []string
	// Backoff spaces out the step's attempts (doubled for each retry,
	// capped at MaxBackoff when that is set).
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Budget is the step's own budget: for a body step, all its
	// instances' together.
	Budget Budget
	// Reviewers and Consensus are a consensus step's reviewer steps and
	// rule (all, any or majority).
	Reviewers []string
	Consensus string
	// Worktree is set for a step with a worktree of its own: once its
	// session succeeded and its gate passed, its work is merged into
	// the run's workspace before it completes; a conflict fails its
	// gate.
	Worktree bool
}

// IsZero reports whether e sets nothing: a step whose Extra would be
// zero needs none.
func (e *PlanExtra) IsZero() bool {
	return e == nil || len(e.Gates) == 0 && e.Backoff == 0 && e.MaxBackoff == 0 && !e.Budget.set() &&
		e.Reviewers == nil && e.Consensus == "" && !e.Worktree
}

// gates returns the gates of the gate-state file the step waits for.
func (s *PlanStep) gates() []string {
	if s.Extra == nil {
		return nil
	}
	return s.Extra.Gates
}

// budget returns the step's own budget (zero: no limit).
func (s *PlanStep) budget() Budget {
	if s.Extra == nil {
		return Budget{}
	}
	return s.Extra.Budget
}

// worktree reports whether the step has a worktree of its own.
func (s *PlanStep) worktree() bool { return s.Extra != nil && s.Extra.Worktree }

// reviewers returns a consensus step's reviewers and rule.
func (s *PlanStep) reviewers() ([]string, string) {
	if s.Extra == nil {
		return nil, ""
	}
	return s.Extra.Reviewers, s.Extra.Consensus
}

// Budget is a cost, token or session budget (docs/agents.md): the run
// stops before its next session once what was used reaches a limit. A
// zero field has no limit.
type Budget struct {
	CostUSD  float64 `json:"cost_usd,omitempty"`
	Tokens   int64   `json:"tokens,omitempty"`
	Sessions int     `json:"sessions,omitempty"`
}

// Over returns b with o's limits where o sets them.
func (b Budget) Over(o Budget) Budget {
	if o.CostUSD > 0 {
		b.CostUSD = o.CostUSD
	}
	if o.Tokens > 0 {
		b.Tokens = o.Tokens
	}
	if o.Sessions > 0 {
		b.Sessions = o.Sessions
	}
	return b
}

// Lifted returns b with each limit that o sets raised to at least o's:
// a budget raised for the run is raised for its steps too.
func (b Budget) Lifted(o Budget) Budget {
	if b.CostUSD > 0 && o.CostUSD > b.CostUSD {
		b.CostUSD = o.CostUSD
	}
	if b.Tokens > 0 && o.Tokens > b.Tokens {
		b.Tokens = o.Tokens
	}
	if b.Sessions > 0 && o.Sessions > b.Sessions {
		b.Sessions = o.Sessions
	}
	return b
}

// spent says which limit of b what u used has reached, if any.
func (b Budget) spent(u *AgentUsage) (what string, limit, used float64, ok bool) {
	if u == nil {
		u = &AgentUsage{}
	}
	switch {
	case b.CostUSD > 0 && u.CostUSD >= b.CostUSD:
		return "cost_usd", b.CostUSD, u.CostUSD, true
	case b.Tokens > 0 && u.Tokens() >= b.Tokens:
		return "tokens", float64(b.Tokens), float64(u.Tokens()), true
	case b.Sessions > 0 && int(u.Sessions) >= b.Sessions:
		return "sessions", float64(b.Sessions), float64(u.Sessions), true
	}
	return "", 0, 0, false
}

// Set reports whether b has any limit.
func (b Budget) Set() bool { return b.set() }

// set reports whether b has any limit.
func (b Budget) set() bool { return b.CostUSD > 0 || b.Tokens > 0 || b.Sessions > 0 }

// PlanLoop is what the core needs to know of a loop step: its body and
// how its items run (docs/loops.md, "Scheduling and failure").
type PlanLoop struct {
	// Body lists the ids of the body's steps, in workflow order.
	Body []string
	// MaxParallel is how many items run at once (at least 1).
	MaxParallel int
	// ContinueOnError runs every item even when one fails.
	ContinueOnError bool
	// MaxItems is the most items the loop may have; OwnMaxItems is set
	// when it is the loop's own max_items rather than defaults.max_items.
	// The core alone refuses a longer list (a driver may stop reading
	// one at MaxItems+1 items).
	MaxItems    int
	OwnMaxItems bool
	// Merge is how the work of the items comes back when each has a
	// worktree of its own: MergeAuto or MergeNone; "" when the items
	// work in the run's workspace.
	Merge string
	// MergeLoopBack is the body step an item whose merge conflicts
	// re-enters, "" to fail it; MergeMaxIterations bounds those
	// loop-backs.
	MergeLoopBack      string
	MergeMaxIterations int
	// pos maps a body step's id to its place in Body.
	pos map[string]int
}

// NewPlan indexes steps (in workflow order, each with its budgets
// resolved) for the core: who needs whom, and which steps a loop-back
// to each target resets. It fails on a need or loop-back target that is
// not a step of the plan.
func NewPlan(steps []PlanStep, maxParallel int) (*Plan, error) {
	p := &Plan{Steps: steps, MaxParallel: max(maxParallel, 1), index: make(map[string]int, len(steps))}
	for i, s := range steps {
		if _, ok := p.index[s.ID]; ok {
			return nil, fmt.Errorf("plan: step %s twice", s.ID)
		}
		p.index[s.ID] = i
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.ForEach == nil {
			continue
		}
		if s.Loop != "" {
			return nil, fmt.Errorf("plan: loop %s is inside the body of %s: loops nest one level", s.ID, s.Loop)
		}
		p.loops = append(p.loops, i)
		s.ForEach.MaxParallel = max(s.ForEach.MaxParallel, 1)
		s.ForEach.pos = make(map[string]int, len(s.ForEach.Body))
		for j, b := range s.ForEach.Body {
			bs := p.Step(b)
			if bs == nil || bs.Loop != s.ID {
				return nil, fmt.Errorf("plan: loop %s: body step %s is not a step of its body", s.ID, b)
			}
			s.ForEach.pos[b] = j
		}
		if t := s.ForEach.MergeLoopBack; t != "" {
			if _, ok := s.ForEach.pos[t]; !ok {
				return nil, fmt.Errorf("plan: loop %s: merge loops back to %s, which is not a step of its body", s.ID, t)
			}
		}
	}
	// The dependents link each step to the steps that need it. A body
	// step's need of another body step links the two; its need of a
	// step of the top level links that step to the loop, so that the
	// top level's graph is the loop step's, and a body's its own. The
	// links are counted first, then laid out in one slice.
	link := func(i int, s *PlanStep, n string) (int, int, error) {
		j, ok := p.index[n]
		if !ok {
			return 0, 0, fmt.Errorf("plan: step %s needs %s, which is not a step", s.ID, n)
		}
		switch need := &p.Steps[j]; {
		case need.Loop == s.Loop:
			return j, i, nil
		case need.Loop == "":
			l := p.index[s.Loop]
			return j, l, nil
		default:
			return 0, 0, fmt.Errorf("plan: step %s needs %s, a step of the body of %s", s.ID, n, need.Loop)
		}
	}
	p.depStart = make([]int32, len(p.Steps)+1)
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Loop != "" {
			if l := p.Step(s.Loop); l == nil || l.ForEach == nil {
				return nil, fmt.Errorf("plan: step %s is in the body of %s, which is not a loop", s.ID, s.Loop)
			}
		}
		for _, n := range s.Needs {
			from, _, err := link(i, s, n)
			if err != nil {
				return nil, err
			}
			p.depStart[from+1]++
		}
	}
	for i := 1; i < len(p.depStart); i++ {
		p.depStart[i] += p.depStart[i-1]
	}
	p.deps = make([]int32, p.depStart[len(p.Steps)])
	next := slices.Clone(p.depStart[:len(p.Steps)])
	for i := range p.Steps {
		s := &p.Steps[i]
		for _, n := range s.Needs {
			from, to, _ := link(i, s, n)
			p.deps[next[from]] = int32(to)
			next[from]++
		}
	}
	for _, s := range p.Steps {
		if s.LoopTarget == "" {
			continue
		}
		t := p.Step(s.LoopTarget)
		if t == nil {
			return nil, fmt.Errorf("plan: step %s loops back to %s, which is not a step", s.ID, s.LoopTarget)
		}
		if t.Loop != "" && t.Loop != s.Loop {
			return nil, fmt.Errorf("plan: step %s loops back to %s, a step of the body of %s", s.ID, s.LoopTarget, t.Loop)
		}
	}
	return p, nil
}

// Downstream lists the steps that depend on step id, transitively, in
// plan order: what a loop-back to id resets. For a step of the top
// level they are steps of the top level (a loop step stands for its
// body); for a body step, steps of the same body. It is computed when a
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
		for _, d := range p.dependents(j) {
			if !seen[d] {
				seen[d] = true
				stack = append(stack, int(d))
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

// dependents lists the steps that need step i directly, in plan order.
func (p *Plan) dependents(i int) []int32 {
	return p.deps[p.depStart[i]:p.depStart[i+1]]
}

// Step returns the step with the given id, or nil.
func (p *Plan) Step(id string) *PlanStep {
	i, ok := p.index[id]
	if !ok {
		return nil
	}
	return &p.Steps[i]
}

// IDs returns the ids of the top level's steps in workflow order: the
// steps a run starts with (a loop's instances join the run when its
// items are known).
func (p *Plan) IDs() []string {
	ids := make([]string, 0, len(p.Steps))
	for _, s := range p.Steps {
		if s.Loop == "" {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// BodyIndex returns the place of body step id in its loop's body, or
// -1.
func (l *PlanLoop) BodyIndex(id string) int {
	if j, ok := l.pos[id]; ok {
		return j
	}
	return -1
}

// backoff returns the delay before attempt number next (2, 3, …):
// Backoff doubled for each earlier retry, capped at MaxBackoff.
func (s *PlanStep) backoff(next int) time.Duration {
	if s.Extra == nil || s.Extra.Backoff <= 0 || next < 2 {
		return 0
	}
	d, most := s.Extra.Backoff, s.Extra.MaxBackoff
	for i := 2; i < next; i++ {
		d *= 2
		if most > 0 && d >= most {
			return most
		}
	}
	if most > 0 && d > most {
		d = most
	}
	return d
}
