package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// addRunnerCmds adds the commands that run and inspect runs.
func (a *app) addRunnerCmds(root *cobra.Command) {
	root.AddCommand(
		a.runCmd(),
		a.resumeCmd(),
		a.retryCmd(),
		a.statusCmd(),
		a.runsCmd(),
		a.logsCmd(),
		a.approveCmd(),
		a.rejectCmd(),
		a.controlCmd("pause", core.Pause, "Pause a run after its current session"),
		a.controlCmd("continue", core.Continuous, "Let a paused run go on"),
		a.controlCmd("run-once", core.RunOnce, "Let a paused run start exactly one more session, then pause"),
		a.controlCmd("cleanup", core.RunCleanup, "Run the workflow's cleanup session, then pause"),
		a.cancelCmd(),
	)
}

// runFlags are the flags shared by run and resume.
type runFlags struct {
	repo          string
	runID         string
	startAt       string
	force         bool
	noWait        bool
	asJSON        bool
	dryRun        bool
	vars          []string
	maxAttempts   int
	maxIterations int
	junit         string
	acceptEdits   bool
	budgetCost    float64
	budgetTokens  int64
	budgetSess    int
	by            string
	inv           record.Invocation
	orch          orchFlags
	workflow      string
}

// startStep reads --start-at-step: a step, or an instance
// (loop[item].step); the zero key when the flag is not given.
func (f *runFlags) startStep() (core.StepKey, error) {
	if f.startAt == "" {
		return core.StepKey{}, nil
	}
	k, err := core.ParseStepKey(f.startAt)
	if err != nil {
		return core.StepKey{}, ops.Usage("--start-at-step: %v", err)
	}
	return k, nil
}

func (f *runFlags) add(cmd *cobra.Command, isRun bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", "", "repository the sessions work in "+repoDefault)
	fl.StringVar(&f.startAt, "start-at-step", "", "reset this step and everything downstream of it, keep the rest, and go on")
	fl.BoolVar(&f.force, "force", false, "with --start-at-step: go on even when kept steps' artifacts are missing")
	fl.BoolVar(&f.noWait, "no-wait", false, "exit 3 at a human step, or 4 when paused, instead of waiting (for CI)")
	fl.BoolVar(&f.asJSON, "json", false, "print the result as JSON on stdout, progress on stderr")
	fl.StringVar(&f.by, "by", "", "who starts this runner, recorded in its runner_started event (default: $USER; local engine)")
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "default sessions per iteration before a step fails (steps' own max_attempts win)")
	fl.IntVar(&f.maxIterations, "max-iterations", 0, "default runs of a loop: its gate's N-th failure ends the run, after N-1 loop-backs (steps' and gates' own max_iterations win; a workflow in agent_orchestrator's format counts N loop-backs, as it does)")
	fl.BoolVar(&f.acceptEdits, "accept-edits", false, "apply an edit of the workflow file that weakens the run's gates (removes a human step, changes a gate, lowers the sandbox, ...): only a person does")
	fl.StringVar(&f.junit, "junit", "", "write the run's steps as JUnit XML to this file when the run ends")
	fl.Float64Var(&f.budgetCost, "budget-cost", 0, "raise the run's cost budget to this many USD (and any step's below it); recorded for later resumes")
	fl.Int64Var(&f.budgetTokens, "budget-tokens", 0, "raise the run's token budget (and any step's below it)")
	fl.IntVar(&f.budgetSess, "budget-sessions", 0, "raise the run's session budget (and any step's below it)")
	f.addInvocation(cmd)
	if isRun {
		fl.StringArrayVar(&f.vars, "var", nil, "override a workflow var: --var key=value (repeatable)")
		fl.StringVar(&f.runID, "run-id", "", "id of the new run (default: time and a random suffix)")
		fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan — order, parallel groups, budgets, rendered commands and prompts — without running anything")
	}
}

