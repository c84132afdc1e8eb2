package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/gates"
	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/internal/gitwork"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/redact"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/internal/safefs"
	"github.com/flow-run/flow/internal/termsafe"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// Runner is the local driver of the decision core: it performs the
// core's effects with an afero.Fs, a clock and a process starter, and
// feeds it what happens. Every side effect goes through its fields.
type Runner struct {
	FS      afero.Fs
	Clock   clock.Clock
	Starter proc.Starter
	// Stdout receives the progress of the run and, when Live is set,
	// the sessions' output with a step prefix.
	Stdout io.Writer
	Live   bool
	// Environ is the environment of the runner (os.Environ()); sessions
	// inherit it.
	Environ []string
	Host    string
	PID     int
	// Alive reports whether the holder of a run's lock still runs.
	Alive func(runlock.Holder) bool
	// SnapshotEvery is how often run_state.json is rewritten while
	// events are appended; 0 means one second. A run whose snapshots
	// are slow to write (thousands of steps) writes them less often, at
	// most one heartbeat apart (snapshotShare).
	SnapshotEvery time.Duration
	// HeartbeatEvery is how often runner.heartbeat_at is refreshed; 0
	// means five seconds.
	HeartbeatEvery time.Duration
	// PollEvery is how often a waiting runner looks at control.json and
	// manual input files; 0 means 250 ms.
	PollEvery time.Duration
	// KillOrphans, when set, kills what is left of the process group of
	// a session whose runner died (proc.KillOrphans).
	KillOrphans func(pgid int) bool
	// KillMarked, when set, kills the processes that carry the marker of
	// a session whose runner died, wherever they are (proc.KillMarked):
	// daemons that left the group.
	KillMarked func(marker string) int
	// Ask, when set, asks a person at the terminal to decide a human
	// step; it blocks until they answer (ok false: no answer, e.g. end
	// of input). Files written by flow approve work alongside it.
	Ask func(runID string, step core.StepKey, message string) (in core.HumanInput, ok bool)
	// KillGrace is how long a session gets between SIGTERM and SIGKILL;
	// 0 means 10 s.
	KillGrace time.Duration
	// OnEvent, when set, is called with each event as it is appended to
	// the run's log (with its seq; secrets hidden), in order, from the
	// runner's loop: flow run --json streams them.
	OnEvent func(core.Event)
	// Serial runs each session to its end when the core starts it,
	// before the next effect, instead of beside the others: for
	// simulated sessions that end at once (flow test), so that which
	// of several parallel sessions ends first never depends on how
	// goroutines are scheduled. The core still schedules as it would:
	// parallel sessions start in the same decision. A Serial run
	// sends no notifications.
	Serial bool
	// Notifier sends the workflow's notifications (notify.go); nil
	// means a notify.Sender over the network and the operating system,
	// in Environ. RunURL, when set, gives the link to a run's page
	// (flow serve --public-url) that notifications carry.
	Notifier Notifier
	RunURL   func(runID, runDir string) string
	// Sandbox, when set, confines the run's sessions and gate checks
	// (sandbox.go); nil runs them unconfined, and a step whose sandbox
	// mode is required fails.
	Sandbox Sandbox
	// TempDir is where a prompt holding a secret is handed to its
	// session, in a private file removed when the session ends; ""
	// means os.TempDir().
	TempDir string
	// Git performs the git side of workspaces (workspace.go); nil
	// means the git binary in PATH, through internal/gitwork.
	Git Git
}

func (r *Runner) defaults() {
	if r.Clock == nil {
		r.Clock = clock.Real()
	}
	if r.Stdout == nil {
		r.Stdout = io.Discard
	}
	if r.SnapshotEvery <= 0 {
		r.SnapshotEvery = time.Second
	}
	if r.HeartbeatEvery <= 0 {
		r.HeartbeatEvery = 5 * time.Second
	}
	if r.PollEvery <= 0 {
		r.PollEvery = 250 * time.Millisecond
	}
	if r.KillGrace <= 0 {
		r.KillGrace = 10 * time.Second
	}
	if r.Alive == nil {
		r.Alive = runlock.ProcessAlive
	}
	if r.TempDir == "" {
		r.TempDir = os.TempDir()
	}
}

