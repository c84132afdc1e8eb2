package temporal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/afero"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/flow-run/flow/internal/redact"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// The activities of a run, by name.
const (
	ActivityOpen         = "flow.Open"
	ActivityMirror       = "flow.Mirror"
	ActivitySession      = "flow.Session"
	ActivityEvaluate     = "flow.Evaluate"
	ActivityExpand       = "flow.Expand"
	ActivityPrepareHuman = "flow.PrepareHuman"
	ActivityHumanTimeout = "flow.HumanTimeout"
	ActivityHumanWait    = "flow.HumanWait"
	ActivityCleanup      = "flow.Cleanup"
	ActivityGates        = "flow.Gates"
	ActivityArtifacts    = "flow.Artifacts"
)

// LaunchFile keeps, in a run directory on a worker, what the run was
// started with: its workflow's source and how to read it, so that every
// activity parses the same workflow as the run's workflow code.
const LaunchFile = record.TemporalLaunchFile

// OpenRequest opens a run on a worker.
type OpenRequest struct {
	WorkflowID string            `json:"workflow_id"`
	RunID      string            `json:"run_id"`
	Source     Source            `json:"source"`
	Invocation record.Invocation `json:"invocation"`
	Vars       map[string]string `json:"vars,omitempty"`
	Budgets    spec.Budgets      `json:"budgets"`
	// Reopen opens a run again that this worker's repository records (a
	// restarted run): what it is started with now replaces what it was.
	Reopen bool `json:"reopen,omitempty"`
	// Moved, with Reopen, opens a run moved here from another worker:
	// its record here starts from the state it carries.
	Moved *Moved `json:"moved,omitempty"`
}

// Moved is a run moved off a worker that is lost (Restart.Move).
type Moved struct {
	From  Host            `json:"from"`
	State json.RawMessage `json:"state"`
}

// MirrorRequest hands a worker events to mirror.
type MirrorRequest struct {
	RunID  string       `json:"run_id"`
	Events []core.Event `json:"events"`
	Final  bool         `json:"final"`
}

// SessionRequest runs a step's session.
type SessionRequest struct {
	RunID string            `json:"run_id"`
	Start core.StartSession `json:"start"`
}

// SessionReply is how a session went.
type SessionReply struct {
	PID  *core.SessionPID `json:"pid,omitempty"`
	Done core.SessionDone `json:"done"`
	// Tail is the end of the session's log.
	Tail *LogTail `json:"tail,omitempty"`
	// HandedBack, when set, says that the worker stopped before the
	// session ended and gave it back: the session did not end, and its
	// step runs again on another worker.
	HandedBack *HandBack `json:"handed_back,omitempty"`
}

// HandBack is a session a worker gave back to its run when it stopped
// (flow worker, SIGTERM): the worker and why.
type HandBack struct {
	Host   string `json:"host"`
	Reason string `json:"reason"`
}

// StepRequest names a step of a run.
type StepRequest struct {
	RunID string       `json:"run_id"`
	Step  core.StepKey `json:"step"`
}

// WhenResultReply answers ActivityEvaluate.
type WhenResultReply struct {
	Result core.WhenResult `json:"result"`
}

// ItemsReply answers ActivityExpand.
type ItemsReply struct {
	Result core.ItemsResult `json:"result"`
}

// PrepareRequest prepares a human step's wait.
type PrepareRequest struct {
	RunID   string            `json:"run_id"`
	Prepare core.PrepareHuman `json:"prepare"`
}

// CleanupRequest runs the workflow's cleanup session.
type CleanupRequest struct {
	RunID   string            `json:"run_id"`
	Cleanup core.StartCleanup `json:"cleanup"`
}

// GatesRequest reads a run's gate-state file on its worker; a relative
// path is taken from the worker's repository.
type GatesRequest struct {
	RunID string `json:"run_id"`
	Path  string `json:"path"`
	// Compat is the workflow's format when it is not flow's: the file
	// is read by that format's rules (record.ReadGateFileAs).
	Compat string `json:"compat,omitempty"`
}

// GatesReply is the gates of the file and whether each is open; Err,
// when set, says why the file could not be read, and the gates then
// are not to change.
type GatesReply struct {
	Gates map[string]bool `json:"gates"`
	Err   string          `json:"err,omitempty"`
}

