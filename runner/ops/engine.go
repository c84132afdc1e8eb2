package ops

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// Engine is where runs run — this machine (Local) or a Temporal
// cluster (package temporal) — and every operation on them. Front ends
// (the command line, flow serve, the CI reporters) call an Engine and
// never know which one it is; an operation an engine cannot do returns
// an error that errors.Is ErrUnsupported, naming it
// (docs/architecture.md, "Layers").
type Engine interface {
	// Name is "local" or "temporal".
	Name() string
	// Run runs (or resumes) the run opts describes until it ends,
	// waits on a human with NoWait, or ctx is cancelled. Its errors are
	// failures of flow itself, with their exit code for CodeOf (a
	// run held by a live runner is ExitHeld); how the run ended is in
	// the result.
	Run(ctx context.Context, opts spec.Options, att Attach) (spec.Result, error)
	// Restart prepares the launch that makes a recorded run go on:
	// resumed, retried, or restarted at a step.
	Restart(ctx context.Context, req RestartRequest) (*Launch, error)
	// Newest returns the id of the most recently active run of repo (of
	// the workflow named workflow, when it is not ""), or "" when there
	// is none.
	Newest(ctx context.Context, repo, workflow string) (string, error)
	// Runs lists the runs of repo (a Temporal engine's: the runs on its
	// server, whatever repo), newest first, as flow runs lists them.
	Runs(ctx context.Context, repo string) (RunList, error)
	// Status returns a run's status (the newest run's when runID is "").
	Status(ctx context.Context, repo, runID string) (Status, error)
	// Watch calls fn with a run's status as it changes, until the run
	// is over or ctx is cancelled (Service.Watch).
	Watch(ctx context.Context, repo, runID string, opts WatchOptions, fn func(Update) error) error
	// Logs writes the output of a step's sessions to out, and notes
	// about it (what is left out, where the rest is) to notes; with
	// req.Follow it follows the latest session until it ends.
	Logs(ctx context.Context, req LogsRequest, out, notes io.Writer) error
	// Decide records a human's decision on a waiting step.
	Decide(ctx context.Context, req DecideRequest) (Decision, error)
	// Control sets the desired state of a run.
	Control(ctx context.Context, req ControlRequest) (ControlResult, error)
	// Cancel stops a run's sessions and records the run interrupted:
	// it ends as flow run ends on SIGINT (exit 130), resumable.
	Cancel(ctx context.Context, req CancelRequest) (CancelResult, error)
}

// ErrUnsupported is what an Engine's operation returns, wrapped with
// the operation's name, when that engine cannot do it.
var ErrUnsupported = errors.New("not supported by this engine")

// Unsupported returns the error of an operation op that engine cannot
// do: bad usage (exit 2), and errors.Is ErrUnsupported.
func Unsupported(engine, op string) error {
	return core.Invalid("%s on the %s engine: %w", op, engine, ErrUnsupported)
}

// RestartRequest asks an engine to make a recorded run go on.
type RestartRequest struct {
	// Repo is the repository of the run, and where its workflow file
	// is read; "" is the Service's directory.
	Repo string
	// RunID names the run; "" is the newest run (of Workflow, when set).
	RunID string
	// WorkflowFile, when set, is the workflow file the command names
	// (flow run WORKFLOW --start-at-step): the newest run of it restarts
	// at StartAt, with the file as it is now, or a new run starts there
	// when it has none. WorkflowPath, when set, is the file a recorded
	// run goes on with (flow resume --workflow); with neither, the run's
	// own.
	WorkflowFile string
	WorkflowPath string
	// StartAt restarts the run at a step; Retry re-runs a failed run's
	// failed steps and what depends on them.
	StartAt core.StepKey
	Retry   bool
	// Force goes on with a start step though kept steps' artifacts are
	// missing; NoWait and Budgets are as in RunRequest.
	Force   bool
	NoWait  bool
	Budgets spec.Budgets
	// Invocation, when it gives flags, is put over the run's own.
	Invocation record.Invocation
	// Vars are --var overrides, for a new run at StartAt (a recorded
	// run keeps its own).
	Vars []string
	// Move moves a Temporal run off its lost worker (--move).
	Move bool
	// AcceptEdits applies an edit of the workflow file that weakens the
	// run's gates (flow resume --accept-edits).
	AcceptEdits bool
	// By names who restarts the run (local runs record it).
	By string
	// Takeover kills the run's frozen runner first (flow resume
	// --takeover): one whose process still holds the run but no longer
	// beats.
	Takeover bool
}

// LogsRequest asks for the output of a step's sessions.
type LogsRequest struct {
	// Repo is the repository of the run; "" is the Service's directory.
	Repo string
	// RunID names the run; "" is the newest run.
	RunID string
	// Step is the step, or instance; "" (on engines that allow it) is
	// every step's latest session.
	Step core.StepKey
	// All writes every session's log, not only the latest.
	All bool
	// Follow follows the latest session's log until the session ends.
	Follow bool
	// JSON writes JSON Lines of LogChunk instead of the logs' bytes.
	JSON bool
}

