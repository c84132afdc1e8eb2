package core

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flow-run/flow/internal/redact"
)

// Core is flow's decision core: given the run state and an input (a
// session finished, a human decided, a timer fired, control changed),
// it records what happened as events, applies them to the state, and
// returns the effects the driver must perform (start a session, wait
// for a human, start a timer, finish). It performs no I/O, reads no
// clock and starts no goroutine, so that tests drive it with scripted
// inputs and another driver can replay it deterministically.
//
// Core keeps a little bookkeeping that is not part of the durable
// record: which steps are being evaluated or waiting for a retry timer,
// and whether the run is stopping. After a restart it is rebuilt from
// the state by Begin.
type Core struct {
	plan *Plan
	// dailySpent is what the runs of the repository spent today, as the
	// driver last said.
	dailySpent float64
	// gates are the gates of the gate-state file and whether each is
	// open; gated maps each ready step kept back by closed gates to
	// them (gates.go).
	gates map[string]bool
	gated map[string][]string
	// evaluating holds steps whose when/auto_approve is being evaluated;
	// cleaning is true while the cleanup session runs;
	// preparing holds human steps whose wait the driver prepares;
	// waiting holds steps whose retry timer runs.
	evaluating map[StepKey]bool
	preparing  map[StepKey]bool
	waiting    map[StepKey]bool
	// expanding holds loop steps whose items the driver evaluates.
	expanding map[StepKey]bool
	// merging holds the scopes of items whose merge the driver makes;
	// mergeHeld those whose merge waits for the shared checkout until
	// MergeRetry; idleAtRetry is whether the run was idle when the
	// last MergeRetry came (a merge that still waits leaves it so).
	merging     map[string]bool
	mergeHeld   map[string]bool
	idleAtRetry bool
	// stepMerges holds, for a step with a worktree whose merge is in
	// flight or waits, the outcome of its session, recorded once the
	// merge is.
	stepMerges map[StepKey]Outcome
	cleaning   bool
	// halt is set when the run stops starting sessions: a step failed
	// (exit 1 or 5) or the runner was interrupted (130).
	haltCode   int
	haltReason string
	control    ControlState
	// onceUsed is true when run_once has started its one session, the
	// session of onceStep.
	onceUsed bool
	onceStep StepKey
	idle     bool
	finished bool
	// candidates marks the steps whose readiness may have changed since
	// the last schedule (plan indices); running counts the sessions in
	// flight. They keep scheduling proportional to what changed, not
	// to the size of the workflow.
	candidates []bool
	ncand      int
	running    int
	// instRunning counts the sessions of loops' instances in flight:
	// they do not count against the workflow's max_parallel.
	instRunning int
	// loops caches, per running loop step, its instances' keys.
	loops map[string]*loopRun
	// rescan is set when a consensus was decided in a scheduling pass.
	rescan bool
	// waiters maps a loop-back target off to the side of its gate step
	// to the gate steps waiting for it (their waiting_for), so that the
	// target's end makes them candidates. Rebuilt from the state by
	// Begin.
	waiters map[StepKey][]StepKey
	// approvals holds, for a session step with human: whose session
	// succeeded, that session's outcome until the driver has prepared
	// the wait (HumanReady); autoApproved marks such steps whose
	// auto_approve was true when they started.
	approvals    map[StepKey]Outcome
	autoApproved map[StepKey]bool
	// redact hides secret values in the data of every event the core
	// emits, before the event is applied: the state, built from the
	// events, never holds them either. It is a pure string replacement.
	redact *redact.Redactor
}

// ControlState is a desired or current state of control.json.
type ControlState string

// The control states of control.json, which keeps the fields and
// states of the agent_state.json control file (docs/operating-runs.md, "control.json tells the truth").
const (
	Continuous ControlState = "continuous"
	Pause      ControlState = "pause"
	RunOnce    ControlState = "run_once"
	RunCleanup ControlState = "run_cleanup"
)

// NewCore returns a core for plan.
func NewCore(plan *Plan) *Core {
	return &Core{plan: plan, evaluating: map[StepKey]bool{}, preparing: map[StepKey]bool{}, waiting: map[StepKey]bool{}, expanding: map[StepKey]bool{},
		merging: map[string]bool{}, mergeHeld: map[string]bool{}, stepMerges: map[StepKey]Outcome{},
		control: Continuous, candidates: make([]bool, len(plan.Steps)), loops: map[string]*loopRun{}, waiters: map[StepKey][]StepKey{},
		approvals: map[StepKey]Outcome{}, autoApproved: map[StepKey]bool{}}
}

// mark makes a step and the steps that need it candidates for the next
// schedule; for an instance, its loop step.
func (c *Core) mark(k StepKey) {
	id := k.Step
	if k.IsInstance() {
		id = k.Loop
	}
	i, ok := c.plan.index[id]
	if !ok {
		return
	}
	c.markIndex(i)
	for _, j := range c.plan.dependents(i) {
		c.markIndex(int(j))
	}
}

func (c *Core) markIndex(i int) {
	if !c.candidates[i] {
		c.candidates[i] = true
		c.ncand++
	}
}

func (c *Core) markAll() {
	for i := range c.candidates {
		c.markIndex(i)
	}
}

// Input is something that happened, given to Core.Decide.
type Input interface{ isInput() }

// Begin starts or resumes the run: a runner has taken it.
type Begin struct {
	// Control is the desired state of control.json when the run starts.
	Control ControlState
	// Gates are the gates of the gate-state file and whether each is
	// open, as the run starts.
	Gates map[string]bool
	// DailySpent is what the runs of the repository spent today (UTC),
	// as the run starts: the daily cost limit's measure.
	DailySpent float64
}

// WhenResult answers an Evaluate effect.
type WhenResult struct {
	Step StepKey
	// Run is false when the step's when is false: it is SKIPPED.
	Run    bool
	Reason string
	// AutoApprove is true for a human step whose auto_approve is true.
	AutoApprove bool
	// Err is set when when or auto_approve could not be evaluated: the
	// step FAILS with it. An expression that errs never skips a step
	// and never approves one.
	Err string
}