// ArtifactsRequest asks a run's worker which artifacts of the steps a
// restart at StartAt keeps are missing from its checkout: the run's
// workflow is parsed from Source, its state is State.
type ArtifactsRequest struct {
	RunID      string            `json:"run_id"`
	Source     Source            `json:"source"`
	Invocation record.Invocation `json:"invocation"`
	State      json.RawMessage   `json:"state"`
	StartAt    core.StepKey      `json:"start_at"`
}

// ArtifactsReply lists the missing artifacts, and the worker that
// looked.
type ArtifactsReply struct {
	Missing []spec.MissingArtifact `json:"missing"`
	Host    string                 `json:"host"`
}

// Activities are a worker's activities: they perform the effects of
// runs in its repository with the runner's own code (local.Remote),
// and mirror their records.
type Activities struct {
	// Runner performs the effects: its FS, clock, process starter,
	// environment and kill grace are the worker's.
	Runner *local.Runner
	// Repo is the worker's repository (absolute).
	Repo string
	// Host names the worker; Queue is the task queue that reaches it:
	// its own, or the shared one when the workers share the repository.
	Host  string
	Queue string
	// Shared says that the workers share the repository: any of them
	// may perform any run's effects.
	Shared bool
	// HeartbeatEvery is how often a session's activity beats with the
	// tail of its log; 0 means 10 s.
	HeartbeatEvery time.Duration
	// Slots is how many activities the worker runs at once; 0 means
	// the SDK's default (1,000).
	Slots int
	// Log receives the worker's own lines: sessions killed, drained,
	// handed back. Nil discards them.
	Log io.Writer

	mirrors local.Mirrors
	mu      sync.Mutex
	// opened are the runs this worker has read the launch of, by
	// directory.
	opened map[string]opened
	// running are the sessions running on this worker, with what ends
	// each (track).
	running map[SessionID]context.CancelCauseFunc
	// drained is the reason sessions are handed back, once the worker
	// has been asked to stop.
	drained string
}

// opened is a run's launch as a worker read it, and its workflow.
type opened struct {
	launch launch
	wf     *config.Workflow
	// secrets hides the values of the run's secrets on this worker.
	secrets *redact.Redactor
	// mod and size are the launch file's when it was read: a run
	// opened again (restarted) rewrites it.
	mod  time.Time
	size int64
}

// ActivitiesOf returns the activities of a worker in repo that runs
// sessions as s runs local ones (its file system, clock, process
// starter, environment and host), printing to out.
func ActivitiesOf(s *ops.Service, out io.Writer, repo string) *Activities {
	return &Activities{
		// Sessions run sandboxed on a worker as on a local runner
		// (docs/security.md): the Service's sandbox, nil in tests.
		Runner: &local.Runner{FS: s.FS, Clock: s.Clock, Starter: s.Starter, Stdout: out, Environ: s.Environ, Host: s.Host, PID: s.PID,
			Sandbox: s.Sandbox},
		Repo: repo, Host: s.Host, Log: out,
	}
}

// launch is what LaunchFile holds.
type launch struct {
	WorkflowID string            `json:"workflow_id"`
	Source     Source            `json:"source"`
	Invocation record.Invocation `json:"invocation"`
	Vars       map[string]string `json:"vars,omitempty"`
	Budgets    spec.Budgets      `json:"budgets"`
}

// Register names the activities for a worker.
func (a *Activities) Register(reg interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}) {
	reg.RegisterActivityWithOptions(a.Open, activity.RegisterOptions{Name: ActivityOpen})
	reg.RegisterActivityWithOptions(a.Mirror, activity.RegisterOptions{Name: ActivityMirror})
	reg.RegisterActivityWithOptions(a.Session, activity.RegisterOptions{Name: ActivitySession})
	reg.RegisterActivityWithOptions(a.Evaluate, activity.RegisterOptions{Name: ActivityEvaluate})
	reg.RegisterActivityWithOptions(a.Expand, activity.RegisterOptions{Name: ActivityExpand})
	reg.RegisterActivityWithOptions(a.PrepareHuman, activity.RegisterOptions{Name: ActivityPrepareHuman})
	reg.RegisterActivityWithOptions(a.HumanTimeout, activity.RegisterOptions{Name: ActivityHumanTimeout})
	reg.RegisterActivityWithOptions(a.HumanWait, activity.RegisterOptions{Name: ActivityHumanWait})
	reg.RegisterActivityWithOptions(a.Cleanup, activity.RegisterOptions{Name: ActivityCleanup})
	reg.RegisterActivityWithOptions(a.Gates, activity.RegisterOptions{Name: ActivityGates})
	reg.RegisterActivityWithOptions(a.Artifacts, activity.RegisterOptions{Name: ActivityArtifacts})
}

