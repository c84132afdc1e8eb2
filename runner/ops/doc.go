// Package ops is flow's operations layer: the one set of operations
// that every front end — the command line, the web page, CI reporters,
// the Temporal client — calls to run and inspect runs. Operations
// return typed results whose JSON field names are stable and
// documented here; front ends render them and hold no knowledge of the
// run directory's file names or formats, which belong to the runner
// (the local driver).
//
// # The service
//
// A Service carries every side effect an operation may have: the file
// system (afero.Fs), the clock, the process starter, the engine that
// runs runs, the working directory, the host name and process id that
// name a runner, the environment, the user who decides and controls
// when a request names nobody, where progress goes, and how a lock
// holder is known to be alive. The command line builds one from the
// operating system in one place; tests build one over
// afero.NewMemMapFs(), a fake clock and scripted sessions.
//
// # Errors and exit codes
//
// Errors that carry an exit code are *ExitError, or errors CodeOf maps
// to one: a refusal of the core (core.ErrInvalid, exit 2, which Usage
// makes; core.ErrRefused, exit 8, which Refused makes), a run held by a
// live runner (*record.HeldError, ExitHeld, 7), an unknown run
// (record.ErrNoRun, ExitUsage, 2). A front end maps CodeOf(err) to its exit code. Any
// other error is a failure of flow itself (exit 1). How a run ended —
// failed, waiting on a human, paused, interrupted — is not an error: it
// is RunResult.ExitCode.
//
// # Operations
//
// LoadWorkflow loads and validates a workflow file, with the
// repository as a root for its prompt files; an invalid workflow is an
// ExitUsage error wrapping config.Diagnostics, which front ends show
// with their source lines. Validate checks many files (a directory
// stands for the workflow files in it) and returns a ValidateResult:
// {"files": [{"file", "valid", "steps", "error"}], "diagnostics":
// [{"file", "line", "col", "severity", "message", "suggestion"}],
// "valid"}.
//
// PrepareRun and PrepareResume turn a request into a Launch: the
// workflow loaded, --var overrides checked (ParseVars: a var the
// workflow does not declare, a name that matches a secret or a value
// that is not valid UTF-8 is an ExitUsage error), the run found (the
// newest when none is named; a copied run's workflow found again under
// the new repository by LocateWorkflow) and, with a start step, the
// plan computed. A StartAtPlan is {"workflow", "run_id", "step",
// "new_run", "kept", "rerun", "missing": [{"step", "path"}],
// "refused"}; an unknown start step is an ExitUsage error with a
// did-you-mean. Start runs a Launch with the Service's Engine (the
// local runner unless another is set) and returns a RunResult:
// {"type": "result", "run_id", "run_dir", "status", "exit_code",
// "reason", "waiting": [steps waiting on a human]}. A plan whose kept
// steps' artifacts are missing is refused by Start with ExitUsage
// unless the request forced it; a run id that already exists is
// ExitUsage; a run held by a live runner is ExitHeld. With
// Attach.Events, Start hands each event of the run to the caller as it
// is recorded (flow run --json prints them, one per line, before the
// result).
//
// DryRun plans a run request without running it (flow run --dry-run):
// nothing is written and no session starts. A DryRun is {"workflow",
// "file", "repo", "vars", "max_parallel", "groups": [[step ids]],
// "steps": [{"id", "kind", "needs", "group", "when", "max_attempts",
// "max_iterations", "timeout", "idle_timeout", "agent", "command",
// "prompt", "prompt_file", "env", "artifacts", "gate": {"pass", "fail",
// "check", "loop_back_to"}, "human": {"message", "timeout",
// "auto_approve", "inputs"}}], "errors"}. Groups are the levels of the
// dependency graph (steps whose needs are all in earlier groups may run
// together). Commands, prompts, env, artifacts, gate checks and human
// messages are rendered with the vars and the environment known now;
// a {{ expr }} that reads what only the run knows (steps.*, feedback.*,
// output, check.*, run.*, ...) shows as <expr>, and secrets as ***. A
// template that cannot be rendered is listed in "errors", positioned
// in the workflow file, and the error says them all (exit 1).
//
// Status reads a run exactly (the snapshot with every newer event
// applied) and derives its runner's liveness. Its JSON is
// run_state.json's object with "liveness" ({"state", "hook", "reason",
// "holder"}) added, and "fault" when the run's event log has a fault
// and the state is the one recorded before it. Watch reads a run every
// second and reports its status when it changes (or at every look),
// with the parts that changed and the end of the running sessions'
// output, and optionally each event as it is appended, until the run is
// over or the context is cancelled; an Update's JSON is the status
// object with "type": "status" first, or the event's own line. ListRuns
// lists a repository's runs, newest first, as RunSummary objects:
// {"run_id", "workflow_name", "status", "exit_code", "created_at",
// "updated_at", "dir", "error"}.
//
// Logs lists the session logs of a step (the latest, or all) as the
// runner names them, parsed by record.StepLogs: {"run_id", "run_dir",
// "step", "logs": [{"path", "name", "generation", "iteration",
// "attempt"}]}; an unknown step is ExitUsage, a step that has not run
// ExitRefused, and a step whose sessions printed nothing has no logs.
// CopyLog streams a log; Follow streams the latest one as it grows
// until its session ends.
//
// Decide records an approval or a rejection of a step that waits
// (record.SubmitDecision): exactly one decision wins per wait; the loser gets
// ExitRefused saying what was decided, by whom and when; asking again
// for the decision already made returns it with "already": true. A
// Decision is {"run_id", "step", "approved", "by", "at", "already"}.
// A rejection needs a reason (ExitUsage). An approval's inputs are
// checked against those the step declares (human.inputs): an unknown
// name or a required one left out is ExitUsage, and the defaults of the
// others are filled in (ResolveInputs); Attach.Ask's approvals are
// checked the same way. Control writes a run's desired state (pause,
// continuous, run_once, run_cleanup); a run that has already ended is
// refused with ExitRefused. A ControlResult is {"run_id",
// "desired_state", "by", "note", "runner_live"}: without a live runner,
// the desired state takes effect at the next flow resume.
package ops