// run is one execution of a run by this runner.
type run struct {
	// gates are the gates of the gate-state file as last read; gated is
	// true when a step of the workflow waits on gates.
	gates map[string]bool
	gated bool
	r     *Runner
	opts  spec.Options
	wf    *config.Workflow
	// worktreesOf is the workflow usesWorktrees last looked at, and
	// worktrees what it found: whether any session works in a worktree.
	worktreesOf *config.Workflow
	worktrees   bool
	dir         string
	// rec is the file system the run's record is written through
	// (Runner.recordFS).
	rec afero.Fs
	// The sandbox (sandbox.go): whether the Runner's Sandbox was
	// probed and why it cannot be used; the repository's real path;
	// whether the run warned that sessions run unsandboxed.
	sandboxProbed, sandboxWarned bool
	sandboxErr                   error
	realRepo                     string
	st                           *core.State
	log                          *eventlog.Log
	core                         *core.Core
	plan                         *core.Plan
	lock                         *runlock.Lock
	inputs                       chan core.Input
	queue                        []core.Input
	live                         sync.Mutex
	// lastSnap is when run_state.json was last written and snapCost
	// how long that took; dirty is true when events were applied since.
	lastSnap time.Time
	snapCost time.Duration
	dirty    bool
	// stateOnDisk is true once run_state.json is known to exist.
	stateOnDisk bool
	// outputs and reports cache what expressions may read of finished
	// steps.
	outputs map[core.StepKey]string
	reports map[core.StepKey]map[string]any
	keepOut map[string]bool
	// runWide holds the steps whose expressions read steps.* or run.*.
	runWide map[string]bool
	// digest is the digest of the workflow's canonical form.
	digest   string
	sessions sync.WaitGroup
	awaiting map[core.StepKey]bool
	environ  map[string]string
	cleanupN int
	sessCtx  context.Context
	// stopped is closed when the loop ends.
	stopped chan struct{}
	// pending are events applied to st but not yet appended.
	pending []core.Event
	// held, while hold is set, are the events appended but not yet
	// handed to Runner.OnEvent: the loop hands each of a decision's
	// events over just before it announces it (see drive).
	hold bool
	held []core.Event
	// cacheMu guards outputs and reports, written by session goroutines.
	cacheMu sync.Mutex
	// warned remembers the last warning per waiting step, so that a bad
	// manual input file is reported once, not on every poll.
	warned map[string]string
	// limits are the workflow's size limits, defaults filled in.
	limits config.Limits
	// redact hides the values of the secrets in everything the run
	// writes or prints (nil when there are none).
	redact *redact.Redactor
	// names maps the run's logical names to its files.
	names record.Layout
	// serialSession is true while a Serial session runs on the loop's
	// goroutine: its inputs go straight to the queue.
	serialSession bool
	serialErr     error
	// sessionStarted, when set, is told each session's process as it
	// starts (Remote.Session).
	sessionStarted func(core.SessionPID)
	// root is the run directory, resolved once for confined reads.
	root *confine.Root
	// notices are the run's notifications (notify.go).
	notices *notices
	// trail is what run-summary.md tells beyond the state: the rounds
	// of the steps and why the run stopped (record.Trail).
	trail *record.Trail
	// wfStamp is the workflow file's stamp when the run last loaded it;
	// editPending is true when an edit waits for the sessions in flight
	// to end (reload_waiting.go).
	wfStamp     fileStamp
	editPending bool
	// wspaces are the run's workspaces (workspace.go), set up at first
	// use.
	wspaces *workspaces
	// finished is set when the run finished in this runner: its history
	// line is written, and its workflow's retention applied
	// (retention.go).
	finished bool
}

