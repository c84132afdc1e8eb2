package ops

import (
	"context"
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
)

// Engine runs a run until it ends, waits on a human with NoWait, or ctx
// is cancelled. The local engine (Local) runs sessions as processes on
// this machine; another engine (Temporal) may run them elsewhere. Front
// ends never know which one runs a run: they call Service.Start.
type Engine interface {
	// Run runs (or resumes) the run opts describes. Its errors are
	// failures of flow itself, with their exit code for core.CodeOf
	// (a run held by a live runner is ExitHeld); how the run ended is in
	// the result.
	Run(ctx context.Context, opts local.Options, att Attach) (local.Result, error)
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
	Step  string
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
	FS          afero.Fs
	Clock       clock.Clock
	Starter     proc.Starter
	Environ     []string
	Host        string
	PID         int
	Alive       func(runlock.Holder) bool
	KillOrphans func(pgid int) bool
	KillMarked  func(marker string) int
}

// Run implements Engine with a local.Runner.
func (l *Local) Run(ctx context.Context, opts local.Options, att Attach) (local.Result, error) {
	r := &local.Runner{
		FS:          l.FS,
		Clock:       l.Clock,
		Starter:     l.Starter,
		Stdout:      att.Output,
		Live:        att.Live,
		Environ:     l.Environ,
		Host:        l.Host,
		PID:         l.PID,
		Alive:       l.Alive,
		KillOrphans: l.KillOrphans,
		KillMarked:  l.KillMarked,
		OnEvent:     att.Events,
	}
	// Notifications link to the run's page on the flow serve whose
	// public address FLOW_PUBLIC_URL gives.
	if base := publicURL(l.Environ); base != "" {
		r.RunURL = func(runID, _ string) string { return base + "r/" + url.PathEscape(runID) }
	}
	if att.Ask != nil {
		wf := opts.Workflow
		r.Ask = func(runID, step, message string) (core.HumanInput, bool) {
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
	return &Local{FS: s.FS, Clock: s.clock(), Starter: s.Starter, Environ: s.Environ, Host: s.Host, PID: s.PID,
		Alive: s.alive(), KillOrphans: s.KillOrphans, KillMarked: s.KillMarked}
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