// SessionDone reports the end of a step's session and, when it
// succeeded, the verdict of its gate.
type SessionDone struct {
	Step StepKey
	// Outcome is what the session produced, to be recorded; its Error
	// is set by the core.
	Outcome Outcome
	// Facts are what the driver observed; the core decides from them
	// (Failure, GateVerdict).
	Facts SessionFacts
	// Interrupted is true when flow was interrupted mid-session; the
	// attempt is not counted.
	Interrupted bool
	// Invalid says, with its position, which of the step's expressions
	// or templates could not be evaluated or rendered: the step fails,
	// and is not retried (another session would not change it).
	Invalid string
	// RetryIf is the value of retry_if for a session that failed, when
	// the step has one; nil retries.
	RetryIf *bool
	// Gate holds the facts of the step's gate for a session that
	// succeeded, when the step has a gate.
	Gate *GateFacts
	// Notes are what the driver has to say of the session (an agent
	// that refused to resume its conversation): each is recorded as a
	// warning event before the session's outcome.
	Notes []string
	// DailySpent, when set, is what the runs of the repository spent
	// today (UTC), this session included.
	DailySpent *float64
	// AutoApprove is the value of human.auto_approve of a session step
	// with human:, evaluated once its session has succeeded (it may read
	// the session's output); nil when the step has none.
	AutoApprove *bool
}

// SessionPID reports the process of a step's session once it started,
// the marker its processes carry, and where the driver keeps its log
// and its report.
type SessionPID struct {
	Step       StepKey
	PID        int
	Marker     string
	LogPath    string
	ReportPath string
}

// HumanReady answers PrepareHuman: where the step's decision goes.
type HumanReady struct {
	Step            StepKey
	Attempt         int
	ManualInputPath string
}

// HumanDecision reports a human's input to a waiting step, that its
// human.timeout passed, or (Err) that its human block's message or
// timeout could not be evaluated: the step fails with it, as at any
// other expression.
type HumanDecision struct {
	Step     StepKey
	Input    HumanInput
	TimedOut bool
	Err      string
}

// ItemsResult answers ExpandItems: the items of a loop step, in order,
// each with its key as the workflow's key: gave it (not yet sanitised;
// the index when the loop has no key:), or why there are none.
type ItemsResult struct {
	Step  StepKey
	Items []LoopItem
	// Total is the length of the list when Items holds only its first
	// items (a driver stops one past the loop's limit); 0 is len(Items).
	Total int
	// Err is set when the list could not be evaluated, or is not a
	// list: the loop step fails with it.
	Err string
	// Where is where the keys come from in the workflow ("wf.yaml:9:10:
	// key"), to say where a problem with them is.
	Where string
}

// TimerFired reports that a retry timer started by StartTimer fired.
type TimerFired struct{ Step StepKey }

// ControlChanged reports a new desired state in control.json.
type ControlChanged struct{ Desired ControlState }

// CleanupDone reports the end of the cleanup session.
type CleanupDone struct {
	Failed bool
	// Error says why it failed.
	Error string
}

// Interrupt reports that flow was asked to stop (SIGINT, SIGTERM).
type Interrupt struct{}

func (Begin) isInput()          {}
func (WhenResult) isInput()     {}
func (ItemsResult) isInput()    {}
func (SessionDone) isInput()    {}
func (HumanDecision) isInput()  {}
func (SessionPID) isInput()     {}
func (HumanReady) isInput()     {}
func (TimerFired) isInput()     {}
func (ControlChanged) isInput() {}
func (CleanupDone) isInput()    {}
func (Interrupt) isInput()      {}
func (GatesChanged) isInput()   {}

// Effect is something the driver must do.
type Effect interface{ isEffect() }

// Evaluate asks the driver to evaluate a step's when (and, for a human
// step, auto_approve) and answer with WhenResult.
type Evaluate struct{ Step StepKey }

// ExpandItems asks the driver to evaluate a loop step's list of items
// (for_each) and their keys, and answer with ItemsResult.
type ExpandItems struct{ Step StepKey }

// StartSession asks the driver to start a session of a step: its
// attempt and iteration are what the driver names its files after.
type StartSession struct {
	Step      StepKey
	Attempt   int
	Iteration int
}

// PrepareHuman asks the driver to get a human step's wait ready (name
// and make the place its decision goes) and answer with HumanReady.
type PrepareHuman struct {
	Step    StepKey
	Attempt int
}

// AwaitHuman asks the driver to wait for a human's input to a step.
type AwaitHuman struct {
	Step            StepKey
	ManualInputPath string
}

// StartTimer asks the driver to answer TimerFired after Delay.
type StartTimer struct {
	Step  StepKey
	Delay time.Duration
}

// SetControl asks the driver to write control.json.
type SetControl struct {
	Desired, Current ControlState
	Note             string
}

// StartCleanup asks the driver to run the workflow's cleanup session,
// the N-th of the run.
type StartCleanup struct{ N int }

// Idle says that nothing can happen until a human decides or control
// changes: Waiting lists the human steps, Paused is true when control
// holds the run.
type Idle struct {
	Waiting []StepKey
	Paused  bool
	// Gated are the steps that wait for gates of the gate-state file.
	Gated []StepKey
	// Merges are the items whose merge waits for the shared checkout
	// (as <loop>.<key>); MergeRetry tries them again.
	Merges []string
}

// Finish says the run has ended (for now) with Status and ExitCode.
type Finish struct {
	Status   RunStatus
	ExitCode int
	Reason   string
}

func (Evaluate) isEffect()     {}
func (ExpandItems) isEffect()  {}
func (StartSession) isEffect() {}
func (PrepareHuman) isEffect() {}
func (AwaitHuman) isEffect()   {}
func (StartTimer) isEffect()   {}
func (SetControl) isEffect()   {}
func (StartCleanup) isEffect() {}
func (Idle) isEffect()         {}
func (Finish) isEffect()       {}

