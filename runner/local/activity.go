package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/gates"
	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// This file serves a driver that decides elsewhere (the Temporal
// driver, docs/temporal.md, "Workers"): a worker performs one of the core's effects at a
// time on this machine, exactly as the local driver performs it, in the
// run directory under its repository, whose record the worker mirrors
// (Mirror). The decisions stay with the core that driver runs.

// Remote is a run opened on a worker to perform effects the core
// decided elsewhere: one session, one evaluation, one list of items.
// It reads the run's state from the mirrored record in its directory;
// it appends nothing to it.
type Remote struct {
	x *run
}

// OpenRemote opens the run opts.RunID under opts.Repo, whose record the
// worker mirrors, to perform its effects with the runner's file system,
// clock and process starter. opts.Workflow is the run's workflow.
func (r *Runner) OpenRemote(opts spec.Options) (*Remote, error) {
	rc := *r
	rc.defaults()
	// A remote session runs on the caller's goroutine: its inputs (the
	// session's process) are kept, not sent to a loop.
	rc.Serial = true
	x := &run{r: &rc, opts: opts, wf: opts.Workflow, inputs: make(chan core.Input, 1), stopped: make(chan struct{}),
		outputs: map[core.StepKey]string{}, reports: map[core.StepKey]map[string]any{}, awaiting: map[core.StepKey]bool{}, warned: map[string]string{},
		environ: spec.EnvironMap(rc.Environ)}
	x.setWorkflow(x.wf)
	if err := record.CheckRunID(opts.RunID); err != nil {
		return nil, err
	}
	x.dir = record.RunDir(opts.Repo, opts.RunID)
	x.rec = rc.recordFS(opts.Repo)
	x.names = record.LayoutOf(x.dir, opts.RunID)
	st, _, err := record.LoadState(rc.FS, x.dir, false, rc.Clock.Now())
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", opts.RunID, err)
	}
	x.st = st
	x.names.Gen = st.Generation
	if x.root, err = confine.NewRoot(rc.FS, x.dir); err != nil {
		return nil, fmt.Errorf("open run directory: %w", err)
	}
	plan, err := spec.NewPlan(x.wf, x.budgets(), func(l *config.Limit) (int, error) {
		v, err := l.Expr.Program().Eval(x.env(nil))
		if err != nil {
			return 0, err
		}
		return gates.Int(v)
	})
	if err != nil {
		return nil, fmt.Errorf("resolve budgets: %w", err)
	}
	x.plan = plan
	x.loadCaches()
	return &Remote{x: x}, nil
}

// Session runs the session of a step the core started (StartSession)
// to its end, as the local driver does — its process group, timeouts,
// log, report, signals, gate — and returns what the core is to hear:
// the session's process once it started (nil when none started) and its
// end. Cancelling ctx stops the session (SIGTERM, then SIGKILL after
// the kill grace): its end is then Interrupted.
//
// started, when set, is told the session's process as soon as it has
// started (a driver that reports a running session's pid).
func (m *Remote) Session(ctx context.Context, e core.StartSession, started func(core.SessionPID)) (*core.SessionPID, core.SessionDone) {
	x := m.x
	x.sessCtx = ctx
	x.queue = nil
	x.sessionStarted = started
	defer func() { x.sessionStarted = nil }()
	sr := sessionRun{Step: e.Step, Attempt: e.Attempt, Iteration: e.Iteration,
		LogPath: x.names.Log(e.Step, e.Iteration, e.Attempt), ReportPath: x.names.Report(e.Step)}
	sr = sr.withSession(x.names)
	s := x.stepOf(e.Step)
	if s == nil {
		return nil, core.SessionDone{Step: e.Step, Outcome: core.Outcome{Attempt: e.Attempt}, Invalid: fmt.Sprintf("step %s is not in the workflow", e.Step)}
	}
	facts := &stepFacts{step: e.Step, attempt: e.Attempt, iteration: e.Iteration}
	env := x.env(facts)
	sp, pp, private, err := x.sessionSpec(s, sr, env)
	if err != nil {
		if private != "" {
			_ = x.r.FS.Remove(private)
		}
		return nil, core.SessionDone{Step: e.Step, Outcome: core.Outcome{Attempt: e.Attempt}, Invalid: err.Error()}
	}
	x.serialSession = true
	done := x.session(s, sr, sp, pp, private, env, facts)
	x.serialSession = false
	var pid *core.SessionPID
	for _, in := range x.queue {
		if p, ok := in.(core.SessionPID); ok {
			pid = &p
		}
	}
	x.queue = nil
	return pid, done
}