// CancelRequest asks an engine to stop a run.
type CancelRequest struct {
	// Repo is the repository of the run; "" is the Service's directory.
	Repo string
	// RunID names the run.
	RunID string
	// By names who cancels; "" is the Service's user.
	By string
}

// CancelResult says what Cancel did.
type CancelResult struct {
	// RunID is the run's id.
	RunID string `json:"run_id"`
	// Runner is the runner that was asked to stop: "pid 1234 on host"
	// for a local run, the workflow for a Temporal run.
	Runner string `json:"runner"`
	// By is who cancelled.
	By string `json:"by"`
}

// Attach is what one run shows of itself to the front end that started
// it.
type Attach struct {
	// Output receives the run's progress and, with Live, its sessions'
	// output prefixed by their step; nil means the Service's Stdout.
	Output io.Writer
	// Live shows the sessions' output on Output as it is written.
	Live bool
	// Ask, when set, asks a person to decide a human step and blocks
	// until they answer (ok false: no answer). An approval gives the
	// step's declared inputs (Question.Inputs); Service.Start checks
	// them and fills in their defaults, as Decide does. Decisions made
	// with Service.Decide work alongside it.
	Ask func(q Question) (in core.HumanInput, ok bool)
	// Events, when set, receives each event of the run as it is
	// recorded, in order.
	Events func(core.Event)
}

// Question is what Attach.Ask asks a person: to decide a human step.
type Question struct {
	// RunID is the run and Step the human step that waits.
	RunID string
	Step  core.StepKey
	// Message is the step's rendered human.message ("" when it has
	// none).
	Message string
	// Inputs are the inputs the step declares, in order: an approval
	// gives the required ones, and may give the others (their defaults
	// are filled in).
	Inputs []config.Input
}

// Local is the local engine: local.Runner over a file system, a clock
// and a process starter.
type Local struct {
	// Service serves the operations other than Run.
	Service     *Service
	FS          afero.Fs
	Clock       clock.Clock
	Starter     proc.Starter
	Environ     []string
	Host        string
	PID         int
	Alive       func(runlock.Holder) bool
	KillOrphans func(pgid int) bool
	KillMarked  func(marker string) int
	// Sandbox confines sessions (local.Runner.Sandbox); nil runs them
	// unconfined.
	Sandbox local.Sandbox
}

// Name implements Engine.
func (l *Local) Name() string { return "local" }

// Run implements Engine with a local.Runner.
func (l *Local) Run(ctx context.Context, opts spec.Options, att Attach) (spec.Result, error) {
	alive := l.Alive
	if g := opts.Gone; g != nil && alive != nil {
		// The lock's pid is another process now: its runner is gone.
		alive = func(h runlock.Holder) bool {
			if h.PID == g.PID && h.Host == g.Host && h.StartedAt.Equal(g.StartedAt) {
				return false
			}
			return l.Alive(h)
		}
	}
	r := &local.Runner{
		FS:          l.FS,
		Clock:       l.Clock,
		Starter:     l.Starter,
		Stdout:      att.Output,
		Live:        att.Live,
		Environ:     l.Environ,
		Host:        l.Host,
		PID:         l.PID,
		Alive:       alive,
		KillOrphans: l.KillOrphans,
		KillMarked:  l.KillMarked,
		Sandbox:     l.Sandbox,
		OnEvent:     att.Events,
		PollEvery:   PollEvery(opts.Invocation),
	}
	// Notifications link to the run's page on the flow serve whose
	// public address FLOW_PUBLIC_URL gives.
	if base := publicURL(l.Environ); base != "" {
		r.RunURL = func(runID, _ string) string { return base + "r/" + url.PathEscape(runID) }
	}
	if att.Ask != nil {
		wf := opts.Workflow
		r.Ask = func(runID string, step core.StepKey, message string) (core.HumanInput, bool) {
			return att.Ask(NewQuestion(wf, runID, step, message))
		}
	}
	return r.Run(ctx, opts)
}

// engine returns the Service's engine, or the local one built from its
// fields.
func (s *Service) engine() Engine {
	if s.Engine != nil {
		return s.Engine
	}
	return s.Local()
}

// Local returns the local engine over the Service's fields.
func (s *Service) Local() *Local {
	return &Local{Service: s, FS: s.FS, Clock: s.clock(), Starter: s.Starter, Environ: s.Environ, Host: s.Host, PID: s.PID,
		Alive: s.alive(), KillOrphans: s.KillOrphans, KillMarked: s.KillMarked, Sandbox: s.Sandbox}
}

// publicURL returns FLOW_PUBLIC_URL from env, ending in a slash, or "".
func publicURL(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "FLOW_PUBLIC_URL="); ok && v != "" {
			return strings.TrimRight(v, "/") + "/"
		}
	}
	return ""
}