// AlreadyEnded is the reason of a Finish for a run that had ended
// before the runner took it.
const AlreadyEnded = "the run had already ended"

// Decision is what Decide returns: the events it applied to the state
// (to be appended to events.jsonl) and the effects to perform, in order.
type Decision struct {
	Events  []Event
	Effects []Effect
}

// Durable reports whether the decision records the end of a session or
// a human decision, whose events must be synced before anything else
// starts.
func (d Decision) Durable() bool {
	for _, e := range d.Events {
		switch e.Type {
		case EvStepCompleted, EvGateFailed, EvStepFailed, EvAttemptFailed, EvStepSkipped,
			EvStepInterrupted, EvHumanInput, EvRunFinished, EvRunInterrupted, EvLoopItems, EvItemFinished, EvItemMerge, EvStepMerge:
			return true
		case EvStepWaiting:
			// The wait of a session step with human: records its
			// session's end.
			var w StepWaiting
			if json.Unmarshal(e.Data, &w) == nil && w.Session != nil {
				return true
			}
		}
	}
	return false
}

// decider accumulates one decision.
type decider struct {
	c  *Core
	st *State
	at time.Time
	d  Decision
}

func (x *decider) emit(typ string, step StepKey, data any) {
	e := NewEvent(x.at, typ, step, data)
	typed := data
	if red := x.c.redact.Bytes(e.Data); len(red) != len(e.Data) || len(red) > 0 && &red[0] != &e.Data[0] {
		// Secrets were hidden: the state gets what the log gets.
		e.Data, typed = red, nil
	}
	wasRunning := false
	if s := x.st.Steps[step]; s != nil {
		wasRunning = s.Status == Running
	}
	// A loop-back may reset loop steps that were running their items,
	// and resume one that had ended (resume.go).
	gf, isGate := data.(GateFailure)
	var resetRunning []StepKey
	if isGate {
		for _, id := range gf.Reset {
			if s := x.st.Steps[id]; id != step && s != nil && s.Status == Running {
				resetRunning = append(resetRunning, id)
			}
		}
	}
	if err := apply(x.st, e, typed); err != nil {
		panic(fmt.Sprintf("core emitted an event it cannot apply: %v", err)) // a bug in the core
	}
	x.d.Events = append(x.d.Events, e)
	if step.IsZero() {
		return
	}
	isRunning := x.st.Steps[step] != nil && x.st.Steps[step].Status == Running
	counter := &x.c.running
	if step.IsInstance() {
		counter = &x.c.instRunning
	}
	switch {
	case isRunning && !wasRunning:
		*counter++
	case wasRunning && !isRunning:
		*counter--
	}
	if isGate {
		for _, id := range gf.Reset {
			was := slices.Contains(resetRunning, id)
			switch is := x.st.Steps[id] != nil && x.st.Steps[id].Status == Running; {
			case id == step:
			case was && !is:
				x.c.running--
			case !was && is:
				x.c.running++
			}
		}
	}
	if typ == EvLoopItems {
		delete(x.c.loops, step.Step)
	}
	x.c.mark(step)
	if isGate {
		for _, id := range gf.Reset {
			x.c.mark(id)
		}
		if !gf.WaitingFor.IsZero() {
			x.c.waiters[gf.WaitingFor] = append(x.c.waiters[gf.WaitingFor], step)
		}
	}
	if ws, ok := x.c.waiters[step]; ok && x.st.Steps[step] != nil && x.st.Steps[step].Status.done() {
		delete(x.c.waiters, step)
		for _, id := range ws {
			x.c.mark(id)
		}
	}
}

func (x *decider) effect(e Effect) { x.d.Effects = append(x.d.Effects, e) }

// Decide applies input in to st at time at and returns what happened
// and what to do next.
func (c *Core) Decide(st *State, in Input, at time.Time) Decision {
	x := &decider{c: c, st: st, at: at}
	switch in := in.(type) {
	case Begin:
		c.begin(x, in)
	case WhenResult:
		c.whenResult(x, in)
	case ItemsResult:
		c.itemsResult(x, in)
	case SessionDone:
		c.sessionDone(x, in)
	case HumanDecision:
		c.humanDecision(x, in)
	case SessionPID:
		if s := x.st.Steps[in.Step]; s != nil && s.Status == Running {
			x.emit(EvSessionStarted, in.Step, SessionStarted{PID: in.PID, Marker: in.Marker, LogPath: in.LogPath, ReportPath: in.ReportPath})
		}
	case HumanReady:
		c.humanReady(x, in)
	case TimerFired:
		delete(c.waiting, in.Step)
		c.mark(in.Step)
	case GatesChanged:
		c.gatesChanged(in)
	case ControlChanged:
		c.controlChanged(x, in.Desired)
	case MergeResult:
		c.mergeResult(x, in)
	case MergeRetry:
		c.idleAtRetry = c.idle
		c.retryStepMerges(x)
		clear(c.mergeHeld)
		for _, i := range c.plan.loops {
			c.markIndex(i)
		}
	case CleanupDone:
		c.cleaning = false
		x.emit(EvCleanupFinished, StepKey{}, CleanupFinished{N: x.st.Cleanups, Failed: in.Failed, Error: shorten(in.Error)})
		c.control = Pause
		x.effect(SetControl{Desired: Pause, Current: Pause, Note: "cleanup session finished"})
	case Interrupt:
		if c.haltCode == 0 || c.haltCode == ExitFailed || c.haltCode == ExitBudget || c.haltCode == ExitBudgetExceeded {
			c.haltCode, c.haltReason = ExitInterrupted, "interrupted"
		}
		// Retry timers and evaluations are dropped; a resumed run
		// schedules those steps again.
		clear(c.waiting)
		clear(c.evaluating)
		clear(c.preparing)
		clear(c.expanding)
	}
	c.schedule(x)
	return x.d
}