// RegisterControl names the activities of the worker's control queue
// (ControlQueue).
func (a *Activities) RegisterControl(reg interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}) {
	reg.RegisterActivityWithOptions(a.Kill, activity.RegisterOptions{Name: ActivityKill})
	reg.RegisterActivityWithOptions(a.Tail, activity.RegisterOptions{Name: ActivityTail})
}

func (a *Activities) fs() afero.Fs { return a.Runner.FS }

// Open makes the run's directory on this worker and keeps what the run
// was started with there. A run id already used by another run is
// refused.
func (a *Activities) Open(ctx context.Context, req OpenRequest) (Host, error) {
	if err := record.CheckRunID(req.RunID); err != nil {
		return Host{}, temporal.NewNonRetryableApplicationError(err.Error(), "refused", nil)
	}
	dir := record.RunDir(a.Repo, req.RunID)
	if req.Moved != nil {
		if err := a.adopt(dir, req.Moved); err != nil {
			return Host{}, err
		}
	} else if req.Reopen {
		if _, err := a.fs().Stat(filepath.Join(dir, record.EventsFile)); err != nil {
			return Host{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s has no record in %s on %s: it cannot go on here", req.RunID, dir, a.Host), "refused", nil)
		}
	} else if prev, err := readLaunch(a.fs(), dir); err == nil {
		if prev.WorkflowID != req.WorkflowID {
			return Host{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s already exists in %s", req.RunID, dir), "refused", nil)
		}
	} else if _, err := a.fs().Stat(filepath.Join(dir, record.EventsFile)); err == nil {
		return Host{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("run %s already exists in %s", req.RunID, dir), "refused", nil)
	}
	wf, err := ParseSource(a.Repo, req.Source, req.Invocation)
	if err != nil {
		return Host{}, temporal.NewNonRetryableApplicationError("the run's workflow does not load: "+err.Error(), "refused", nil)
	}
	b, err := json.Marshal(launch{WorkflowID: req.WorkflowID, Source: req.Source, Invocation: req.Invocation, Vars: req.Vars, Budgets: req.Budgets})
	if err != nil {
		return Host{}, err
	}
	if err := a.fs().MkdirAll(filepath.Join(dir, record.ReportsDir), 0o755); err != nil {
		return Host{}, fmt.Errorf("create run directory: %w", err)
	}
	if err := atomicfile.Replace(a.fs(), filepath.Join(dir, LaunchFile), b, 0o644); err != nil {
		return Host{}, fmt.Errorf("write %s: %w", LaunchFile, err)
	}
	if err := record.WriteLoadedWorkflow(a.fs(), dir, wf); err != nil {
		return Host{}, err
	}
	return Host{Name: a.Host, Repo: a.Repo, Queue: a.Queue}, nil
}

// adopt makes dir the record of a run moved here: unless the record
// here is as new as the state the run carries (a repository the
// workers share), its run_state.json becomes that state, and the events
// mirrored from now on go on after it. The events before it stay in the
// lost worker's record.
func (a *Activities) adopt(dir string, m *Moved) error {
	var st core.State
	if err := json.Unmarshal(m.State, &st); err != nil {
		return temporal.NewNonRetryableApplicationError("read the moved run's state: "+err.Error(), "refused", nil)
	}
	if here, _, err := record.LoadState(a.fs(), dir, false, time.Time{}); err == nil && here.Seq >= st.Seq {
		return nil
	}
	b, err := st.Indented()
	if err != nil {
		return fmt.Errorf("encode the moved run's state: %w", err)
	}
	if err := a.fs().MkdirAll(filepath.Join(dir, record.ReportsDir), 0o755); err != nil {
		return fmt.Errorf("create run directory: %w", err)
	}
	if err := atomicfile.Replace(a.fs(), filepath.Join(dir, record.StateFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", record.StateFile, err)
	}
	return nil
}

func readLaunch(fsys afero.Fs, dir string) (launch, error) {
	var l launch
	b, err := afero.ReadFile(fsys, filepath.Join(dir, LaunchFile))
	if err != nil {
		return l, err
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return l, fmt.Errorf("read %s: %w", LaunchFile, err)
	}
	return l, nil
}

// Mirror appends the events to the run's record on this worker, with
// the run's secrets hidden as the local driver hides them in its
// record: what the workflow makes of a signal (a decision's inputs and
// reason) reaches no activity before it is mirrored. A run whose launch
// is not on this worker (one moved here from a lost worker whose
// repository was not shared) has no workflow here to name its secrets
// by, and is mirrored as it comes.
func (a *Activities) Mirror(ctx context.Context, req MirrorRequest) error {
	if err := record.CheckRunID(req.RunID); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "refused", nil)
	}
	dir := record.RunDir(a.Repo, req.RunID)
	events := req.Events
	if o, err := a.launched(req.RunID, dir); err == nil {
		events = make([]core.Event, len(req.Events))
		for i, e := range req.Events {
			e.Data = o.secrets.Bytes(e.Data)
			events[i] = e
		}
	}
	a.mu.Lock()
	if a.mirrors.FS == nil {
		a.mirrors.FS, a.mirrors.Shared = a.fs(), a.Shared
	}
	a.mu.Unlock()
	return a.mirrors.Append(dir, events, req.Final)
}

// remoteRun is a run opened on this worker, and the values of its
// secrets, which nothing it returns to the run's workflow may carry.
type remoteRun struct {
	*local.Remote
	secrets *redact.Redactor
}

// Secrets returns what hides the run's secrets.
func (r remoteRun) Secrets() *redact.Redactor { return r.secrets }

// launched returns the launch of the run in dir as this worker read
// it, read again when the run was opened again since.
func (a *Activities) launched(runID, dir string) (opened, error) {
	fi, err := a.fs().Stat(filepath.Join(dir, LaunchFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return opened{}, fmt.Errorf("run %s was not opened on %s (no %s): is the worker's repository shared? (flow worker --shared-repo)", runID, a.Host, LaunchFile)
		}
		return opened{}, err
	}
	a.mu.Lock()
	if a.opened == nil {
		a.opened = map[string]opened{}
	}
	o, ok := a.opened[dir]
	a.mu.Unlock()
	if ok && o.mod.Equal(fi.ModTime()) && o.size == fi.Size() {
		return o, nil
	}
	o = opened{mod: fi.ModTime(), size: fi.Size()}
	if o.launch, err = readLaunch(a.fs(), dir); err != nil {
		return opened{}, err
	}
	if o.wf, err = ParseSource(a.Repo, o.launch.Source, o.launch.Invocation); err != nil {
		return opened{}, temporal.NewNonRetryableApplicationError("the run's workflow does not load: "+err.Error(), "refused", nil)
	}
	// The secrets are those the local driver hides: the worker's
	// environment's and the run's --env, by the workflow's names.
	o.secrets = spec.Secrets(o.wf, slices.Concat(a.Runner.Environ, o.launch.Invocation.Env))
	a.mu.Lock()
	a.opened[dir] = o
	a.mu.Unlock()
	return o, nil
}

// remote opens the run on this worker.
func (a *Activities) remote(runID string) (remoteRun, error) {
	if err := record.CheckRunID(runID); err != nil {
		return remoteRun{}, temporal.NewNonRetryableApplicationError(err.Error(), "refused", nil)
	}
	o, err := a.launched(runID, record.RunDir(a.Repo, runID))
	if err != nil {
		return remoteRun{}, err
	}
	l := o.launch
	m, err := a.Runner.OpenRemote(spec.Options{Workflow: o.wf, Repo: a.Repo, RunID: runID, Resume: true, Invocation: l.Invocation, Budgets: l.Budgets})
	if err != nil {
		return remoteRun{}, err
	}
	return remoteRun{Remote: m, secrets: o.secrets}, nil
}

// Session runs a step's session, beating with the tail of its log.
// The session ends early when the run's workflow sends a kill
// (ActivityKill) or when the worker, asked to stop, hands it back: its
// reply then says so (HandedBack) and the run runs it again elsewhere.
// What the reply carries has the secrets of the worker's environment
// hidden, as the local driver hides them in its record.
func (a *Activities) Session(ctx context.Context, req SessionRequest) (SessionReply, error) {
	m, err := a.remote(req.RunID)
	if err != nil {
		return SessionReply{}, err
	}
	every := a.HeartbeatEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	// Three beats at least within the run's heartbeat timeout
	// (--heartbeat-timeout), whatever the worker's own pace.
	if ht := activity.GetInfo(ctx).HeartbeatTimeout; ht > 0 && ht/3 < every {
		every = ht / 3
	}
	sctx, end := context.WithCancelCause(ctx)
	defer end(nil)
	defer a.track(sessionOf(req.RunID, req.Start), end)()
	stop := make(chan struct{})
	defer close(stop)
	if a.Shared {
		a.watchKill(sessionOf(req.RunID, req.Start), end, stop)
	}
	log := m.LogPath(req.Start)
	// Each beat carries the session's process, so that flow status
	// shows its pid while it runs; the first goes as it starts.
	var running atomic.Int64
	beat := func() {
		t := a.tail(req.Start, log)
		t.PID = int(running.Load())
		activity.RecordHeartbeat(ctx, t)
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				beat()
			}
		}
	}()
	pid, done := m.Session(sctx, req.Start, func(p core.SessionPID) {
		running.Store(int64(p.PID))
		beat()
	})
	if cause := context.Cause(sctx); done.Interrupted && (errors.Is(cause, errHandedBack) || errors.Is(cause, worker.ErrWorkerShutdown)) {
		return SessionReply{HandedBack: &HandBack{Host: a.Host, Reason: a.drainReason()}}, nil
	}
	tail := a.tail(req.Start, log)
	return hide(m.Secrets(), SessionReply{PID: pid, Done: done, Tail: &tail}), nil
}