// Run runs (or resumes) a run until it ends, waits on a human with
// NoWait, or is interrupted through ctx. Errors are failures of flow
// itself (the run record could not be written, the run is held by
// another runner); how the run ended is in Result.
// recordFS returns the file system a run's record in repo is written
// through: on the real disk, one that opens beneath the repository
// following no link, and only regular files (internal/safefs), so that
// a link or a FIFO a session planted in the run directory is refused,
// never followed; any other file system (a test's) as it is.
func (r *Runner) recordFS(repo string) afero.Fs {
	if _, ok := r.FS.(*afero.OsFs); ok {
		return safefs.New(repo)
	}
	return r.FS
}

func (r *Runner) Run(ctx context.Context, opts spec.Options) (res spec.Result, err error) {
	r.defaults()
	x := &run{r: r, opts: opts, wf: opts.Workflow, inputs: make(chan core.Input, 16),
		outputs: map[core.StepKey]string{}, reports: map[core.StepKey]map[string]any{}, awaiting: map[core.StepKey]bool{}, warned: map[string]string{},
		environ: spec.EnvironMap(r.Environ)}
	x.setWorkflow(x.wf)
	x.noteWorkflowStamp()
	if err := x.open(); err != nil {
		_ = x.close()
		return spec.Result{}, err
	}
	defer func() {
		if cerr := x.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if opts.CleanupOnly {
		return x.cleanupOnly(ctx)
	}
	return x.loop(ctx)
}

// open creates or opens the run directory, takes the lock and records
// that this runner took the run.
func (x *run) open() error {
	r, opts := x.r, x.opts
	fsys := r.FS
	x.rec = r.recordFS(opts.Repo)
	now := r.Clock.Now()
	runID := opts.RunID
	if opts.Resume && runID == "" {
		ref, err := record.FindRun(fsys, opts.Repo, "", x.wf.Name)
		if err != nil {
			return err
		}
		runID = ref.ID
	}
	if runID == "" {
		runID = spec.NewRunID(now)
	}
	if err := record.CheckRunID(runID); err != nil {
		return err
	}
	x.dir = record.RunDir(opts.Repo, runID)
	x.names = record.LayoutOf(x.dir, runID)
	exists, err := runBegun(x.rec, filepath.Join(x.dir, record.EventsFile))
	if err != nil {
		return fmt.Errorf("look for run %s: %w", runID, err)
	}
	if opts.Resume && !exists {
		return fmt.Errorf("resume run %s: %w", runID, record.ErrNoRun)
	}
	if !opts.Resume && exists {
		return core.Invalid("run %s already exists in %s; %s, or give another --run-id", runID, x.dir, x.goOn(runID, now))
	}
	if opts.CleanupOnly && !exists {
		return fmt.Errorf("clean up run %s: %w", runID, record.ErrNoRun)
	}
	if exists && opts.StartAt.IsZero() && !opts.CleanupOnly {
		st, err := opts.Read, error(nil)
		if st == nil || st.RunID != runID {
			st, _, err = record.LoadState(x.rec, x.dir, false, now)
		}
		if err == nil {
			if err := core.CheckReopen(x.wf, st, x.opening(now)); err != nil {
				// A finished run is not resumed: nothing is appended, no
				// lock taken. Only a snapshot left behind by a crash at
				// the very end is brought up to date, for the readers of
				// run_state.json.
				if st.Status.Terminal() && !opts.Retry {
					if snap, _, _ := record.ReadSnapshot(x.rec, filepath.Join(x.dir, record.StateFile)); snap == nil || snap.Seq != st.Seq {
						if err := record.WriteSnapshot(x.rec, x.dir, st); err != nil {
							return err
						}
					}
				}
				return err
			}
		}
	}
	// manual_inputs/ and logs/ are made when first written to.
	for _, d := range []string{x.dir, filepath.Join(x.dir, record.ReportsDir)} {
		if err := x.rec.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create run directory: %w", err)
		}
	}
	if x.root, err = confine.NewRoot(x.rec, x.dir); err != nil {
		return fmt.Errorf("open run directory: %w", err)
	}
	holder := runlock.Holder{PID: r.PID, Host: r.Host, StartedAt: now}
	lock, err := runlock.Acquire(x.rec, filepath.Join(x.dir, record.LockFile), holder, r.Alive)
	if err != nil {
		var held *runlock.HeldError
		if errors.As(err, &held) {
			return &record.HeldError{RunID: runID, Holder: held.Holder}
		}
		return fmt.Errorf("lock run %s: %w", runID, err)
	}
	x.lock = lock
	// The lock file is only the first witness: anybody can delete it.
	// The event log refuses a second writer for as long as the first
	// has it open.
	log, err := eventlog.Open(x.rec, filepath.Join(x.dir, record.EventsFile))
	if err != nil {
		var locked *eventlog.LockedError
		if errors.As(err, &locked) {
			return &record.HeldError{RunID: runID, Holder: x.recordedHolder(locked, now)}
		}
		return fmt.Errorf("open events of run %s: %w", runID, err)
	}
	x.log = log
	o := x.opening(now)
	if exists {
		st, damaged, err := record.LoadState(x.rec, x.dir, true, now)
		if err != nil {
			return fmt.Errorf("load run %s: %w", runID, err)
		}
		if err := core.CheckReopen(x.wf, st, o); err != nil && !opts.CleanupOnly {
			return err
		}
		if err := x.checkRecordedRunner(st, now); err != nil {
			return err
		}
		x.st = st
		if err := x.refuseWeakening(runID); err != nil {
			return err
		}
		// The summary tells the run's whole story: its earlier events
		// are folded once, the new ones as they are appended.
		if t, terr := record.ReadTrail(x.rec, x.dir); terr == nil {
			x.trail = t
		} else {
			x.trail = record.NewTrail()
		}
		if damaged {
			x.warn(core.StepKey{}, "run_state.json was damaged or disagreed with events.jsonl; rebuilt from events.jsonl and kept aside")
		}
		x.killLeftovers()
		o.State, o.Vars = x.st, core.RunVars(x.wf.Vars, x.st)
		if x.st.RepoDir != opts.Repo {
			o.Runner.RepoDir, o.Runner.ReportsDir, o.Runner.ManualInputsDir = opts.Repo, filepath.Join(x.dir, record.ReportsDir), filepath.Join(x.dir, record.InputsDir)
		}
	} else {
		x.trail = record.NewTrail()
		o.Created = record.Created(x.wf, opts.Repo, runID, opts.Vars)
		o.Created.WorkflowFile, o.Created.WorkflowDigest = absPath(x.wf.File), x.digest
	}
	var evs []core.Event
	if opts.CleanupOnly {
		// A finished run is not reopened: the runner only says it took
		// the run, for its one cleanup session.
		x.emit(newEvent(now, core.EvRunnerStarted, core.StepKey{}, o.Runner))
	} else {
		st, opened, err := core.Open(x.wf, o)
		if err != nil {
			return err
		}
		x.st, evs = st, opened
		x.queueEvents(evs)
	}
	if changed := x.announceOpening(evs); !exists || changed {
		if err := x.writeWorkflowJSON(); err != nil {
			return err
		}
	}
	if err := x.writeInvocation(); err != nil {
		return err
	}
	if err := x.ignoreRecord(); err != nil {
		x.warn(core.StepKey{}, err.Error())
	}
	// Sessions of this runner are named in the run's generation.
	x.names.Gen = x.st.Generation
	// The snapshot is about to be behind the log: the runs index must
	// read the run again (record.TouchState).
	if err := record.TouchState(x.rec, x.dir, now); err != nil {
		return err
	}
	// Nothing has run yet: the record needs no sync, and no snapshot
	// (readers replay the events) until the first one is due.
	x.lastSnap = now
	if err := x.persist(false); err != nil {
		return err
	}
	plan, err := spec.NewPlan(x.wf, x.budgets(), func(l *config.Limit) (int, error) {
		v, err := l.Expr.Program().Eval(x.env(nil))
		if err != nil {
			return 0, err
		}
		return gates.Int(v)
	})
	if err != nil {
		return fmt.Errorf("resolve budgets: %w", err)
	}
	x.plan = plan
	x.core = core.NewCore(plan)
	x.core.HideSecrets(x.redact)
	x.loadCaches()
	return nil
}

