package ops

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// RunRequest asks for a new run of a workflow, or — with StartAt — for
// the newest run of the workflow to go on from a step.
type RunRequest struct {
	// Workflow is the path of the workflow file.
	Workflow string
	// Repo is the repository the sessions work in; "" is the Service's
	// directory.
	Repo string
	// RunID names the new run; "" makes one from the time and a random
	// suffix. With StartAt, it names the run to restart.
	RunID string
	// Vars override the workflow's vars, as key=value (see ParseVars).
	Vars []string
	// StartAt resets this step and everything downstream of it in the
	// newest run of the workflow, keeps the rest and goes on; with no
	// earlier run, a new run starts at it.
	StartAt core.StepKey
	// Force goes on with StartAt even when kept steps' artifacts are
	// missing.
	Force bool
	// NoWait ends the run at a human step (exit 3) or when paused
	// (exit 4) instead of waiting.
	NoWait bool
	// Budgets override the workflow's default budgets.
	Budgets spec.Budgets
	// Invocation says how to read the workflow file and start its
	// sessions beyond it: its format, agent_orchestrator's flags, more
	// environment (see record.Invocation).
	Invocation record.Invocation
	// By names who starts the run, recorded in its runner_started
	// event; "" is $USER (left out when that is unset too).
	By string
	// AcceptEdits applies, with StartAt, an edit of the workflow file
	// that weakens the restarted run's gates.
	AcceptEdits bool
}

// ResumeRequest asks for a run that stopped to go on.
type ResumeRequest struct {
	// Repo is the repository of the run; "" is the Service's directory.
	Repo string
	// RunID names the run; "" is the one run that flow resume (or flow
	// retry) may take without its id, when there is exactly one
	// (openTarget).
	RunID string
	// Workflow is the workflow file to go on with; "" is the run's own,
	// found again under Repo when the run was copied (LocateWorkflow).
	Workflow string
	// StartAt, Force, NoWait and Budgets are as in RunRequest.
	StartAt core.StepKey
	Force   bool
	NoWait  bool
	Budgets spec.Budgets
	// Invocation, when it gives flags, replaces the run's recorded one;
	// its Env is put over the recorded environment.
	Invocation record.Invocation
	// AcceptEdits applies an edit of the workflow file that weakens the
	// run's gates.
	AcceptEdits bool
	// Retry re-runs a failed run's failed steps and what depends on
	// them (flow retry): the launch carries a RetryPlan. A
	// Budgets.MaxIterations then overrides the steps' and gates' own
	// iteration budgets for the retry.
	Retry bool
	// By is as in RunRequest.
	By string
	// Takeover stops the run's frozen runner first (flow resume
	// --takeover; see takeover).
	Takeover bool
}

// Launch is a run ready to start: the workflow loaded, the vars
// checked, the run to go on with found and, with a start step, the plan
// computed. Service.Start starts it.
type Launch struct {
	// Workflow is the loaded workflow.
	Workflow *config.Workflow
	// Options are what the engine is asked to do.
	Options spec.Options
	// Plan is the plan of a start step, or nil without one.
	Plan *StartAtPlan
	// RetryPlan is the plan of a retry, or nil without one.
	RetryPlan *core.RetryPlan
}

// StartAtPlan says what starting at a step will do.
type StartAtPlan struct {
	// Workflow is the name of the workflow.
	Workflow string `json:"workflow"`
	// RunID is the run that restarts at Step; "" when NewRun.
	RunID string `json:"run_id"`
	// Step is the step the run starts at.
	Step core.StepKey `json:"step"`
	// NewRun is true when there is no earlier run of the workflow: a new
	// run starts at Step, the steps before it SKIPPED.
	NewRun bool `json:"new_run"`
	// Kept are the finished steps kept as they are.
	Kept []core.StepKey `json:"kept"`
	// Rerun are the steps reset to PENDING: Step and everything
	// downstream of it.
	Rerun []core.StepKey `json:"rerun"`
	// Missing are declared artifacts of kept steps that are not in the
	// repository.
	Missing []MissingArtifact `json:"missing"`
	// Refused is true when artifacts are missing and the request did not
	// force: Start refuses the launch.
	Refused bool `json:"refused"`
	// Budgets are the loops the restart reopens: their targets' iteration
	// budgets start afresh.
	Budgets []core.LoopBudget `json:"budgets"`
}

// MissingArtifact is a declared artifact of a kept step that is gone.
type MissingArtifact struct {
	// Step is the kept step that declared the artifact.
	Step core.StepKey `json:"step"`
	// Path is the artifact as declared (relative to the repository).
	Path string `json:"path"`
}

