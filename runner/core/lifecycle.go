package core

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flow-run/flow/internal/redact"
	"github.com/flow-run/flow/internal/suggest"
)

// This file is a run's lifecycle — opening a new run, taking one over,
// restarting it at a step, retrying its failed steps, raising its
// budget — written once for every driver (docs/architecture.md, "The
// lifecycle"). A driver finds out what it can only find out itself (is
// there a recorded run, is its holder alive, what paths does the
// record use) and asks Open for the rest: the refusals, and the events
// that open the run, in order.

// Shape is what the lifecycle knows of a workflow: its steps and how
// they depend on each other. A loaded workflow (config.Workflow) is one.
type Shape interface {
	// TopSteps lists the steps of the top level, in file order.
	TopSteps() []string
	// BodySteps lists the steps of loop's body in order, or nil when
	// loop is no loop step of the top level.
	BodySteps(loop string) []string
	// StepLoop returns the loop whose body holds step ("" for a step of
	// the top level); ok is false when the workflow has no such step.
	StepLoop(step string) (loop string, ok bool)
	// Downstream lists the steps of the top level that depend on step,
	// directly or not, in file order.
	Downstream(step string) []string
	// BodyDownstream lists the steps of loop's body that depend on
	// step, directly or not, in body order.
	BodyDownstream(loop, step string) []string
	// LoopTarget returns the step a failed gate of step loops back to,
	// or "" when it has none.
	LoopTarget(step string) string
}

// Opening is how a driver asks to open a run: what it found, and what
// it was asked to do.
type Opening struct {
	Now time.Time
	// State is the run's recorded state (replayed from its event log),
	// or nil for a new run. Open records on it.
	State *State
	// Created is the run_created record of a new run; StartAt and
	// Skipped are filled in by Open.
	Created RunCreated
	// Digest and Vars are the workflow's digest and the run's vars
	// under it: a recorded run's are compared with them, and the
	// differences recorded (Reconcile).
	Digest string
	Vars   map[string]string
	// Note, when set, is recorded as a warning once the workflow is
	// reconciled (a run moved to another worker says so).
	Note string
	// Runner is the runner that takes the run.
	Runner RunnerStarted
	// StartAt restarts the run at a step (a new run skips the steps
	// before it); Retry runs a failed run's failed steps again.
	StartAt StepKey
	Retry   bool
	// MaxIterations, with ForceMaxIterations, lets a retry run steps
	// that failed at their iteration budget with a higher one.
	MaxIterations      int
	ForceMaxIterations bool
	// Raise raises the run's cost, token and session budgets.
	Raise Budget
	// Secrets, when set, hides secret values in the events' data.
	Secrets *redact.Redactor
}

// CheckReopen returns the refusal, if any, of opening the recorded run
// st as o asks: a finished run is not resumed (only restarted at a
// step), only a failed run is retried, and a retry of a step that ran
// out of iterations needs a higher budget. Drivers that must refuse
// before anything is locked or started (a Temporal client) call it
// alone; Open calls it too.
func CheckReopen(sh Shape, st *State, o Opening) error {
	if !o.StartAt.IsZero() {
		return nil
	}
	if o.Retry {
		if st.Status != RunFailed {
			return Refuse("run %s is %s, not failed: flow retry re-runs the failed steps of a failed run", st.RunID, st.Status)
		}
		if p := PlanRetry(sh, st); len(p.Capped) > 0 && (o.MaxIterations == 0 || !o.ForceMaxIterations) {
			return Invalid("%s failed at %s iteration budget; retry with a higher one: flow retry %s --max-iterations N",
				strings.Join(KeyStrings(p.Capped), ", "), plural(len(p.Capped), "its", "their"), st.RunID)
		}
		return nil
	}
	if st.Status == RunFailed {
		return Refuse("run %s has already failed (exit %d); to run its failed steps again: flow retry %s; or from a step: flow run %s --start-at-step STEP",
			st.RunID, st.ExitCode, st.RunID, st.WorkflowFile)
	}
	if st.Status.Terminal() {
		return Refuse("run %s has already %s (exit %d); to run steps again: flow run %s --start-at-step STEP",
			st.RunID, st.Status, st.ExitCode, st.WorkflowFile)
	}
	return nil
}