// goOn says how to go on with run id, which flow run was asked to start
// again: what the run's state allows — resume an unfinished run, retry
// a failed one, restart a finished one at a step.
func (x *run) goOn(id string, now time.Time) string {
	st, _, err := record.LoadState(x.rec, x.dir, false, now)
	restart := fmt.Sprintf("to run steps of it again: flow run %s --run-id %s --start-at-step STEP", core.ShellArg(x.wf.File), id)
	switch {
	case err != nil || st == nil:
		return "flow resume " + id + " goes on with it"
	case st.Status == core.RunFailed:
		return fmt.Sprintf("it failed; to run its failed steps again: flow retry %s; %s", id, restart)
	case st.Status.Terminal():
		return fmt.Sprintf("it has %s; %s", st.Status, restart)
	}
	return fmt.Sprintf("it is %s; go on with it: flow resume %s", st.Status, id)
}

// ignoreRecord writes <repo>/.agents/.gitignore, which keeps flow's
// state (the run records, the worktrees, the ledger, the history) out
// of git — so that a session's git add -A commits none of it — when
// there is none; one there is the repository's, and left as it is.
// .agents/prompts/ is never listed: agent_orchestrator's prompts are
// the repository's own files.
func (x *run) ignoreRecord() error {
	path := filepath.Join(x.opts.Repo, filepath.FromSlash(gitwork.IgnoreFile))
	if _, err := x.rec.Stat(path); !errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	return gitwork.EnsureIgnore(x.rec, x.opts.Repo)
}