// addInvocation adds the flags that say how a workflow file is read and
// its sessions started beyond it (record.Invocation).
func (f *runFlags) addInvocation(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.inv.Format, "format", "", "read the workflow in this format: flow or orchestrator (agent_orchestrator's); default: detected")
	fl.StringVar(&f.inv.Wrapper, "wrapper", "", "agent_orchestrator's format: run every agent's session as WRAPPER --run-id … --step-id … --agent … --prompt … --repo … --report … (python3 for a .py)")
	fl.StringArrayVar(&f.inv.WrapperArgs, "wrapper-arg", nil, "one more argument for the wrapper (repeatable)")
	fl.StringVar(&f.inv.CommandTemplate, "command-template", "", "agent_orchestrator's format: run every agent's session as this shell command, with {run_id} {step_id} {agent} {prompt} {repo} {report} {attempt} {manual_input}")
	fl.BoolVar(&f.inv.PauseForHumanInput, "pause-for-human-input", false, "agent_orchestrator's format: a human_in_the_loop step waits, once its agent is done, for its manual-input file")
	fl.StringVar(&f.inv.GateStateFile, "gate-state-file", "", "a JSON file of gate names and whether each is open; steps with gates (external_gates) wait until theirs are")
	fl.StringArrayVar(&f.inv.Env, "env", nil, "more environment variables for every session: --env NAME=value [NAME=value...] (repeatable)")
	fl.StringVar(&f.inv.Python, "python", "", "agent_orchestrator's format: the interpreter of a .py wrapper (default: python3)")
	fl.StringVar(&f.inv.Sandbox, "sandbox", "", "on, required or off: run every step's sessions so, whatever the workflow says (kept for later resumes); default: the workflow's sandbox, else on")
}

// checkInvocation checks the flags of the invocation: a known format,
// and --env as NAME=value.
func (f *runFlags) checkInvocation() error {
	switch f.inv.Format {
	case "", config.FormatFlow, config.FormatOrchestrator:
	default:
		return ops.Usage("--format %q: want flow or orchestrator", f.inv.Format)
	}
	if c := f.budgetCost; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
		return ops.Usage("--budget-cost %v: want a number of USD of at least 0", c)
	}
	if f.budgetTokens < 0 || f.budgetSess < 0 {
		return ops.Usage("--budget-tokens and --budget-sessions want a count of at least 0")
	}
	switch f.inv.Sandbox {
	case "", config.SandboxOn, config.SandboxRequired, config.SandboxOff:
	default:
		return ops.Usage("--sandbox %q: want on, required or off", f.inv.Sandbox)
	}
	for _, kv := range f.inv.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.ContainsAny(name, " \t\n") {
			return ops.Usage("--env %q: want NAME=value", kv)
		}
	}
	return f.orchInvocation()
}

// notices prints on stderr, before a run starts, the repository found
// above the current directory (found, when it was), and how its
// workflow was read: in agent_orchestrator's format, and the keys read
// and ignored.
func (a *app) notices(cmd *cobra.Command, wf *config.Workflow, found string) {
	w := cmd.ErrOrStderr()
	if found != "" && a.svc.Dir != "" && found != a.svc.Dir {
		if rel, err := filepath.Rel(found, a.svc.Dir); err == nil && filepath.IsLocal(rel) {
			fmt.Fprintf(w, "repository: %s (above %s; the sessions run there)\n", found, a.svc.Dir)
		}
	}
	if n := ops.InvocationNotice(wf); n != "" {
		fmt.Fprintln(w, n)
	}
	if l := cmd.Flags().Lookup("poll-interval"); l != nil && l.Changed {
		v, _ := strconv.ParseFloat(l.Value.String(), 64)
		pollNotice(w, v)
	}
	for _, d := range wf.Warnings {
		fmt.Fprintln(w, d.String())
	}
}

func (f *runFlags) budgets() spec.Budgets {
	return spec.Budgets{MaxAttempts: f.maxAttempts, MaxIterations: f.maxIterations,
		Raise: core.Budget{CostUSD: f.budgetCost, Tokens: f.budgetTokens, Sessions: f.budgetSess}}
}