// Evaluate evaluates a step's when and auto_approve (Evaluate).
func (m *Remote) Evaluate(step core.StepKey) core.WhenResult {
	in, _ := m.x.evaluate(step).(core.WhenResult)
	return in
}

// ExpandItems evaluates a loop step's items (ExpandItems).
func (m *Remote) ExpandItems(step core.StepKey) core.ItemsResult {
	in, _ := m.x.expandItems(step).(core.ItemsResult)
	return in
}

// PrepareHuman names the place a human step's decision goes, and makes
// its directory (PrepareHuman).
func (m *Remote) PrepareHuman(e core.PrepareHuman) (core.HumanReady, error) {
	path := m.x.names.ManualInput(e.Step)
	if err := m.x.rec.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return core.HumanReady{}, fmt.Errorf("create manual inputs directory: %w", err)
	}
	return core.HumanReady{Step: e.Step, Attempt: e.Attempt, ManualInputPath: path}, nil
}

// HumanTimeout evaluates the human.timeout of step (a step or an
// instance's key) as the local driver does when it looks at a wait: 0
// when the step has none.
func (m *Remote) HumanTimeout(step core.StepKey) (time.Duration, error) {
	x := m.x
	s := x.stepOf(step)
	if s == nil || s.Human == nil || s.Human.Timeout == nil {
		return 0, nil
	}
	var env *gates.Env
	if s.Human.Timeout.Expr != nil {
		env = x.env(nil)
	}
	return x.duration(s.Human.Timeout, env)
}

// HumanWait says what a waiting human step needs evaluated, as the
// local driver finds it when the step starts to wait (AwaitHuman): why
// its message or timeout cannot be evaluated, which fails the step, or
// else its timeout (0 for none).
func (m *Remote) HumanWait(step core.StepKey) (time.Duration, string) {
	if why := m.x.humanExprError(step); why != "" {
		return 0, why
	}
	d, err := m.HumanTimeout(step)
	if err != nil {
		return 0, err.Error()
	}
	return d, ""
}

// Cleanup runs the workflow's cleanup session (StartCleanup) to its
// end.
func (m *Remote) Cleanup(ctx context.Context, e core.StartCleanup) core.CleanupDone {
	x := m.x
	x.sessCtx = ctx
	x.queue = nil
	x.cleanupN = e.N
	x.serialSession = true
	x.startCleanup()
	x.sessions.Wait()
	x.serialSession = false
	for _, in := range x.queue {
		if d, ok := in.(core.CleanupDone); ok {
			return d
		}
	}
	return core.CleanupDone{Failed: true, Error: "the cleanup session did not report its end"}
}

// Announcer prints a run's progress from its events as the local
// driver prints it, for a front end that follows a run another engine
// drives: it applies each event to its own copy of the state.
type Announcer struct {
	x *run
}

// NewAnnouncer returns an Announcer for a run of wf that prints to out.
func NewAnnouncer(wf *config.Workflow, opts spec.Options, out io.Writer) *Announcer {
	r := &Runner{Stdout: out}
	r.defaults()
	x := &run{r: r, opts: opts, st: &core.State{}, warned: map[string]string{}, awaiting: map[core.StepKey]bool{}}
	x.wf, x.redact = wf, spec.Secrets(wf, opts.Invocation.Env)
	return &Announcer{x: x}
}

// Event applies e and prints what a person cares about.
func (a *Announcer) Event(e core.Event) error {
	x := a.x
	if e.Seq != 0 && e.Seq <= x.st.Seq {
		return nil
	}
	if err := core.Apply(x.st, e); err != nil {
		return err
	}
	x.st.Seq = e.Seq
	x.announce(e)
	if msg, ok := a.HumanWait(e); ok {
		quoted := " "
		if msg != "" {
			quoted = fmt.Sprintf(": %q ", msg)
		}
		x.printf("%s: waiting on a human%s(flow approve %s %s, or flow reject)\n", e.Step, quoted, x.st.RunID, core.ShellArg(e.Step.String()))
	}
	return nil
}