func (c *Core) begin(x *decider, in Begin) {
	c.finished, c.idle, c.onceUsed = false, false, false
	c.haltCode, c.haltReason = 0, ""
	clear(c.evaluating)
	clear(c.preparing)
	clear(c.waiting)
	clear(c.expanding)
	clear(c.loops)
	clear(c.approvals)
	// A merge that waited is tried again; one in flight when the last
	// runner stopped is asked for again.
	clear(c.merging)
	clear(c.mergeHeld)
	clear(c.stepMerges)
	clear(c.autoApproved)
	c.cleaning = false
	c.control = Continuous
	c.running, c.instRunning = 0, 0
	c.gates, c.gated = in.Gates, nil
	c.dailySpent = in.DailySpent
	for id, s := range x.st.Steps {
		if s.Status == Running {
			if id.IsInstance() {
				c.instRunning++
			} else {
				c.running++
			}
		}
	}
	c.markAll()
	clear(c.waiters)
	for _, id := range x.st.StepOrder {
		s := x.st.Steps[id]
		if s.WaitingFor != nil {
			c.waiters[*s.WaitingFor] = append(c.waiters[*s.WaitingFor], id)
		}
		switch s.Status {
		case Running:
			// A loop step runs no session: it goes on with its items.
			if ps := c.step(id); ps == nil || ps.ForEach == nil {
				x.emit(EvReconciled, id, nil)
			}
		case WaitingOnHuman:
			if ps := c.step(id); ps != nil && ps.Kind != KindHuman && !ps.HumanAfter {
				// An accepted edit took the step's human away: the wait is
				// over. A session that ran before it stands; a step that
				// ran none runs as it is now.
				if s.ExitCode != nil {
					x.emit(EvStepCompleted, id, sessionOutcome(s))
				} else {
					x.emit(EvReconciled, id, Note{Message: "the workflow was edited: the step no longer waits on a human, and runs as it is now"})
				}
				break
			}
			x.effect(AwaitHuman{Step: id, ManualInputPath: deref(s.ManualInputPath)})
		}
	}
	if x.st.Status.Terminal() {
		c.finished = true
		x.effect(Finish{Status: x.st.Status, ExitCode: x.st.ExitCode, Reason: AlreadyEnded})
		return
	}
	if in.Control != "" && in.Control != Continuous {
		c.controlChanged(x, in.Control)
	}
	// A budget spent before this runner took the run (and not raised
	// since) stops it before any session.
	c.checkBudgets(x, StepKey{})
	for _, ps := range c.plan.Steps {
		if ps.budget().set() {
			c.checkBudgets(x, Key(ps.ID))
		}
	}
}

func (c *Core) whenResult(x *decider, in WhenResult) {
	if !c.evaluating[in.Step] {
		return
	}
	delete(c.evaluating, in.Step)
	c.mark(in.Step)
	s := x.st.Steps[in.Step]
	if s == nil || s.Status != Pending {
		return
	}
	if in.Err != "" {
		msg := shorten(in.Err)
		x.emit(EvStepFailed, in.Step, Outcome{Attempt: s.Attempts, Error: msg})
		c.stepFailed(in.Step, ExitFailed, fmt.Sprintf("step %s failed: %s", in.Step, msg))
		return
	}
	if !in.Run {
		x.emit(EvStepSkipped, in.Step, Skip{Reason: in.Reason})
		return
	}
	if c.haltCode != 0 || c.paused() {
		return // scheduled again later
	}
	c.start(x, in.Step, in.AutoApprove)
}

func (c *Core) sessionDone(x *decider, in SessionDone) {
	if s := x.st.Steps[in.Step]; s != nil && s.Status == Running {
		for _, n := range in.Notes {
			x.emit(EvWarning, in.Step, Note{Message: shorten(n)})
		}
	}
	if in.DailySpent != nil {
		c.dailySpent = *in.DailySpent
	}
	c.sessionEnd(x, in)
	c.checkBudgets(x, in.Step)
}

func (c *Core) sessionEnd(x *decider, in SessionDone) {
	s := x.st.Steps[in.Step]
	ps := c.step(in.Step)
	if s == nil || ps == nil || s.Status != Running || ps.ForEach != nil {
		return
	}
	if c.control == RunOnce && c.onceStep == in.Step {
		c.control, c.onceStep = Pause, StepKey{}
		x.effect(SetControl{Desired: Pause, Current: Pause, Note: "run_once session finished"})
	}
	o := in.Outcome
	if in.AutoApprove != nil && ps.HumanAfter {
		if *in.AutoApprove {
			c.autoApproved[in.Step] = true
		} else {
			delete(c.autoApproved, in.Step)
		}
	}
	why, retryable := in.Invalid, false
	if why == "" && !in.Interrupted {
		why = Failure(ps, in.Facts)
		retryable = in.RetryIf == nil || *in.RetryIf
	}
	o.Error = shorten(why)
	if why != "" && in.Invalid == "" && exitFailure(in.Facts) && (in.Facts.Report == nil || in.Facts.Report.Error == "") {
		// A failed exit says why in its last lines of output.
		if tail := lastLines(in.Facts.Output); tail != "" {
			o.Error = shorten(why + ": " + tail)
		}
	}
	switch {
	case in.Interrupted:
		x.emit(EvStepInterrupted, in.Step, nil)
		if c.haltCode == 0 {
			c.haltCode, c.haltReason = ExitInterrupted, "interrupted"
		}
	case why != "":
		if s.Attempts < ps.MaxAttempts && retryable && c.haltCode == 0 {
			x.emit(EvAttemptFailed, in.Step, o)
			if d := ps.backoff(s.Attempts + 1); d > 0 {
				c.waiting[in.Step] = true
				x.effect(StartTimer{Step: in.Step, Delay: d})
			}
			return
		}
		if ps.Kind == KindCommand && ps.HasGate && in.Invalid == "" && exitFailure(in.Facts) {
			// A command with a loop-back whose attempts failed by their
			// exit code fails its gate: failing tests go back to the
			// coder, with their output (as evidence, not in the reason).
			c.gateFailure(x, in.Step, shorten(why), evidence(in.Facts.Output), o)
			return
		}
		if s.Attempts >= ps.MaxAttempts && ps.MaxAttempts > 1 {
			o.Error = fmt.Sprintf("%s (attempt %d of %d)", o.Error, s.Attempts, ps.MaxAttempts)
		}
		o.Evidence = evidence(in.Facts.Output)
		x.emit(EvStepFailed, in.Step, o)
		c.stepFailed(in.Step, ExitFailed, fmt.Sprintf("step %s failed: %s", in.Step, o.Error))
	case ps.HasGate:
		var g GateFacts
		if in.Gate != nil {
			g = *in.Gate
		}
		if reason, ev := GateVerdict(ps, in.Facts, g); reason != "" {
			c.gateFailure(x, in.Step, shorten(reason), evidence(ev), o)
			return
		}
		c.succeeded(x, in.Step, ps, o)
	default:
		c.succeeded(x, in.Step, ps, o)
	}
}