// Open returns the events that open a run, applied to o.State (or, for
// a new run, to a new state it returns) in order: run_created for a new
// run, or for a recorded one the reconciliation of its edited workflow;
// then runner_started, the restart at a step, the retry and the raised
// budget. It refuses what CheckReopen refuses and a start at a step the
// workflow or the run does not have.
func Open(sh Shape, o Opening) (*State, []Event, error) {
	st := o.State
	if st == nil {
		st = &State{}
	}
	var evs []Event
	add := o.recorder(st, &evs)
	if o.State == nil {
		rc := o.Created
		if !o.StartAt.IsZero() {
			if _, ok := sh.StepLoop(o.StartAt.Step); !ok || o.StartAt.IsInstance() {
				return nil, nil, Invalid("--start-at-step: %v", unknownStep(sh, o.StartAt.String()))
			}
			rc.StartAt = o.StartAt
			rc.Skipped = StartAtSkipped(sh, o.StartAt.Step, rc.Steps)
		}
		add(EvRunCreated, StepKey{}, rc)
	} else {
		if err := CheckReopen(sh, st, o); err != nil {
			return nil, nil, err
		}
		evs = append(evs, Reconcile(sh, o)...)
	}
	if o.Note != "" {
		add(EvWarning, StepKey{}, Note{Message: o.Note})
	}
	rs := o.Runner
	if o.State != nil && interrupted(st) {
		rs.Generation = st.Generation + 1
	}
	add(EvRunnerStarted, StepKey{}, rs)
	if o.State != nil && !o.StartAt.IsZero() {
		reset, err := StartAtReset(sh, st, o.StartAt)
		if err != nil {
			return nil, nil, Invalid("--start-at-step: %v", err)
		}
		add(EvStartAt, o.StartAt, StartAt{Step: o.StartAt, Reset: reset, Budgets: targetsOf(ReopenedLoops(sh, st, reset, false))})
	}
	if o.State != nil && o.Retry && st.Status == RunFailed {
		p := PlanRetry(sh, st)
		r := Retry{Failed: p.Failed, Reset: p.Reset, Budgets: targetsOf(p.Budgets)}
		if o.ForceMaxIterations {
			r.MaxIterations = o.MaxIterations
		}
		add(EvRetry, StepKey{}, r)
	}
	if o.Raise.Set() {
		add(EvBudgetRaised, StepKey{}, o.Raise)
	}
	return st, evs, nil
}

// interrupted reports whether a session of run st was cut short by an
// interruption and has not run again: its attempt kept its number, so
// the session that runs it again is named in a new generation.
func interrupted(st *State) bool {
	for _, id := range st.StepOrder {
		if s := st.Steps[id]; s != nil && s.Status == Pending && deref(s.LastError) == InterruptedNote {
			return true
		}
	}
	return false
}

// RunVars returns the vars of run st under a workflow whose file
// declares fileVars: the file's,
// with the run's --var overrides winning. A run recorded before
// overrides were recorded apart keeps the values it has.
func RunVars(fileVars map[string]string, st *State) map[string]string {
	vars := maps.Clone(fileVars)
	if vars == nil {
		vars = map[string]string{}
	}
	over := st.VarOverrides
	if over == nil {
		over = st.Vars // recorded before overrides were kept apart
	}
	for k, v := range over {
		if _, ok := fileVars[k]; ok {
			vars[k] = v
		}
	}
	return vars
}

// recorder returns a function that records an event at o.Now on st,
// secrets hidden, and appends it to evs.
func (o Opening) recorder(st *State, evs *[]Event) func(typ string, step StepKey, data any) {
	return func(typ string, step StepKey, data any) {
		e := NewEvent(o.Now, typ, step, data)
		if o.Secrets != nil {
			e.Data = o.Secrets.Bytes(e.Data)
		}
		if err := Apply(st, e); err != nil {
			panic(fmt.Sprintf("apply %s: %v", typ, err)) // events built here always apply
		}
		*evs = append(*evs, e)
	}
}