// HumanWait reports whether e, once applied by Event, left its step
// waiting on a human, and the step's rendered human.message.
func (a *Announcer) HumanWait(e core.Event) (message string, ok bool) {
	if e.Type != core.EvStepWaiting {
		return "", false
	}
	if s := a.x.st.Steps[e.Step]; s == nil || s.Status != core.WaitingOnHuman {
		return "", false
	}
	return a.x.humanMessage(e.Step), true
}

// HumanMessage returns the rendered human.message of step, or "".
func (a *Announcer) HumanMessage(step core.StepKey) string { return a.x.humanMessage(step) }

// State returns the state the events so far make.
func (a *Announcer) State() *core.State { return a.x.st }

// From makes the Announcer follow a run from st, the state its events
// up to st.Seq make: it prints only what follows. A follower that
// attaches to a run in flight starts so.
func (a *Announcer) From(st *core.State) { a.x.st = st }

// Retrying prints that step's next attempt starts after delay, as the
// local driver prints it when it starts the wait.
func (a *Announcer) Retrying(step core.StepKey, delay time.Duration) {
	a.x.printf("%s: retrying in %s\n", step, delay)
}

// Mirrors keeps, on a worker, the record of runs whose events are
// decided elsewhere: each run's events.jsonl, as its driver decided
// them, and its run_state.json, so that flow status, flow logs and jq
// recipes work on the worker as on a local run. The driver's own
// history stays the source of truth. It is safe for concurrent use.
type Mirrors struct {
	FS afero.Fs
	// Shared says that other workers may mirror the same runs (a
	// repository they share): each record is then let go after every
	// append, instead of kept open (and locked) until its run ends.
	Shared bool
	mu     sync.Mutex
	logs   map[string]*eventlog.Log
}

// Append appends to the record of the run in runDir the events it
// lacks (those with a greater Seq than its last), syncs them and
// rewrites run_state.json. A repeated call appends nothing twice. With
// final set, the record is closed: the run has ended.
func (m *Mirrors) Append(runDir string, events []core.Event, final bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.logs == nil {
		m.logs = map[string]*eventlog.Log{}
	}
	log := m.logs[runDir]
	if log == nil {
		l, err := eventlog.Open(m.FS, filepath.Join(runDir, record.EventsFile))
		if err != nil {
			return fmt.Errorf("open events of %s: %w", runDir, err)
		}
		log, m.logs[runDir] = l, l
	}
	fail := func(err error) error {
		_ = log.Close()
		delete(m.logs, runDir)
		return err
	}
	appended := false
	for _, e := range events {
		if e.Seq <= log.LastSeq() {
			continue
		}
		if !appended {
			// The runs index reads the run again (record.TouchState).
			if err := record.TouchState(m.FS, runDir, time.Time{}); err != nil {
				return fail(err)
			}
		}
		if _, err := log.Append(e); err != nil {
			return fail(fmt.Errorf("record %s event: %w", e.Type, err))
		}
		appended = true
	}
	if appended {
		if err := log.Sync(); err != nil {
			return fail(fmt.Errorf("sync events: %w", err))
		}
		st, _, err := record.LoadState(m.FS, runDir, false, time.Time{})
		if err != nil {
			return fail(err)
		}
		if err := record.WriteSnapshot(m.FS, runDir, st); err != nil {
			return fail(err)
		}
		if err := atomicfile.ReplaceWith(m.FS, filepath.Join(runDir, record.SummaryFile), 0o644, func(w io.Writer) error {
			record.WriteSummary(w, st)
			return nil
		}); err != nil {
			return fail(fmt.Errorf("write run summary: %w", err))
		}
	}
	if final || m.Shared {
		delete(m.logs, runDir)
		if err := log.Close(); err != nil && !errors.Is(err, eventlog.ErrBroken) {
			return err
		}
	}
	return nil
}

// Close closes the records still open.
func (m *Mirrors) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for dir, l := range m.logs {
		errs = append(errs, l.Close())
		delete(m.logs, dir)
	}
	return errors.Join(errs...)
}

// LogPath returns where the session of a StartSession writes its log.
func (m *Remote) LogPath(e core.StartSession) string {
	return m.x.names.Log(e.Step, e.Iteration, e.Attempt)
}