// drainReason says why this worker hands its sessions back.
func (a *Activities) drainReason() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.drained != "" {
		return a.drained
	}
	return "the worker stopped"
}

// hide returns v with the values r hides replaced, as they are in
// everything the run records: v goes into the run's history. A value
// that no longer decodes once hidden (a secret that spans JSON syntax)
// is returned as it was.
func hide[T any](r *redact.Redactor, v T) T {
	if r == nil {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	h := r.Bytes(b)
	if bytes.Equal(h, b) {
		return v
	}
	var out T
	if err := json.Unmarshal(h, &out); err != nil {
		return v
	}
	return out
}

// tail reads the end of a session's log (at most TailBytes).
func (a *Activities) tail(e core.StartSession, log string) LogTail {
	t := LogTail{Step: e.Step, Iteration: e.Iteration, Attempt: e.Attempt, Host: a.Host, Log: log}
	// The size is the one the tail ends at, not the file's a moment
	// before or after: a follower prints what two beats' sizes differ
	// by (FollowLogs).
	t.Tail, t.Size = record.ReadTailSize(a.fs(), log, TailBytes)
	return t
}

// Evaluate evaluates a step's when and auto_approve.
func (a *Activities) Evaluate(ctx context.Context, req StepRequest) (WhenResultReply, error) {
	m, err := a.remote(req.RunID)
	if err != nil {
		return WhenResultReply{}, err
	}
	return hide(m.Secrets(), WhenResultReply{Result: m.Evaluate(req.Step)}), nil
}

// Expand evaluates a loop step's items.
func (a *Activities) Expand(ctx context.Context, req StepRequest) (ItemsReply, error) {
	m, err := a.remote(req.RunID)
	if err != nil {
		return ItemsReply{}, err
	}
	return hide(m.Secrets(), ItemsReply{Result: m.ExpandItems(req.Step)}), nil
}

// PrepareHuman names the place a human step's decision goes.
func (a *Activities) PrepareHuman(ctx context.Context, req PrepareRequest) (core.HumanReady, error) {
	m, err := a.remote(req.RunID)
	if err != nil {
		return core.HumanReady{}, err
	}
	return m.PrepareHuman(req.Prepare)
}

// HumanTimeout evaluates a human step's timeout given as an
// expression; one that cannot be evaluated sets no timeout. Runs
// recorded before HumanWait (versionHumanWait) replay with it.
func (a *Activities) HumanTimeout(ctx context.Context, req StepRequest) (time.Duration, error) {
	m, err := a.remote(req.RunID)
	if err != nil {
		return 0, err
	}
	d, err := m.HumanTimeout(req.Step)
	if err != nil {
		return 0, nil
	}
	return d, nil
}

// HumanWaitReply answers ActivityHumanWait: the human step's timeout
// (0 for none), or why its message or timeout cannot be evaluated.
type HumanWaitReply struct {
	Timeout time.Duration `json:"timeout,omitempty"`
	Err     string        `json:"error,omitempty"`
}

// HumanWait evaluates what a waiting human step's message and timeout
// need (local.Remote.HumanWait): the step fails when either cannot be
// evaluated, as it does on a local runner.
func (a *Activities) HumanWait(ctx context.Context, req StepRequest) (HumanWaitReply, error) {
	m, err := a.remote(req.RunID)
	if err != nil {
		return HumanWaitReply{}, err
	}
	d, why := m.HumanWait(req.Step)
	return hide(m.Secrets(), HumanWaitReply{Timeout: d, Err: why}), nil
}

// Cleanup runs the workflow's cleanup session.
func (a *Activities) Cleanup(ctx context.Context, req CleanupRequest) (core.CleanupDone, error) {
	m, err := a.remote(req.RunID)
	if err != nil {
		return core.CleanupDone{}, err
	}
	return hide(m.Secrets(), m.Cleanup(ctx, req.Cleanup)), nil
}

// Gates reads the run's gate-state file, as the local driver polls it.
func (a *Activities) Gates(ctx context.Context, req GatesRequest) (GatesReply, error) {
	if err := record.CheckRunID(req.RunID); err != nil {
		return GatesReply{}, temporal.NewNonRetryableApplicationError(err.Error(), "refused", nil)
	}
	path := req.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(a.Repo, path)
	}
	gates, err := record.ReadGateFileAs(a.fs(), path, req.Compat)
	if err != nil {
		return GatesReply{Err: err.Error()}, nil
	}
	return GatesReply{Gates: gates}, nil
}