// Reconcile records on o.State how the run's workflow changed to sh
// (digest o.Digest, vars o.Vars) since it last ran: the steps (and loop
// instances not yet started) added and those removed, the new digest,
// order and vars. It returns those events, already applied, in order.
func Reconcile(sh Shape, o Opening) []Event {
	st, digest, vars := o.State, o.Digest, o.Vars
	var evs []Event
	add := o.recorder(st, &evs)
	// from is read before any event is applied: applying them changes it.
	from, order := st.WorkflowDigest, slices.Clone(st.StepOrder)
	ids := instanceOrder(sh, st, order)
	for _, id := range ids {
		if st.Steps[id] == nil {
			add(EvStepAdded, id, nil)
		}
	}
	same := slices.Equal(ids, order)
	if !same {
		kept := setOf(ids)
		for _, id := range order {
			if !kept[id] {
				add(EvStepRemoved, id, Note{Message: "the workflow no longer has this step"})
			}
		}
	}
	if digest != from || !same || !maps.Equal(vars, st.Vars) {
		wc := WorkflowChanged{From: from, To: digest, Order: ids}
		if !maps.Equal(vars, st.Vars) {
			wc.Vars = vars
		}
		add(EvWorkflowChanged, StepKey{}, wc)
	}
	return evs
}

// instanceOrder lists the steps and instances of a run of workflow sh
// in order: the top level's steps, each loop followed by its instances.
// Started and finished items keep their instances; items not yet
// started take the body as it is now; items a new evaluation of the
// list removed stay in the record.
func instanceOrder(sh Shape, st *State, order []StepKey) []StepKey {
	top := sh.TopSteps()
	out := make([]StepKey, 0, len(order))
	for _, id := range top {
		out = append(out, Key(id))
		body := sh.BodySteps(id)
		ls := st.Steps[Key(id)]
		if body == nil || ls == nil || ls.LoopIndex == nil {
			continue
		}
		byItem := map[string][]StepKey{}
		var items []string
		for _, k := range instancesOf(st, id) {
			if _, seen := byItem[k.Item]; !seen {
				items = append(items, k.Item)
			}
			byItem[k.Item] = append(byItem[k.Item], k)
		}
		listed := map[string]bool{}
		for _, it := range ls.Items {
			listed[it.Key] = true
			if it.Status != Pending {
				out = append(out, byItem[it.Key]...)
				continue
			}
			for _, b := range body {
				out = append(out, Instance(id, it.Key, b))
			}
		}
		for _, item := range items {
			if !listed[item] {
				out = append(out, byItem[item]...)
			}
		}
	}
	return out
}

// StartAtSkipped lists, in their order, the steps of a new run started
// at step (flow run --start-at-step) that do not run: those that are
// neither step nor downstream of it.
func StartAtSkipped(sh Shape, step string, steps []StepKey) []StepKey {
	rerun := setOf(sh.Downstream(step))
	rerun[step] = true
	var skipped []StepKey
	for _, id := range steps {
		if id.IsInstance() || !rerun[id.Step] {
			skipped = append(skipped, id)
		}
	}
	return skipped
}

// StartAtReset lists the steps and instances a restart at step resets,
// in the order the run records them: step and what depends on it, with
// every instance of a loop among them; for an instance, what follows it
// in its item and what follows its loop.
func StartAtReset(sh Shape, st *State, k StepKey) ([]StepKey, error) {
	step, inst := k.String(), k.IsInstance()
	var top []string
	var out []StepKey
	loop, known := sh.StepLoop(k.Step)
	switch {
	case !inst && known && loop != "":
		return nil, fmt.Errorf("%q is a step of the body of loop %q: start at %s to run all its items again, or at %s[KEY].%s for one item", step, loop, loop, loop, step)
	case !inst && known:
		top = append([]string{k.Step}, sh.Downstream(k.Step)...)
	case inst:
		if st == nil || st.Steps[k] == nil {
			msg := fmt.Sprintf("the run has no instance %s (its loop's items are recorded when the loop starts)", step)
			if st != nil {
				if c, ok := suggest.Closest(step, KeyStrings(st.StepOrder)); ok {
					msg += fmt.Sprintf("; did you mean %s?", ShellArg(c))
				}
			}
			return nil, errors.New(msg)
		}
		out = append(out, k)
		for _, d := range sh.BodyDownstream(k.Loop, k.Step) {
			if id := Instance(k.Loop, k.Item, d); st.Steps[id] != nil {
				out = append(out, id)
			}
		}
		top = sh.Downstream(k.Loop)
	default:
		return nil, unknownStep(sh, step)
	}
	for _, id := range top {
		out = append(out, Key(id))
	}
	if st != nil {
		for _, id := range top {
			if sh.BodySteps(id) != nil {
				out = append(out, instancesOf(st, id)...)
			}
		}
	}
	return out, nil
}