// RunResult is how a run ended (or stopped to wait): what Start
// returns and what flow run --json and flow resume --json print, as the
// last object of their output.
type RunResult struct {
	// Type is always "result", so that the result is told apart from
	// the events streamed before it.
	Type string `json:"type"`
	// RunID is the run's id.
	RunID string `json:"run_id"`
	// RunDir is the run's directory.
	RunDir string `json:"run_dir"`
	// Status is the run's status: completed, failed, waiting_on_human,
	// paused, interrupted, ...
	Status core.RunStatus `json:"status"`
	// ExitCode is the run's exit code (the table in docs/architecture.md, "Shared tables").
	ExitCode int `json:"exit_code"`
	// Reason says why the run ended so, in a sentence.
	Reason string `json:"reason"`
	// Waiting are the steps waiting on a human, in workflow order.
	Waiting []string `json:"waiting"`
}

// PrepareRun loads a run request's workflow (diagnostics as in
// LoadWorkflow, with the repository as a root for prompt files), checks
// its vars (ParseVars) and, with a start step, finds the newest run of
// the workflow and plans the restart. Errors are ExitUsage errors (bad
// repository, invalid workflow, bad var, unknown step), or the errors of
// reading the runs.
func (s *Service) PrepareRun(req RunRequest) (*Launch, error) {
	repo, err := s.Repo(req.Repo)
	if err != nil {
		return nil, err
	}
	inv := s.absInvocation(req.Invocation)
	var read *loaded
	if !req.StartAt.IsZero() {
		// The run restarted keeps how it was invoked: its flags need not
		// be given again.
		inv, read = s.restartInvocation(req.Workflow, repo, req.RunID, inv)
	}
	wf, err := s.loadInvokedFrom(read, req.Workflow, repo, inv)
	if err != nil {
		return nil, err
	}
	vars, err := ParseVars(wf, req.Vars)
	if err != nil {
		return nil, err
	}
	l := &Launch{Workflow: wf, Options: spec.Options{Workflow: wf, Repo: repo, RunID: req.RunID, Vars: vars,
		NoWait: req.NoWait, Budgets: orchestratorBudgets(wf, req.Budgets, inv), Invocation: inv, By: s.starter(req.By),
		AcceptEdits: req.AcceptEdits}}
	if req.StartAt.IsZero() {
		return l, nil
	}
	if err := checkStep(wf, req.StartAt); err != nil {
		return nil, err
	}
	l.Options.StartAt = req.StartAt
	ref, err := record.FindRun(s.FS, repo, req.RunID, wf.Name)
	switch {
	case err == nil:
		if l.Plan, err = s.plan(wf, ref, repo, req.StartAt, req.Force); err != nil {
			return nil, err
		}
		l.Options.Resume, l.Options.RunID = true, ref.ID
	case errors.Is(err, record.ErrNoRun):
		if req.StartAt.IsInstance() {
			return nil, Usage("--start-at-step %s: no run of %s to restart; a new run starts at a step of the top level (its loops' items are known once they start)", req.StartAt, wf.Name)
		}
		l.Plan = &StartAtPlan{Workflow: wf.Name, Step: req.StartAt, NewRun: true,
			Kept: []core.StepKey{}, Rerun: []core.StepKey{}, Missing: []MissingArtifact{}}
	default:
		return nil, err
	}
	return l, nil
}

// PrepareResume finds the run of a resume request (given none, the one
// run it may take: openTarget), loads its workflow (LocateWorkflow re-roots a copied
// run) and, with a start step, plans the restart. Errors are as in
// PrepareRun, and an unknown run is an ExitUsage error.
func (s *Service) PrepareResume(req ResumeRequest) (*Launch, error) {
	verb := "resume"
	if req.Retry {
		verb = "retry"
	}
	repo, ref, err := s.openTarget(req.Repo, req.RunID, verb)
	if err != nil {
		return nil, err
	}
	if record.OnTemporal(s.FS, ref.Dir) {
		// A local runner would run its sessions a second time, beside
		// the workflow that drives them.
		return nil, Refused("run %s is driven by a Temporal server (this is a worker's mirror of it): go on with --engine temporal", ref.ID)
	}
	var gone *runlock.Holder
	if req.Takeover {
		if gone, err = s.takeover(ref); err != nil {
			return nil, err
		}
	}
	path := req.Workflow
	if path == "" {
		if path, err = LocateWorkflow(s.FS, ref.State, repo); err != nil {
			return nil, err
		}
	}
	recorded, err := record.ReadInvocation(s.FS, ref.Dir)
	if err != nil {
		return nil, Usage("run %s: %v", ref.ID, err)
	}
	inv := recorded.Merge(s.absInvocation(req.Invocation))
	wf, err := s.loadInvoked(path, repo, inv)
	if err != nil {
		return nil, err
	}
	l := &Launch{Workflow: wf, Options: spec.Options{Workflow: wf, Repo: repo, RunID: ref.ID, Resume: true,
		NoWait: req.NoWait, Budgets: orchestratorBudgets(wf, req.Budgets, inv), Invocation: inv, By: s.starter(req.By),
		AcceptEdits: req.AcceptEdits}}
	if ref.Err == nil {
		l.Options.Read = ref.State
	}
	l.Options.Gone = gone
	if req.Retry {
		if ref.State.Status != core.RunFailed {
			return nil, Refused("run %s is %s, not failed: flow retry re-runs the failed steps of a failed run", ref.ID, ref.State.Status)
		}
		p := core.PlanRetry(wf, ref.State)
		l.RetryPlan = &p
		l.Options.Retry = true
		if req.Budgets.MaxIterations > 0 {
			l.Options.Budgets.ForceMaxIterations = true
		}
		return l, nil
	}
	if req.StartAt.IsZero() {
		return l, nil
	}
	if err := checkStep(wf, req.StartAt); err != nil {
		return nil, err
	}
	if l.Plan, err = s.plan(wf, ref, repo, req.StartAt, req.Force); err != nil {
		return nil, err
	}
	l.Options.StartAt = req.StartAt
	return l, nil
}