// succeeded completes a step whose session succeeded and whose gate
// passed; a step with human: waits on a human first, as a human step
// does (its wait prepared by the driver, or approved at once when its
// auto_approve was true).
func (c *Core) succeeded(x *decider, id StepKey, ps *PlanStep, o Outcome) {
	if ps.worktree() && !id.IsInstance() {
		// A step with a worktree of its own merges its work first.
		c.startStepMerge(x, id, ps, o)
		return
	}
	c.completed(x, id, ps, o)
}

// completed completes a step whose session succeeded, whose gate passed
// and whose work (in a worktree of its own) was merged, or has it wait
// on a human first.
func (c *Core) completed(x *decider, id StepKey, ps *PlanStep, o Outcome) {
	if !ps.HumanAfter {
		x.emit(EvStepCompleted, id, o)
		return
	}
	if c.autoApproved[id] {
		delete(c.autoApproved, id)
		x.emit(EvStepWaiting, id, StepWaiting{Attempt: o.Attempt, Session: &o})
		c.humanDecision(x, HumanDecision{Step: id, Input: HumanInput{Approved: true, By: "auto_approve"}})
		return
	}
	c.approvals[id] = o
	c.preparing[id] = true
	x.effect(PrepareHuman{Step: id, Attempt: o.Attempt})
}

// sessionOutcome is what a waiting session step's record holds of its
// session, to be kept when the human's decision ends the step. Its
// usage is not repeated: the session's record already counted it.
func sessionOutcome(s *StepState) Outcome {
	o := Outcome{Attempt: s.Attempts, ExitCode: s.ExitCode, Artifacts: s.Artifacts, Metrics: s.Metrics, Logs: s.Logs,
		Signals: s.Signals, Verdict: s.Verdict}
	if s.ReportPath != nil {
		o.ReportPath = *s.ReportPath
	}
	return o
}

// gateFailure records a failed gate of step g and loops back, or fails
// the step when it has no loop-back or its iteration budget is spent.
func (c *Core) gateFailure(x *decider, g StepKey, reason, output string, o Outcome) {
	ps := c.step(g)
	if ps.LoopTarget == "" {
		o.Error = "gate failed: " + reason
		o.Evidence = output
		x.emit(EvStepFailed, g, o)
		c.stepFailed(g, ExitFailed, fmt.Sprintf("step %s: gate failed: %s", g, reason))
		return
	}
	o.Error = "gate failed: " + reason
	// A body step loops back inside its item, or to a step of the top
	// level before its loop: the whole loop runs again.
	target := Key(ps.LoopTarget)
	gk, inst := g, g.IsInstance()
	inBody := inst && c.plan.Step(ps.LoopTarget) != nil && c.plan.Step(ps.LoopTarget).Loop == gk.Loop
	if inBody {
		target = Instance(gk.Loop, gk.Item, ps.LoopTarget)
	}
	gf := GateFailure{Outcome: o, Reason: reason, Target: target, Output: output}
	ts := x.st.Steps[target]
	switch {
	case ts == nil:
		o.Error = fmt.Sprintf("gate failed: %s; loop_back_to %q is not a step of this run", reason, target)
		o.Evidence = output
		x.emit(EvStepFailed, g, o)
		c.stepFailed(g, ExitFailed, o.Error)
		return
	case ts.IterationCount-ts.IterationBase+1 >= ps.MaxIterations:
		gf.Target, gf.Budget, gf.MaxIterations = StepKey{}, true, ps.MaxIterations
		x.emit(EvGateFailed, g, gf)
		c.stepFailed(g, ExitBudget, fmt.Sprintf("step %s: %s", g, deref(x.st.Steps[g].LastError)))
		return
	}
	// A target upstream of the gate step resets it with the rest of
	// its downstream. A target off to its side (docs/concepts.md, "Loop-backs") does not:
	// the gate step and what depends on it are reset too, and the gate
	// step waits for the target (waiting_for) before it runs again.
	downstream := func(id string) []StepKey {
		var out []StepKey
		for _, d := range c.plan.Downstream(id) {
			if inBody {
				out = append(out, Instance(gk.Loop, gk.Item, d))
			} else {
				out = append(out, Key(d))
			}
		}
		return out
	}
	reset := append([]StepKey{target}, downstream(ps.LoopTarget)...)
	// An instance looping back to a step its loop needs resets its loop.
	scope := g
	if inst && !inBody {
		scope = Key(gk.Loop)
	}
	switch {
	case slices.Contains(reset, g):
	case slices.Contains(reset, scope):
		reset = append(reset, g)
	default:
		gf.WaitingFor = target
		reset = append(reset, g)
		for _, id := range downstream(gk.Step) {
			if !slices.Contains(reset, id) {
				reset = append(reset, id)
			}
		}
	}
	if !inBody {
		// A loop step reset runs all its items again, or, resuming,
		// those from the failed one on: their instances are reset
		// with it.
		if inst {
			gf.Resume = c.itemResume(x.st, gk, target, reset)
		}
		for _, id := range reset {
			if ls := x.st.Steps[id]; ls != nil && ls.LoopIndex != nil && !id.IsInstance() {
				for _, inst := range c.instancesFrom(x.st, id.Step, gf.Resume.from(id.Step)) {
					// The gate instance may be there already: it is
					// reset, and counted, once.
					if !slices.Contains(reset, inst) {
						reset = append(reset, inst)
					}
				}
			}
		}
	}
	// Steps of the loop that are still running or waiting keep their
	// state; a loop-back never pulls a session from under its feet.
	reset = slices.DeleteFunc(reset, func(id StepKey) bool {
		s := x.st.Steps[id]
		if s == nil {
			return true
		}
		if id == g || s.Status != Running && s.Status != WaitingOnHuman {
			return false
		}
		// A running loop step is reset: its instances in flight
		// finish first (see ready).
		if id.IsInstance() {
			return true
		}
		ls := c.plan.Step(id.Step)
		return ls == nil || ls.ForEach == nil
	})
	gf.Reset = reset
	x.emit(EvGateFailed, g, gf)
	for _, id := range reset {
		delete(c.waiting, id)
		delete(c.evaluating, id)
		delete(c.preparing, id)
		delete(c.expanding, id)
	}
	if gf.Resume != nil {
		for _, id := range gf.Resume.Loops {
			delete(c.loops, id) // its items are looked at again from the first
		}
	}
}