// Artifacts looks for the artifacts of the steps a restart keeps in
// this worker's checkout, as a local --start-at-step does
// (spec.PlanStartAt).
func (a *Activities) Artifacts(ctx context.Context, req ArtifactsRequest) (ArtifactsReply, error) {
	if err := record.CheckRunID(req.RunID); err != nil {
		return ArtifactsReply{}, temporal.NewNonRetryableApplicationError(err.Error(), "refused", nil)
	}
	wf, err := ParseSource(a.Repo, req.Source, req.Invocation)
	if err != nil {
		return ArtifactsReply{}, temporal.NewNonRetryableApplicationError("the run's workflow does not load: "+err.Error(), "refused", nil)
	}
	var st core.State
	if err := json.Unmarshal(req.State, &st); err != nil {
		return ArtifactsReply{}, temporal.NewNonRetryableApplicationError("read the run's state: "+err.Error(), "refused", nil)
	}
	p, err := spec.PlanStartAt(a.fs(), wf, &st, a.Repo, req.StartAt)
	if err != nil {
		return ArtifactsReply{}, temporal.NewNonRetryableApplicationError("--start-at-step: "+err.Error(), "refused", nil)
	}
	return ArtifactsReply{Missing: p.Missing, Host: a.Host}, nil
}

// Close closes the records the worker still mirrors.
func (a *Activities) Close() error { return a.mirrors.Close() }

// randFraction draws the fraction of a retry's jitter; the workflow
// draws it once, in a SideEffect.
func randFraction() float64 { return rand.Float64() }
