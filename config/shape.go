package config

// These methods make a loaded workflow the shape a run's lifecycle
// plans restarts and retries over (core.Shape).

// TopSteps lists the ids of the top level's steps, in file order.
func (w *Workflow) TopSteps() []string {
	ids := make([]string, len(w.Steps))
	for i, s := range w.Steps {
		ids[i] = s.ID
	}
	return ids
}

// BodySteps lists the ids of loop's body steps in order, or nil when
// loop is no loop step.
func (w *Workflow) BodySteps(loop string) []string {
	l := w.Step(loop)
	if l == nil || l.ForEach == nil {
		return nil
	}
	ids := make([]string, len(l.ForEach.Body))
	for i, b := range l.ForEach.Body {
		ids[i] = b.ID
	}
	return ids
}

// StepLoop returns the loop whose body holds step, "" for a step of the
// top level; ok is false when the workflow has no such step.
func (w *Workflow) StepLoop(step string) (loop string, ok bool) {
	s := w.Step(step)
	if s == nil {
		return "", false
	}
	return s.Loop, true
}

// BodyDownstream lists the steps of loop's body that need step,
// directly or not, in body order.
func (w *Workflow) BodyDownstream(loop, step string) []string {
	l := w.Step(loop)
	if l == nil || l.ForEach == nil {
		return nil
	}
	reached := map[string]bool{step: true}
	var out []string
	for _, b := range l.ForEach.Body {
		for _, n := range b.Needs {
			if reached[n] && !reached[b.ID] {
				reached[b.ID] = true
				out = append(out, b.ID)
			}
		}
	}
	return out
}

// LoopTarget returns the step a failed gate (or a rejected human step)
// of step loops back to, or "" when it has no loop-back or the workflow
// no such step.
func (w *Workflow) LoopTarget(step string) string {
	s := w.Step(step)
	if s == nil {
		return ""
	}
	return s.LoopBack()
}