func (c *Core) humanDecision(x *decider, in HumanDecision) {
	s := x.st.Steps[in.Step]
	if s == nil || s.Status != WaitingOnHuman {
		return
	}
	c.idle = false
	if in.Err == "" {
		x.emit(EvHumanInput, in.Step, in.Input)
	}
	o := Outcome{Attempt: s.Attempts}
	if ps := c.step(in.Step); ps != nil && ps.HumanAfter {
		o = sessionOutcome(s)
	}
	who := in.Input.By
	if who == "" {
		who = "a human"
	}
	switch {
	case in.Err != "":
		o.Error = shorten(in.Err)
		x.emit(EvStepFailed, in.Step, o)
		c.stepFailed(in.Step, ExitFailed, fmt.Sprintf("step %s: %s", in.Step, o.Error))
	case in.TimedOut:
		o.Error = "no human decision before human.timeout"
		x.emit(EvStepFailed, in.Step, o)
		c.stepFailed(in.Step, ExitFailed, fmt.Sprintf("step %s: %s", in.Step, o.Error))
	case in.Input.Approved:
		x.emit(EvStepCompleted, in.Step, o)
	default:
		reason := "rejected by " + who
		if in.Input.Reason != "" {
			reason += ": " + in.Input.Reason
		}
		if b, err := json.Marshal(in.Input); err == nil {
			o.Report = b
		}
		c.gateFailure(x, in.Step, reason, "", o)
	}
}

func (c *Core) controlChanged(x *decider, desired ControlState) {
	switch desired {
	case Continuous, Pause, RunOnce, RunCleanup:
	default:
		desired = Pause
	}
	if desired == c.control {
		return
	}
	c.control = desired
	c.idle = false
	c.onceUsed = false
	c.markAll()
	x.emit(EvControl, StepKey{}, Note{Message: "desired state " + string(desired)})
	switch desired {
	case RunCleanup:
		x.effect(SetControl{Desired: RunCleanup, Current: RunCleanup})
		x.emit(EvCleanupStarted, StepKey{}, CleanupFinished{N: x.st.Cleanups + 1})
		x.effect(StartCleanup{N: x.st.Cleanups})
		c.cleaning = true
	case Pause:
		// Current becomes pause once the sessions in flight end.
	default:
		x.effect(SetControl{Desired: desired, Current: desired})
	}
}

// Paused reports whether control holds the run: no session may start.
func (c *Core) Paused() bool { return c.paused() }

// Control returns the control state the core acts on.
func (c *Core) Control() ControlState { return c.control }

// Running returns how many sessions are in flight.
func (c *Core) Running() int { return c.running }

// HideSecrets makes the core hide r's values in the data of every event
// it emits, before the event is applied.
func (c *Core) HideSecrets(r *redact.Redactor) { c.redact = r }

func (c *Core) paused() bool {
	return c.control == Pause || c.control == RunCleanup || (c.control == RunOnce && c.onceUsed)
}

func (c *Core) fail(code int, reason string) {
	if c.haltCode == 0 {
		c.haltCode, c.haltReason = code, reason
	}
}

// start moves a ready step into its session, or its wait for a human.
func (c *Core) start(x *decider, id StepKey, autoApprove bool) {
	s := x.st.Steps[id]
	ps := c.step(id)
	attempt := s.Attempts + 1
	if ps.Kind == KindConsensus {
		c.decideConsensus(x, id, ps)
		return
	}
	if ps.ForEach != nil {
		c.expanding[id] = true
		x.effect(ExpandItems{Step: id})
		return
	}
	if ps.Kind == KindHuman {
		if autoApprove {
			x.emit(EvStepWaiting, id, StepWaiting{Attempt: attempt})
			c.humanDecision(x, HumanDecision{Step: id, Input: HumanInput{Approved: true, By: "auto_approve"}})
			return
		}
		c.preparing[id] = true
		x.effect(PrepareHuman{Step: id, Attempt: attempt})
		return
	}
	if ps.HumanAfter {
		if autoApprove {
			c.autoApproved[id] = true
		} else {
			delete(c.autoApproved, id)
		}
	}
	if c.control == RunOnce && !c.onceUsed {
		c.onceUsed, c.onceStep = true, id
	}
	x.emit(EvStepStarted, id, StepStarted{Session: true, Attempt: attempt, Iteration: s.IterationCount})
	x.effect(StartSession{Step: id, Attempt: attempt, Iteration: s.IterationCount})
}