// killLeftovers kills what the sessions of a dead runner on this host
// left running: they must not race the session that runs again.
func (x *run) killLeftovers() {
	r := x.r
	if x.st.Runner == nil || x.st.Runner.Host != r.Host {
		return
	}
	for _, id := range x.st.StepOrder {
		s := x.st.Steps[id]
		if s == nil || s.Status != core.Running {
			continue
		}
		killed := s.PID > 0 && r.KillOrphans != nil && r.KillOrphans(s.PID)
		if s.SessionMarker != "" && r.KillMarked != nil && r.KillMarked(s.SessionMarker) > 0 {
			killed = true
		}
		if killed {
			x.printf("%s: killed processes left by the dead runner's session (group %d)\n", id, s.PID)
		}
	}
}

// opening is what the runner asks of the lifecycle (core.Open) at
// now: the run's state and vars are filled in once it is read.
func (x *run) opening(now time.Time) core.Opening {
	opts := x.opts
	return core.Opening{
		Now: now, Digest: x.digest, Secrets: x.redact,
		Runner:  core.RunnerStarted{PID: x.r.PID, Host: x.r.Host, By: opts.By},
		StartAt: opts.StartAt, Retry: opts.Retry,
		MaxIterations: opts.Budgets.MaxIterations, ForceMaxIterations: opts.Budgets.ForceMaxIterations,
		Raise: opts.Budgets.Raise,
	}
}

// announceOpening prints what the opening events changed in the
// workflow, and reports whether its workflow changed.
func (x *run) announceOpening(evs []core.Event) (changed bool) {
	for _, e := range evs {
		switch e.Type {
		case core.EvStepAdded, core.EvStepRemoved:
			x.announce(e)
		case core.EvWorkflowChanged:
			var wc core.WorkflowChanged
			_ = jsonUnmarshal(e.Data, &wc)
			x.printf("workflow changed since the run last ran (%s -> %s)\n", short(wc.From), short(wc.To))
			changed = true
		}
	}
	return changed
}

