package config

// The Step* methods resolve what a step does not set itself: first the
// step, then the workflow's defaults, then agent_orchestrator's defaults (2 attempts, 4 iterations).

// StepMaxAttempts returns the number of sessions a step may use within
// one iteration.
func (w *Workflow) StepMaxAttempts(s *Step) Limit {
	switch {
	case s.MaxAttempts != nil:
		return *s.MaxAttempts
	case w.Defaults.MaxAttempts != nil:
		return *w.Defaults.MaxAttempts
	}
	return Limit{N: DefaultMaxAttempts}
}

// StepMaxIterations returns the loop-back budget of a step that loops
// back (by its gate or by loop_back_to): its gate's max_iterations, else
// its own, else the defaults'. The runner compares it with the loop-back
// target's iteration count.
func (w *Workflow) StepMaxIterations(s *Step) Limit {
	switch {
	case s.Gate != nil && s.Gate.MaxIterations != nil:
		return *s.Gate.MaxIterations
	case s.MaxIterations != nil:
		return *s.MaxIterations
	case w.Defaults.MaxIterations != nil:
		return *w.Defaults.MaxIterations
	}
	return Limit{N: DefaultMaxIterations}
}

// StepTimeout returns the wall-clock limit of one session of the step,
// or nil for none.
func (w *Workflow) StepTimeout(s *Step) *Duration {
	if s.Timeout != nil {
		return s.Timeout
	}
	return w.Defaults.Timeout
}

// StepIdleTimeout returns how long a session of the step may go without
// output before it is stuck, or nil for no limit.
func (w *Workflow) StepIdleTimeout(s *Step) *Duration {
	if s.IdleTimeout != nil {
		return s.IdleTimeout
	}
	return w.Defaults.IdleTimeout
}

// StepRetry returns how a step's attempts are spaced out, or nil to retry
// at once.
func (w *Workflow) StepRetry(s *Step) *Retry {
	if s.Retry != nil {
		return s.Retry
	}
	return w.Defaults.Retry
}

// LoopBack returns the step a step loops back to when its gate fails (or
// its report says gate_failure), or "": gate.loop_back_to, else the
// step's own loop_back_to (a loaded workflow never has both). It is the
// one place that rule is written; read it rather than the two fields.
func (s *Step) LoopBack() string {
	if s.Gate != nil && s.Gate.LoopBackTo != "" {
		return s.Gate.LoopBackTo
	}
	return s.LoopBackTo()
}

// HasGate reports whether a step's work is decided by a gate after its
// session succeeded: it has a gate block, or a loop_back_to of its own,
// whose gate is the session's report (docs/architecture.md, "Gate decisions").
func (s *Step) HasGate() bool {
	return s.Gate != nil || s.LoopBackTo() != ""
}