// unknownStep is the error of a step the workflow does not have.
func unknownStep(sh Shape, step string) error {
	if c, ok := suggest.Closest(step, sh.TopSteps()); ok {
		return fmt.Errorf("unknown step %q (did you mean %q?)", step, c)
	}
	return fmt.Errorf("unknown step %q", step)
}

// RetryPlan says what flow retry will do to a failed run (GitHub
// Actions' "re-run failed jobs", Argo's retry): every FAILED step, and
// every step that depends on one, goes back to PENDING with fresh
// attempts and its iterations kept; everything else is kept.
type RetryPlan struct {
	// Failed are the steps that failed; Rerun every step that runs
	// again (put back to PENDING) or runs for the first time (never
	// started), in workflow order; Kept the finished steps kept as they
	// are.
	Failed []StepKey `json:"failed"`
	Rerun  []StepKey `json:"rerun"`
	// Reset are the steps of Rerun that go back to PENDING: Rerun
	// without those that never started.
	Reset []StepKey `json:"-"`
	Kept  []StepKey `json:"kept"`
	// Capped are the failed steps that failed at an iteration budget:
	// they run again only with a higher one (flow retry --max-iterations).
	Capped []StepKey `json:"capped,omitempty"`
	// Budgets are the loops the retry reopens, whose iteration budgets
	// start afresh (ReopenedLoops).
	Budgets []LoopBudget `json:"budgets,omitempty"`
}

// PlanRetry computes the plan of retrying the failed run st of sh.
func PlanRetry(sh Shape, st *State) RetryPlan {
	p := RetryPlan{Failed: []StepKey{}, Rerun: []StepKey{}, Kept: []StepKey{}}
	rerun := map[StepKey]bool{}
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		if s == nil || s.Status != Failed {
			continue
		}
		p.Failed = append(p.Failed, id)
		if strings.HasPrefix(deref(s.LastError), "max iterations reached") {
			p.Capped = append(p.Capped, id)
		}
		rerun[id] = true
		top := id.Step
		if id.IsInstance() {
			// An instance runs again with what follows it in its item,
			// and its loop with what follows the loop.
			for _, d := range sh.BodyDownstream(id.Loop, id.Step) {
				rerun[Instance(id.Loop, id.Item, d)] = true
			}
			top = id.Loop
		}
		if loop, ok := sh.StepLoop(top); ok && loop == "" {
			for _, d := range sh.Downstream(top) {
				rerun[Key(d)] = true
			}
		}
	}
	for _, id := range st.StepOrder {
		switch {
		case rerun[id]:
			p.Rerun = append(p.Rerun, id)
			p.Reset = append(p.Reset, id)
		case st.Steps[id] != nil && st.Steps[id].Status == Pending:
			// Never started (after a failed step, or a failed item): it
			// runs as it would have.
			p.Rerun = append(p.Rerun, id)
		case st.Steps[id] != nil && st.Steps[id].Status.Done():
			p.Kept = append(p.Kept, id)
		}
	}
	slices.SortFunc(p.Capped, CompareKeys)
	p.Budgets = ReopenedLoops(sh, st, p.Reset, true)
	return p
}

// instancesOf lists the instances of a loop that st records, in its
// order.
func instancesOf(st *State, loop string) []StepKey {
	var out []StepKey
	for _, id := range st.StepOrder {
		if id.Loop == loop {
			out = append(out, id)
		}
	}
	return out
}

// setOf returns the set of ids.
func setOf[K comparable](ids []K) map[K]bool {
	set := make(map[K]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// ShellArg returns s as one argument of a command line a person copies
// into a shell: as it is when it holds nothing a shell would expand or
// split, else in single quotes ('stories[login].review': [...] is a glob).
func ShellArg(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