// budgets returns the run's budget overrides: the command line's, with
// the cost, token and session budgets raised so far in the run.
func (x *run) budgets() spec.Budgets {
	b := x.opts.Budgets
	if r := x.st.BudgetRaised; r != nil {
		b.Raise = *r
	}
	return b
}

// checkRecordedRunner refuses to take over a run whose record names
// another runner that is still alive and beating: the lock file is not
// the only witness, since anybody can delete it. A runner that ended
// (its process is gone) or stopped beating more than three heartbeats
// ago (stale) may be taken over.
func (x *run) checkRecordedRunner(st *core.State, now time.Time) error {
	rn := st.Runner
	if rn == nil || rn.HeartbeatAt == nil || (rn.PID == x.r.PID && rn.Host == x.r.Host) {
		return nil
	}
	if st.Status != core.RunRunning && st.Status != core.RunPending {
		return nil // a runner that paused, waited or was interrupted has let go
	}
	if now.Sub(rn.HeartbeatAt.Time) >= 3*x.r.HeartbeatEvery {
		return nil
	}
	h := runlock.Holder{PID: rn.PID, Host: rn.Host}
	if rn.StartedAt != nil {
		h.StartedAt = rn.StartedAt.Time
	}
	if !x.r.Alive(h) {
		return nil
	}
	return &record.HeldError{RunID: st.RunID, Holder: h}
}

// recordedHolder names the runner that holds a run's event log: the one
// the log's lock names, or else the one the record names.
func (x *run) recordedHolder(locked *eventlog.LockedError, now time.Time) runlock.Holder {
	h := runlock.Holder{PID: locked.PID, Host: locked.Host}
	if h.PID == 0 {
		if st, _, err := record.LoadState(x.r.FS, x.dir, false, now); st != nil && err == nil && st.Runner != nil {
			h.PID, h.Host = st.Runner.PID, st.Runner.Host
			if st.Runner.StartedAt != nil {
				h.StartedAt = st.Runner.StartedAt.Time
			}
		}
	}
	return h
}

// setWorkflow makes wf the run's workflow, with what is derived from it.
func (x *run) setWorkflow(wf *config.Workflow) {
	x.wf = wf
	x.keepOut, x.runWide = sourceRefs(wf)
	x.limits = wf.Limits()
	// --env NAME=value pairs are the sessions' environment too: a
	// secret-named one is hidden like one of the runner's.
	x.redact = spec.Secrets(wf, slices.Concat(x.r.Environ, x.opts.Invocation.Env))
	x.digest = wf.Digest()
	x.gated = hasGates(wf)
}

// reload takes the workflow file as it is now, for a paused run that
// goes on (docs/architecture.md, "Shared tables": edits are picked up): when it changed, its new
// steps, vars and limits are recorded (reconcileWorkflow) and a new core
// over the new plan replaces the old one. An edit that does not load is
// an error, and changes nothing.
func (x *run) reload() (changed bool, err error) {
	wf, err := config.LoadWith(x.r.FS, x.wf.File, x.opts.Invocation.LoadOptions(x.opts.Repo))
	if err != nil {
		return false, err
	}
	if wf.Digest() == x.digest {
		return false, nil
	}
	if !x.opts.AcceptEdits {
		weak, err := x.weakenings(wf)
		if err != nil {
			return false, err
		}
		if len(weak) > 0 {
			return false, &weakenedError{weak: weak}
		}
	}
	plan, err := spec.NewPlan(wf, x.budgets(), func(l *config.Limit) (int, error) {
		v, err := l.Expr.Program().Eval(x.env(nil))
		if err != nil {
			return 0, err
		}
		return gates.Int(v)
	})
	if err != nil {
		return false, fmt.Errorf("resolve budgets: %w", err)
	}
	x.setWorkflow(wf)
	x.noteWorkflowStamp()
	o := x.opening(x.r.Clock.Now())
	o.State, o.Vars = x.st, core.RunVars(x.wf.Vars, x.st)
	evs := core.Reconcile(wf, o)
	x.queueEvents(evs)
	if x.announceOpening(evs) {
		_ = x.writeWorkflowJSON()
	}
	x.plan = plan
	x.core = core.NewCore(plan)
	x.core.HideSecrets(x.redact)
	return true, nil
}