// humanReady puts a human step whose wait the driver prepared into
// WAITING_ON_HUMAN, and asks the driver to wait for the decision.
func (c *Core) humanReady(x *decider, in HumanReady) {
	if o, ok := c.approvals[in.Step]; ok {
		// A session step's approval: its session's end is recorded
		// with the wait, even when the run is stopping.
		delete(c.approvals, in.Step)
		delete(c.preparing, in.Step)
		c.mark(in.Step)
		if s := x.st.Steps[in.Step]; s == nil || s.Status != Running {
			return
		}
		x.emit(EvStepWaiting, in.Step, StepWaiting{Attempt: o.Attempt, ManualInputPath: in.ManualInputPath, Session: &o})
		x.effect(AwaitHuman{Step: in.Step, ManualInputPath: in.ManualInputPath})
		return
	}
	if !c.preparing[in.Step] {
		return
	}
	delete(c.preparing, in.Step)
	c.mark(in.Step)
	s := x.st.Steps[in.Step]
	if s == nil || s.Status != Pending || c.haltCode != 0 {
		return
	}
	x.emit(EvStepWaiting, in.Step, StepWaiting{Attempt: in.Attempt, ManualInputPath: in.ManualInputPath})
	x.effect(AwaitHuman{Step: in.Step, ManualInputPath: in.ManualInputPath})
}

// ready reports whether a pending step may start: its needs are done
// and no loop-back blocks it.
func (c *Core) ready(st *State, ps *PlanStep) bool {
	id := Key(ps.ID)
	s := st.Steps[id]
	if s == nil || s.Status != Pending || s.BlockedByLoop != nil || c.evaluating[id] || c.preparing[id] || c.waiting[id] || c.expanding[id] {
		return false
	}
	if waitingFor(st, s) {
		return false
	}
	for _, n := range ps.Needs {
		ns := st.Steps[Key(n)]
		if ns != nil && !ns.Status.done() {
			return false
		}
	}
	// A loop runs again only once the instances a loop-back left in
	// flight have ended.
	if ps.ForEach != nil && s.LoopIndex != nil && c.loopBusy(st, ps.ID) {
		return false
	}
	return true
}

// schedule starts what may start, and finishes the run when nothing is
// left to do.
func (c *Core) schedule(x *decider) {
	if c.finished {
		return
	}
	st := x.st
	busy := c.running
	for id := range c.evaluating {
		if !id.IsInstance() {
			busy++
		}
	}
	busy += len(c.expanding)
	canStart := c.haltCode == 0 && !c.paused()
	if !canStart {
		// Loops still record their items finishing, and end.
		for _, i := range c.plan.loops {
			if id := Key(c.plan.Steps[i].ID); c.candidates[i] && st.Steps[id] != nil && st.Steps[id].Status == Running {
				c.scheduleLoop(x, &c.plan.Steps[i], false)
			}
		}
	}
	// A consensus decided in a pass may loop back to a step before it:
	// that step is visited in another pass.
	for pass := 0; pass == 0 || c.rescan && pass < 3; pass++ {
		c.rescan = false
		busy = c.schedulePass(x, busy, canStart)
	} // A running loop step holds a slot of max_parallel but runs no
	// session: the run is busy when sessions, evaluations, timers or
	// waits are in flight.
	inFlight := c.running + c.instRunning + len(c.evaluating) + len(c.expanding) + len(c.merging)
	for _, i := range c.plan.loops {
		if s := st.Steps[Key(c.plan.Steps[i].ID)]; s != nil && s.Status == Running {
			inFlight--
		}
	}
	if inFlight > 0 || len(c.waiting) > 0 || len(c.preparing) > 0 || c.cleaning {
		c.idle = false
		return
	}
	var waiting []StepKey
	allDone, anyFailed := true, false
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		switch s.Status {
		case WaitingOnHuman:
			waiting = append(waiting, id)
		case Failed:
			anyFailed = true
		}
		if !s.Status.done() {
			allDone = false
		}
	}
	switch {
	case c.haltCode == ExitInterrupted:
		c.finished = true
		x.emit(EvRunInterrupted, StepKey{}, Note{Message: c.haltReason})
		x.effect(Finish{Status: RunInterrupted, ExitCode: ExitInterrupted, Reason: c.haltReason})
	case c.haltCode == ExitBudgetExceeded && !allDone:
		// (A budget the last session spent stops nothing: the run is
		// done.)
		c.finished = true
		x.emit(EvRunFinished, StepKey{}, RunFinished{Status: RunBudgetExceeded, ExitCode: ExitBudgetExceeded, Reason: c.haltReason})
		x.effect(Finish{Status: RunBudgetExceeded, ExitCode: ExitBudgetExceeded, Reason: c.haltReason})
	case c.haltCode != 0 && !(c.haltCode == ExitBudgetExceeded && allDone) || anyFailed:
		code, reason := c.haltCode, c.haltReason
		if code == 0 {
			code, reason = ExitFailed, "a step failed"
		}
		c.finished = true
		x.emit(EvRunFinished, StepKey{}, RunFinished{Status: RunFailed, ExitCode: code, Reason: reason})
		x.effect(Finish{Status: RunFailed, ExitCode: code, Reason: reason})
	case allDone:
		c.finished = true
		x.emit(EvRunFinished, StepKey{}, RunFinished{Status: RunCompleted})
		x.effect(Finish{Status: RunCompleted})
	case len(waiting) > 0 || c.paused() || len(c.gated) > 0 || len(c.mergeHeld) > 0:
		if !c.idle {
			c.idle = true
			gated := c.gatedSteps()
			merges := c.mergesWaiting()
			if c.paused() && len(waiting) == 0 {
				x.emit(EvRunPaused, StepKey{}, Note{Message: "paused by control.json"})
				x.effect(SetControl{Desired: Pause, Current: Pause})
			} else if len(waiting) > 0 {
				x.emit(EvRunWaiting, StepKey{}, Note{Message: "waiting on a human: " + fmt.Sprint(waiting)})
			} else if len(gated) > 0 {
				x.emit(EvRunWaiting, StepKey{}, Note{Message: "waiting on gates: " + c.gatesReport(st)})
			} else {
				x.emit(EvRunWaiting, StepKey{}, Note{Message: "waiting for the checkout to take the merge of " + strings.Join(merges, ", ")})
			}
			x.effect(Idle{Waiting: waiting, Paused: c.paused(), Gated: gated, Merges: merges})
		}
	default:
		// Nothing runs and nothing can start: a bug or an impossible
		// state. End the run rather than hang, saying why.
		c.finished = true
		reason := "no step can start: " + c.blockedReport(st)
		x.emit(EvRunFinished, StepKey{}, RunFinished{Status: RunFailed, ExitCode: ExitFailed, Reason: reason})
		x.effect(Finish{Status: RunFailed, ExitCode: ExitFailed, Reason: reason})
	}
}

