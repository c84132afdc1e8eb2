package spec

import (
	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// Options says which run to run and how.
type Options struct {
	Workflow *config.Workflow
	// Repo is the absolute path of the repository the sessions work in.
	Repo string
	// RunID names the run; "" makes a new id (or, with Resume, takes
	// the newest run).
	RunID string
	// Resume continues an existing run instead of creating one.
	Resume bool
	// Vars override the workflow's vars (new runs only).
	Vars map[string]string
	// Budgets override the workflow's default budgets.
	Budgets Budgets
	// AcceptEdits applies an edit of the workflow file that weakens
	// the run's gates (config.Weakenings): a person's decision, never a
	// session's.
	AcceptEdits bool
	// StartAt resets a step and everything downstream of it before the
	// run goes on (or, in a new run, skips the steps before it).
	StartAt core.StepKey
	// NoWait ends the run with exit 3 at a human step, or exit 4 when
	// paused, instead of waiting.
	NoWait bool
	// Invocation is how the run is asked to run beyond its workflow
	// file: kept in the run directory when the run is created, or
	// replaced when a resume gives flags. Its Env are more variables for
	// every session, as NAME=value, after the runner's own environment
	// and before flow's variables.
	Invocation record.Invocation
	// By names who starts this runner, for its runner_started event; ""
	// leaves it out.
	By string
	// Retry puts a failed run's failed steps, and what depends on them,
	// back to PENDING before the run goes on (flow retry; see
	// core.PlanRetry). Budgets.MaxIterations with ForceMaxIterations raises
	// the iteration budgets for it.
	Retry bool
	// Gone, when set, is a lock holder to take for dead whatever its
	// pid says: the pid of a runner that flow resume --takeover found
	// reused by another process.
	Gone *runlock.Holder
	// CleanupOnly runs the workflow's cleanup session in a run that has
	// finished (flow cleanup on a completed or failed run), and nothing
	// else: the run's status and exit code stay as they are.
	CleanupOnly bool
	// Read is the run's state as the caller read it just before (the
	// operations layer reads it to find the run), or nil. The checks
	// a runner makes before it takes the run's lock — a finished run is
	// refused without anything written — use it instead of reading the
	// run again; what the runner runs is read again under the lock.
	Read *core.State
}

// Result is how a run ended.
type Result struct {
	RunID    string
	RunDir   string
	Status   core.RunStatus
	ExitCode int
	Reason   string
	State    *core.State
}