func (a *app) runCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run WORKFLOW",
		Short: "Run a workflow, or restart its newest run at a step",
		Long: `run starts a new run of WORKFLOW and drives its sessions until the run completes,
fails, waits on a human (with --no-wait) or is interrupted. Its sessions run in
the repository: --repo, else the first of the current directory and its parents
that holds .agents/runs/ or .git (a worktree flow made for a run stands for its
main checkout), else the current directory. The run's record is kept in
<repo>/.agents/runs/<run_id>/.

With --start-at-step STEP it takes the newest run of the workflow instead, prints
its plan (kept steps, steps that run again, missing artifacts), resets STEP and
everything downstream of it to PENDING and goes on; with no earlier run it
starts a new one at STEP.

With --dry-run it prints the plan and runs nothing: the steps by dependency level,
their budgets, commands, prompts and human messages rendered with the vars known
now (a value known only at run time shows as <steps.x.output>), gates and
loop-backs; a template that cannot be rendered makes it exit 1.

` + exitCodesHelp(),
		Example:           "  flow run workflows/sdlc.yaml --var feature='dark mode'\n  flow run workflows/sdlc.yaml --dry-run --var feature='dark mode'\n  flow run workflows/sdlc.yaml --start-at-step coding\n  flow run --repo . --workflow workflows/review.yaml --wrapper wrappers/claude_wrapper.py   # agent_orchestrator's command line",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: workflowFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.checkInvocation(); err != nil {
				return err
			}
			path, err := workflowArg(args, f.workflow)
			if err != nil {
				return err
			}
			args = []string{path}
			startAt, err := f.startStep()
			if err != nil {
				return err
			}
			req := ops.RunRequest{Workflow: args[0], Repo: f.repo, RunID: f.runID, Vars: f.vars,
				StartAt: startAt, Force: f.force, NoWait: f.noWait, Budgets: f.budgets(), Invocation: f.inv, By: f.by}
			if f.dryRun {
				if f.startAt != "" {
					return ops.Usage("--dry-run plans a new run; it does not go with --start-at-step")
				}
				return a.dryRun(req, f.asJSON)
			}
			var l *ops.Launch
			if f.startAt != "" {
				l, err = a.engine().Restart(cmd.Context(), ops.RestartRequest{WorkflowFile: args[0], Repo: f.repo, RunID: f.runID,
					Vars: f.vars, StartAt: startAt, Force: f.force, NoWait: f.noWait, Budgets: f.budgets(), Invocation: f.inv, By: f.by,
					AcceptEdits: f.acceptEdits})
			} else {
				l, err = a.svc.PrepareRun(req)
			}
			if err != nil {
				return err
			}
			found := "" // the repository, when it was found (no --repo)
			if f.repo == "" {
				found = l.Options.Repo
			}
			a.notices(cmd, l.Workflow, found)
			return a.withJUnit(cmd.Context(), f.junit, l, func() error { return a.execute(cmd, l, f.asJSON) })
		},
	}
	f.add(cmd, true)
	f.addOrchestratorRun(cmd)
	cmd.Flags().StringVar(&f.workflow, "workflow", "", "the workflow file, as agent_orchestrator's --workflow (instead of the argument)")
	return cmd
}

func (a *app) resumeCmd() *cobra.Command {
	var f runFlags
	var workflowPath string
	var takeover bool
	cmd := &cobra.Command{
		Use:   "resume [RUN_ID]",
		Short: "Go on with a run that stopped: interrupted, crashed, waiting on a human or paused",
		Long: `resume takes a run (the newest when RUN_ID is left out) and goes on from its record:
finished steps are kept, a step that was running when its runner died runs again,
and edits to the workflow file are picked up (new steps start PENDING, removed
steps are dropped). A run held by a live runner is refused; a dead runner's run
is taken over. A frozen runner — its process still holds the run, but it no
longer beats (stopped, or stuck in a hung disk write) — is killed and its run
taken over with --takeover, once flow has checked that the process is that
runner.

Without RUN_ID it takes the one run of the repository that has not finished,
when there is exactly one.

` + exitCodesHelp(),
		Example: "  flow resume\n  flow resume 20250115-143000-f8c1a4 --start-at-step coding\n  flow resume 20250115-143000-f8c1a4 --takeover",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.checkInvocation(); err != nil {
				return err
			}
			// The repository, resolved here: an engine elsewhere (Temporal)
			// reads the run's workflow file in it.
			repo, err := a.svc.Repo(f.repo)
			if err != nil {
				return err
			}
			startAt, err := f.startStep()
			if err != nil {
				return err
			}
			l, err := a.engine().Restart(cmd.Context(), ops.RestartRequest{Repo: repo, RunID: argOr(args), WorkflowPath: workflowPath,
				StartAt: startAt, Force: f.force, NoWait: f.noWait, Budgets: f.budgets(), Invocation: f.inv, By: f.by, Move: a.move,
				AcceptEdits: f.acceptEdits, Takeover: takeover})
			if err != nil {
				return err
			}
			return a.withJUnit(cmd.Context(), f.junit, l, func() error { return a.execute(cmd, l, f.asJSON) })
		},
	}
	f.add(cmd, false)
	f.addOrchestratorRun(cmd)
	cmd.Flags().StringVar(&workflowPath, "workflow", "", "workflow file to resume with (default: the run's own, found again under --repo if the run was copied)")
	cmd.Flags().BoolVar(&takeover, "takeover", false, "kill the run's frozen runner (no heartbeat, its process still alive) and take the run over")
	return cmd
}