// blockedReport says why each pending step cannot start.
func (c *Core) blockedReport(st *State) string {
	var out []string
	for _, ps := range c.plan.Steps {
		s := st.Steps[Key(ps.ID)]
		if s == nil || s.Status != Pending || ps.Loop != "" {
			continue
		}
		why := ""
		if s.BlockedByLoop != nil {
			why = "blocked by loop of " + *s.BlockedByLoop
		}
		if waitingFor(st, s) {
			why = "waiting for " + s.WaitingFor.String()
		}
		for _, n := range ps.Needs {
			if ns := st.Steps[Key(n)]; ns != nil && !ns.Status.done() {
				why = fmt.Sprintf("needs %s (%s)", n, ns.Status)
			}
		}
		out = append(out, ps.ID+": "+why)
	}
	return fmt.Sprint(out)
}

// waitingFor reports whether step s waits for the loop-back target
// named by its waiting_for, which is not done yet.
func waitingFor(st *State, s *StepState) bool {
	if s.WaitingFor == nil {
		return false
	}
	t := st.Steps[*s.WaitingFor]
	return t != nil && !t.Status.done()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// MaxExcerpt bounds the text of an error or reason kept in an event
// (docs/reference/limits.md): a longer one keeps its head and tail around a marker,
// so that no rendered value, output or report is ever copied whole
// into the record.
const MaxExcerpt = 4 << 10

// shorten returns s, or its first and last parts around a marker when
// it is longer than MaxExcerpt. It cuts at rune boundaries.
func shorten(s string) string {
	if len(s) <= MaxExcerpt {
		return s
	}
	const keep = MaxExcerpt/2 - 64
	h, t := keep, len(s)-keep
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return fmt.Sprintf("%s [... %d bytes cut ...] %s", s[:h], t-h, s[t:])
}

// The bounds of the evidence a re-entered step is shown: the last lines
// of the failing output.
const (
	maxEvidenceLines = 200
	maxEvidence      = 16 << 10
)

// evidence returns the tail of a failing output that a loop-back hands
// to the step it re-enters: at most its last 200 lines and 16 KiB, cut
// at a line (or character) boundary.
func evidence(out string) string {
	out = strings.TrimRight(out, "\n")
	if len(out) > maxEvidence {
		i := len(out) - maxEvidence
		if j := strings.IndexByte(out[i:], '\n'); j >= 0 && j < maxEvidence/2 {
			i += j + 1
		}
		for i < len(out) && !utf8.RuneStart(out[i]) {
			i++
		}
		out = out[i:]
	}
	n := 0
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] == '\n' {
			n++
			if n == maxEvidenceLines {
				return out[i+1:]
			}
		}
	}
	return out
}

// The bounds of the output a failed session's last_error ends with.
const (
	maxErrorLines = 5
	maxErrorTail  = 1 << 10
)

// lastLines returns the last non-blank lines of a session's output for
// its last_error: at most maxErrorLines lines and maxErrorTail bytes,
// cut at a line (or character) boundary, or "" when it printed nothing.
func lastLines(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\r\n\t "), "\n")
	var keep []string
	size := 0
	for i := len(lines) - 1; i >= 0 && len(keep) < maxErrorLines; i-- {
		l := strings.TrimRight(lines[i], "\r")
		if strings.TrimSpace(l) == "" {
			continue
		}
		if size+len(l) > maxErrorTail {
			if len(keep) > 0 {
				break
			}
			j := len(l) - maxErrorTail
			for j < len(l) && !utf8.RuneStart(l[j]) {
				j++
			}
			l = "…" + l[j:]
		}
		size += len(l) + 1
		keep = append(keep, l)
	}
	slices.Reverse(keep)
	return strings.Join(keep, "\n")
}

// schedulePass visits the candidates once, in workflow order, starting
// what may start; a ready step left waiting for a free slot stays a
// candidate. It returns the slots now busy.
func (c *Core) schedulePass(x *decider, busy int, canStart bool) int {
	st := x.st
	if !canStart || c.ncand == 0 {
		return busy
	}
	// Visit the candidates in workflow order; a ready step left
	// waiting for a free slot stays a candidate.
	var held []int
	for i := range c.plan.Steps {
		if c.ncand == 0 {
			break
		}
		if !c.candidates[i] {
			continue
		}
		c.candidates[i] = false
		c.ncand--
		ps := &c.plan.Steps[i]
		if ps.Loop != "" {
			continue // started per item by its loop
		}
		id := Key(ps.ID)
		if ps.ForEach != nil && st.Steps[id] != nil && st.Steps[id].Status == Running {
			c.scheduleLoop(x, ps, true)
			if st.Steps[id].Status != Running {
				busy-- // the loop ended: its slot is free
			}
			continue
		}
		if !c.ready(st, ps) || c.gateClosed(x, ps) {
			continue
		}
		// Human waits, consensus decisions and a pair's reviewers
		// take no slot of max_parallel.
		free := ps.Kind == KindHuman || ps.Kind == KindConsensus || ps.Reviewer
		if !free && busy >= c.plan.MaxParallel {
			held = append(held, i)
			continue
		}
		if c.control == RunOnce && c.onceUsed && ps.Kind != KindHuman {
			held = append(held, i)
			continue
		}
		if ps.Conditional {
			c.evaluating[id] = true
			if !free {
				busy++
			}
			x.effect(Evaluate{Step: id})
			continue
		}
		c.start(x, id, false)
		if !free {
			busy++
		}
	}
	for _, i := range held {
		c.markIndex(i)
	}
	return busy
}