// plan computes the plan of restarting ref at step.
func (s *Service) plan(wf *config.Workflow, ref record.RunRef, repo string, step core.StepKey, force bool) (*StartAtPlan, error) {
	p, err := spec.PlanStartAt(s.FS, wf, ref.State, repo, step)
	if err != nil {
		return nil, Usage("%v", err)
	}
	out := &StartAtPlan{Workflow: wf.Name, RunID: ref.ID, Step: step, Kept: nonNil(p.Kept), Rerun: nonNil(p.Rerun),
		Missing: []MissingArtifact{}, Budgets: p.Budgets}
	if out.Budgets == nil {
		out.Budgets = []core.LoopBudget{}
	}
	for _, m := range p.Missing {
		out.Missing = append(out.Missing, MissingArtifact{Step: m.Step, Path: m.Path})
	}
	out.Refused = len(out.Missing) > 0 && !force
	return out, nil
}

// Start runs a prepared launch with the Service's engine until the run
// ends, waits on a human with NoWait, is paused with NoWait, or ctx is
// cancelled. A plan with missing artifacts and no Force is refused
// first (ExitUsage). The run's own end — failed, waiting, paused,
// interrupted — is not an error: it is the result's ExitCode. Errors
// are failures of flow itself, with their code for CodeOf: a run
// held by a live runner is ExitHeld, a run id that exists ExitUsage.
func (s *Service) Start(ctx context.Context, l *Launch, att Attach) (RunResult, error) {
	if l.Plan != nil && l.Plan.Refused {
		return RunResult{}, Usage("kept steps' artifacts are missing; re-run from an earlier step, or pass --force")
	}
	if att.Output == nil {
		att.Output = s.stdout()
	}
	if att.Ask != nil {
		att.Ask = checkedAsk(att.Ask, att.Output)
	}
	res, err := s.engine().Run(ctx, l.Options, att)
	s.copyOut(l.Options, res.RunDir, att.Output)
	if err != nil {
		return RunResult{}, err
	}
	return resultOf(res), nil
}

// resultOf turns an engine's result into a RunResult.
func resultOf(res spec.Result) RunResult {
	out := RunResult{Type: "result", RunID: res.RunID, RunDir: res.RunDir, Status: res.Status, ExitCode: res.ExitCode,
		Reason: res.Reason, Waiting: []string{}}
	if st := res.State; st != nil {
		for _, id := range st.StepOrder {
			if ss := st.Steps[id]; ss != nil && ss.Status == core.WaitingOnHuman {
				out.Waiting = append(out.Waiting, id.String())
			}
		}
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// checkedAsk checks the inputs of the approvals ask returns, and fills
// in their defaults, as Decide does (ResolveInputs). An approval whose
// inputs do not fit is not recorded: it is said on out, and the step
// goes on waiting for flow approve.
func checkedAsk(ask func(Question) (core.HumanInput, bool), out io.Writer) func(Question) (core.HumanInput, bool) {
	return func(q Question) (core.HumanInput, bool) {
		in, ok := ask(q)
		if !ok || !in.Approved {
			return in, ok
		}
		resolved, err := ResolveInputs(q.Step.String(), q.Inputs, in.Input)
		if err != nil {
			fmt.Fprintf(out, "%s: %v\nnot recorded; flow approve %s %s --input ... decides it\n", q.Step, err, q.RunID, core.ShellArg(q.Step.String()))
			return core.HumanInput{}, false
		}
		in.Input = resolved
		return in, true
	}
}