func (a *app) retryCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "retry [RUN_ID]",
		Short: "Run a failed run's failed steps again, and what depends on them",
		Long: `retry takes a failed run (the newest when RUN_ID is left out) and puts every FAILED
step, and every step that depends on one, back to PENDING with fresh attempts,
keeping their iterations and every other step as it is; then it goes on, in a new
generation of the run (its logs and reports are named apart; nothing is
overwritten). It prints its plan first. A step that failed at its iteration budget
runs again only with --max-iterations N, which for this retry overrides the
steps' and gates' own budgets. A rejected human step waits for a new decision.

` + exitCodesHelp(),
		Example: "  flow retry\n  flow retry 20250115-143000-f8c1a4 --max-iterations 6",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.checkInvocation(); err != nil {
				return err
			}
			repo, err := a.svc.Repo(f.repo)
			if err != nil {
				return err
			}
			l, err := a.engine().Restart(cmd.Context(), ops.RestartRequest{Repo: repo, RunID: argOr(args), NoWait: f.noWait,
				Budgets: f.budgets(), Retry: true, By: f.by, Move: a.move, AcceptEdits: f.acceptEdits})
			if err != nil {
				return err
			}
			return a.withJUnit(cmd.Context(), f.junit, l, func() error { return a.execute(cmd, l, f.asJSON) })
		},
	}
	f.add(cmd, false)
	cmd.Flags().Lookup("max-iterations").Usage = "for this retry, the runs of every loop, over the steps' and gates' own max_iterations: what lets a step that failed at its iteration budget run again"
	_ = cmd.Flags().MarkHidden("start-at-step")
	_ = cmd.Flags().MarkHidden("force")
	return cmd
}

// exitCodesHelp lists the exit codes of the commands that run a run,
// for their help: the table of ops.ExitCodes.
func exitCodesHelp() string {
	var b strings.Builder
	b.WriteString("Exit codes:")
	for _, c := range ops.ExitCodes() {
		fmt.Fprintf(&b, "\n  %-4d %s", int(c), c.Meaning())
	}
	return b.String()
}

// argOr returns the first argument, or "".
func argOr(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return ""
}