// runBegun reports whether a run's event log holds anything. A runner
// killed after creating the log but before its first append leaves it
// empty: no run began there, and flow run may begin one.
func runBegun(fsys afero.Fs, path string) (bool, error) {
	fi, err := fsys.Stat(path)
	if errors.Is(err, iofs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return fi.Size() > 0, nil
}

func short(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// warn records a warning event and prints it.
func (x *run) warn(step core.StepKey, msg string) {
	e := newEvent(x.r.Clock.Now(), core.EvWarning, step, core.Note{Message: msg})
	x.emit(e)
	x.announce(e)
}

// emit appends an event to the log and applies it, secrets hidden.
func (x *run) emit(e core.Event) {
	e.Data = x.redact.Bytes(e.Data)
	if err := core.Apply(x.st, e); err != nil {
		panic(err) // events built here always apply
	}
	x.queueEvents([]core.Event{e})
}

// queueEvents takes events already applied to the state, to be appended
// to the log by the next flush.
func (x *run) queueEvents(evs []core.Event) {
	x.pending = append(x.pending, evs...)
	x.dirty = true
}

// close releases the lock and the event log.
func (x *run) close() error {
	var errs []error
	if x.log != nil {
		errs = append(errs, x.log.Close())
	}
	if x.lock != nil {
		// A lock file removed (or taken) behind the runner's back has
		// nothing left to release; the event log kept the run single.
		if err := x.lock.Release(); !errors.Is(err, runlock.ErrNotHeld) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// persist appends the pending events, syncing them when sync is set,
// and rewrites the snapshot when it is due (see snapshotEvery).
func (x *run) persist(sync bool) error {
	if err := x.flush(); err != nil {
		return err
	}
	if sync {
		if err := x.log.Sync(); err != nil {
			return fmt.Errorf("sync events: %w", err)
		}
	}
	now := x.r.Clock.Now()
	if x.dirty && (x.lastSnap.IsZero() || now.Sub(x.lastSnap) >= x.snapshotEvery()) {
		return x.snapshot()
	}
	return nil
}

// snapshotShare bounds the share of a run's time spent writing
// snapshots: after a snapshot that took d, the next one waits at least
// snapshotShare times d. A snapshot is O(steps), so a run of thousands
// of short steps would otherwise spend ever more of its time rewriting
// them; events.jsonl is the truth, and readers apply the events a
// snapshot lacks. What a snapshot costs is more than the time it takes
// (its pages are written back while the next steps sync their events,
// its encoding feeds the collector): at 25, a 5,000-step run of `true`
// was 5–7% slower than at 200 (bench/README.md). From a few thousand
// steps on, the heartbeat sets the pace instead (see beat).
const snapshotShare = 100

// snapshotEvery is how long the snapshot waits after the last one:
// SnapshotEvery, or longer when snapshots are slow (snapshotShare), but
// never longer than a heartbeat, which readers judge the runner by.
func (x *run) snapshotEvery() time.Duration {
	every := x.r.SnapshotEvery
	if d := snapshotShare * x.snapCost; d > every {
		every = min(d, max(x.r.HeartbeatEvery, x.r.SnapshotEvery))
	}
	return every
}

// beat records a heartbeat. The snapshot that carries it is written at
// once when the last one is half a heartbeat old, else when it is next
// due: on disk, a live runner's heartbeat is never much more than one
// heartbeat old.
func (x *run) beat(now time.Time) error {
	if x.st.Runner != nil {
		t := core.Time{Time: now.UTC()}
		x.st.Runner.HeartbeatAt = &t
	}
	x.dirty = true
	if now.Sub(x.lastSnap) >= x.r.HeartbeatEvery/2 {
		return x.snapshot()
	}
	return nil
}

// flush appends the pending events.
func (x *run) flush() error {
	if len(x.pending) == 0 {
		return nil
	}
	got, err := x.log.AppendAll(x.pending)
	if err != nil {
		return fmt.Errorf("record %s event: %w", x.pending[0].Type, err)
	}
	x.st.Seq = got[len(got)-1].Seq
	if x.trail != nil {
		for _, e := range got {
			x.trail.Add(e)
		}
	}
	switch {
	case x.r.OnEvent == nil:
	case x.hold:
		x.held = append(x.held, got...)
	default:
		for _, e := range got {
			x.r.OnEvent(e)
		}
	}
	x.pending = x.pending[:0]
	return nil
}

// snapshot writes run_state.json and run-summary.md now. Pending events
// are appended first: the snapshot never runs ahead of the log. Both
// are written as they are encoded, a step at a time, not built whole in
// memory first.
func (x *run) snapshot() error {
	if err := x.flush(); err != nil {
		return err
	}
	start := x.r.Clock.Now()
	if err := x.writeState(); err != nil {
		return err
	}
	err := atomicfile.ReplaceWith(x.rec, filepath.Join(x.dir, record.SummaryFile), 0o644, func(w io.Writer) error {
		record.WriteSummaryTrail(w, x.st, x.trail)
		return nil
	})
	if err != nil {
		return fmt.Errorf("write run summary: %w", err)
	}
	x.lastSnap = x.r.Clock.Now()
	x.snapCost = x.lastSnap.Sub(start)
	x.dirty = false
	return nil
}

// writeState writes run_state.json. It is replaced atomically but not
// synced: events.jsonl, synced, is the truth, and a snapshot a crash of
// the machine damaged is rebuilt from it (docs/architecture.md, "The record"); its two syncs
// cost half a millisecond.
func (x *run) writeState() error {
	err := atomicfile.ReplaceWith(x.rec, filepath.Join(x.dir, record.StateFile), 0o644, func(w io.Writer) error {
		if err := x.st.WriteIndented(w); err != nil {
			return err
		}
		_, err := w.Write([]byte{'\n'})
		return err
	})
	if err != nil {
		return fmt.Errorf("write run state: %w", err)
	}
	x.stateOnDisk = true
	return nil
}

// ensureState writes run_state.json before a session starts when the
// run has none yet: sessions are given its path ($FLOW_STATE_PATH) and
// may read it at once, while a new run's first snapshot is otherwise
// not due for a second. Later snapshots keep their own pace (the file
// may lag events.jsonl by up to one, docs/architecture.md, "The record").
func (x *run) ensureState() error {
	if x.stateOnDisk {
		return nil
	}
	if _, err := x.rec.Stat(filepath.Join(x.dir, record.StateFile)); err == nil {
		x.stateOnDisk = true
		return nil
	}
	if err := x.flush(); err != nil {
		return err
	}
	return x.writeState()
}

func (x *run) writeWorkflowJSON() error {
	return record.WriteLoadedWorkflowAt(x.rec, filepath.Join(x.dir, record.LoadedWorkflowFile), absPath(x.wf.File), x.digest, x.wf)
}

func (x *run) printf(format string, args ...any) {
	// What a session or its report wrote (a reason, an error's last
	// lines of output) must not act on the terminal.
	s := termsafe.Escape(x.redact.String(fmt.Sprintf(format, args...)))
	x.live.Lock()
	io.WriteString(x.r.Stdout, s)
	x.live.Unlock()
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}