// execute prints a launch's plan, runs it and maps its end to an exit
// code. With --json the result goes to stdout and everything else to
// stderr.
func (a *app) execute(cmd *cobra.Command, l *ops.Launch, asJSON bool) error {
	out := a.stdio.Out
	if asJSON {
		out = a.stdio.Err
	}
	mode := a.ciMode()
	if mode == ciGitHub {
		a.ghMasks(out, l.Workflow, l.Options.Invocation.Env)
	}
	if mode == ciGitHub || mode == ciGitLab {
		// The runner's live output and the reporter's markup meet here.
		out = &syncWriter{w: out}
	}
	if l.Plan != nil {
		printPlan(out, l.Plan)
	}
	if p := l.RetryPlan; p != nil {
		fmt.Fprintf(out, "retrying run %s\n", l.Options.RunID)
		fmt.Fprintf(out, "  failed:  %s\n", listOrNone(p.Failed))
		fmt.Fprintf(out, "  re-run:  %s\n", listOrNone(p.Rerun))
		fmt.Fprintf(out, "  keep:    %s\n", listOrNone(p.Kept))
		if len(p.Capped) > 0 {
			fmt.Fprintf(out, "  at their iteration budget: %s\n", listOrNone(p.Capped))
		}
		printBudgets(out, p.Budgets)
	}
	att := ops.Attach{
		Output: out,
		// Session output is shown on a terminal, and in CI, where the
		// job's log is what people read.
		Live: isTerminal(out) || a.inCI(),
	}
	if asJSON {
		// One JSON object per line (docs/architecture.md, "Shared tables"): each event as it is
		// recorded, then the result.
		enc := json.NewEncoder(a.stdio.Out)
		enc.SetEscapeHTML(false)
		att.Events = func(e core.Event) { _ = enc.Encode(e) }
	}
	var rep *ciReporter
	if mode == ciGitHub || mode == ciGitLab {
		rep = &ciReporter{mode: mode, w: out}
		if prev := att.Events; prev != nil {
			att.Events = func(e core.Event) { prev(e); rep.event(e) }
		} else {
			att.Events = rep.event
		}
	}
	if !l.Options.NoWait && isTerminal(a.stdio.In) && isTerminal(out) {
		k := &asker{in: bufio.NewReader(a.stdio.In), out: out, by: a.svc.Who("")}
		att.Ask = k.Ask
	}
	res, err := a.svc.Start(cmd.Context(), l, att)
	if rep != nil {
		rep.finish(a.svc.Clock.Now())
	}
	if err != nil {
		return err
	}
	if mode == ciGitHub {
		if err := a.ghFinish(l.Options.Repo, res); err != nil {
			fmt.Fprintf(a.stdio.Err, "flow: %v\n", err)
		}
	}
	if asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdio.Out, "%s\n", b)
	}
	eng := a.engineArg()
	switch res.ExitCode {
	case ExitHuman:
		for _, id := range res.Waiting {
			arg := core.ShellArg(id)
			fmt.Fprintf(out, "run %s is waiting on a human: flow approve %s %s%s (or flow reject %s %s%s --reason ...), then: flow resume %s%s\n",
				res.RunID, res.RunID, arg, eng, res.RunID, arg, eng, res.RunID, eng)
		}
	case ExitPaused:
		fmt.Fprintf(out, "run %s is paused; go on with: flow continue %s%s, then: flow resume %s%s\n", res.RunID, res.RunID, eng, res.RunID, eng)
	}
	if res.ExitCode != 0 {
		return exitQuietly(res.ExitCode)
	}
	return nil
}

// printPlan prints what --start-at-step keeps and re-runs.
func printPlan(w io.Writer, p *ops.StartAtPlan) {
	if p.NewRun {
		fmt.Fprintf(w, "no earlier run of %s: starting a new run at %s\n", p.Workflow, p.Step)
		return
	}
	fmt.Fprintf(w, "restarting run %s at %s\n", p.RunID, p.Step)
	fmt.Fprintf(w, "  keep:    %s\n", listOrNone(p.Kept))
	fmt.Fprintf(w, "  re-run:  %s\n", listOrNone(p.Rerun))
	for _, m := range p.Missing {
		fmt.Fprintf(w, "  missing: %s (artifact of %s)\n", m.Path, m.Step)
	}
	printBudgets(w, p.Budgets)
}

// printBudgets prints the loops a restart or a retry reopens, whose
// iteration budgets start afresh.
func printBudgets(w io.Writer, loops []core.LoopBudget) {
	for _, l := range loops {
		fmt.Fprintf(w, "  budget:  %s loops back to %s: a fresh iteration budget (%d %s used before)\n",
			l.Gate, l.Target, l.Used, plural(l.Used, "iteration", "iterations"))
	}
}

func listOrNone(ids []core.StepKey) string {
	if len(ids) == 0 {
		return "(none)"
	}
	return strings.Join(core.KeyStrings(ids), ", ")
}
