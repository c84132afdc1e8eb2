package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/internal/suggest"
	"github.com/flow-run/flow/runner"
)

// addRunnerCmds adds the commands that run and inspect runs.
func (a *app) addRunnerCmds(root *cobra.Command) {
	root.AddCommand(
		a.runCmd(),
		a.resumeCmd(),
		a.statusCmd(),
		a.runsCmd(),
		a.logsCmd(),
		a.approveCmd(),
		a.rejectCmd(),
		a.controlCmd("pause", runner.Pause, "Pause a run after its current session"),
		a.controlCmd("continue", runner.Continuous, "Let a paused run go on"),
		a.controlCmd("run-once", runner.RunOnce, "Let a paused run start exactly one more session, then pause"),
		a.controlCmd("cleanup", runner.RunCleanup, "Run the workflow's cleanup session, then pause"),
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
	vars          []string
	maxAttempts   int
	maxIterations int
}

func (f *runFlags) add(cmd *cobra.Command, isRun bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", "", "repository the sessions work in (default: the current directory)")
	fl.StringVar(&f.startAt, "start-at-step", "", "reset this step and everything downstream of it, keep the rest, and go on")
	fl.BoolVar(&f.force, "force", false, "with --start-at-step: go on even when kept steps' artifacts are missing")
	fl.BoolVar(&f.noWait, "no-wait", false, "exit 3 at a human step, or 4 when paused, instead of waiting (for CI)")
	fl.BoolVar(&f.asJSON, "json", false, "print the result as JSON on stdout, progress on stderr")
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "default sessions per iteration before a step fails (steps' own max_attempts win)")
	fl.IntVar(&f.maxIterations, "max-iterations", 0, "default loop-backs before a gate fails the run (steps' own max_iterations win)")
	if isRun {
		fl.StringArrayVar(&f.vars, "var", nil, "override a workflow var: --var key=value (repeatable)")
		fl.StringVar(&f.runID, "run-id", "", "id of the new run (default: time and a random suffix)")
	}
}

func (a *app) runCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run WORKFLOW",
		Short: "Run a workflow, or restart its newest run at a step",
		Long: `run starts a new run of WORKFLOW and drives its sessions until the run completes,
fails, waits on a human (with --no-wait) or is interrupted. The run's record is
kept in <repo>/.agents/runs/<run_id>/.

With --start-at-step STEP it takes the newest run of the workflow instead, prints
its plan (kept steps, steps that run again, missing artifacts), resets STEP and
everything downstream of it to PENDING and goes on; with no earlier run it
starts a new one at STEP.

Exit codes: 0 completed, 1 a step failed, 2 bad usage or invalid workflow,
3 waiting on a human (--no-wait), 4 paused (--no-wait), 5 an iteration budget
ran out, 130 interrupted.`,
		Example: "  flow run workflows/sdlc.yaml --var feature='dark mode'\n  flow run workflows/sdlc.yaml --start-at-step coding",
		Args:    cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"yaml", "yml", "hcl"}, cobra.ShellCompDirectiveFilterFileExt
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			repo, err := a.repoDir(f.repo)
			if err != nil {
				return err
			}
			wf, err := a.loadWorkflow(args[0], repo)
			if err != nil {
				return err
			}
			vars, err := parseVars(wf, f.vars)
			if err != nil {
				return err
			}
			opts := runner.Options{Workflow: wf, Repo: repo, RunID: f.runID, Vars: vars, NoWait: f.noWait,
				Budgets: runner.Budgets{MaxAttempts: f.maxAttempts, MaxIterations: f.maxIterations}}
			if f.startAt != "" {
				if err := checkStep(wf, f.startAt); err != nil {
					return err
				}
				opts.StartAt = f.startAt
				ref, err := runner.FindRun(a.fs, repo, f.runID, wf.Name)
				switch {
				case err == nil:
					if err := a.printStartAtPlan(wf, ref, repo, f.startAt, f.force, f.asJSON); err != nil {
						return err
					}
					opts.Resume, opts.RunID = true, ref.ID
				case errors.Is(err, runner.ErrNoRun):
					a.progress(f.asJSON, "no earlier run of %s: starting a new run at %s\n", wf.Name, f.startAt)
				default:
					return err
				}
			}
			return a.execute(cmd, opts, f.asJSON)
		},
	}
	f.add(cmd, true)
	return cmd
}

func (a *app) resumeCmd() *cobra.Command {
	var f runFlags
	var workflowPath string
	cmd := &cobra.Command{
		Use:   "resume [RUN_ID]",
		Short: "Go on with a run that stopped: interrupted, crashed, waiting on a human or paused",
		Long: `resume takes a run (the newest when RUN_ID is left out) and goes on from its record:
finished steps are kept, a step that was running when its runner died runs again,
and edits to the workflow file are picked up (new steps start PENDING, removed
steps are dropped). A run held by a live runner is refused; a dead runner's run
is taken over.`,
		Example: "  flow resume\n  flow resume 20250115-143000-f8c1a4 --start-at-step coding",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			repo, err := a.repoDir(f.repo)
			if err != nil {
				return err
			}
			ref, err := a.findRun(repo, args)
			if err != nil {
				return err
			}
			path := workflowPath
			if path == "" {
				path = locateWorkflow(a.fs, ref.State, repo)
			}
			wf, err := a.loadWorkflow(path, repo)
			if err != nil {
				return err
			}
			opts := runner.Options{Workflow: wf, Repo: repo, RunID: ref.ID, Resume: true, NoWait: f.noWait,
				Budgets: runner.Budgets{MaxAttempts: f.maxAttempts, MaxIterations: f.maxIterations}}
			if f.startAt != "" {
				if err := checkStep(wf, f.startAt); err != nil {
					return err
				}
				if err := a.printStartAtPlan(wf, ref, repo, f.startAt, f.force, f.asJSON); err != nil {
					return err
				}
				opts.StartAt = f.startAt
			}
			return a.execute(cmd, opts, f.asJSON)
		},
	}
	f.add(cmd, false)
	cmd.Flags().StringVar(&workflowPath, "workflow", "", "workflow file to resume with (default: the run's own, found again under --repo if the run was copied)")
	return cmd
}

// execute runs a run and maps its end to an exit code.
func (a *app) execute(cmd *cobra.Command, opts runner.Options, asJSON bool) error {
	out := a.stdio.Out
	if asJSON {
		out = a.stdio.Err
	}
	host, _ := os.Hostname()
	r := &runner.Runner{
		FS:      a.fs,
		Clock:   clock.Real(),
		Starter: proc.OS(),
		Stdout:  out,
		// Session output is shown on a terminal, and in CI, where the
		// job's log is what people read.
		Live:    isTerminal(out) || a.getenv("CI") == "true",
		Environ: os.Environ(),
		Host:    host,
		PID:     os.Getpid(),
		Alive:   runlock.ProcessAlive,
		// Sessions of a dead runner may have left processes behind.
		KillOrphans: proc.KillOrphans,
		KillMarked:  proc.KillMarked,
	}
	if !opts.NoWait && isTerminal(a.stdio.In) && isTerminal(out) {
		k := &asker{in: bufio.NewReader(a.stdio.In), out: out}
		r.Ask = k.Ask
	}
	res, err := r.Run(cmd.Context(), opts)
	if err != nil {
		return &exitError{code: int(runner.CodeOf(err)), err: err}
	}
	if asJSON {
		b, _ := json.MarshalIndent(map[string]any{
			"run_id": res.RunID, "run_dir": res.RunDir, "status": res.Status, "exit_code": res.ExitCode, "reason": res.Reason,
		}, "", "  ")
		fmt.Fprintf(a.stdio.Out, "%s\n", b)
	}
	switch res.ExitCode {
	case ExitHuman:
		for _, id := range res.State.StepOrder {
			if s := res.State.Steps[id]; s != nil && s.Status == runner.WaitingOnHuman {
				fmt.Fprintf(out, "run %s is waiting on a human: flow approve %s %s (or flow reject %s %s --reason ...), then: flow resume %s\n",
					res.RunID, res.RunID, id, res.RunID, id, res.RunID)
			}
		}
	case ExitPaused:
		fmt.Fprintf(out, "run %s is paused; go on with: flow continue %s, then: flow resume %s\n", res.RunID, res.RunID, res.RunID)
	}
	if res.ExitCode != 0 {
		return &exitError{code: res.ExitCode, quiet: true}
	}
	return nil
}

// printStartAtPlan prints what --start-at-step keeps and re-runs, and
// refuses when kept artifacts are missing (unless forced).
func (a *app) printStartAtPlan(wf *config.Workflow, ref runner.RunRef, repo, step string, force, asJSON bool) error {
	p, err := runner.PlanStartAt(a.fs, wf, ref.State, repo, step)
	if err != nil {
		return usageError("%v", err)
	}
	a.progress(asJSON, "restarting run %s at %s\n", ref.ID, step)
	a.progress(asJSON, "  keep:    %s\n", listOrNone(p.Kept))
	a.progress(asJSON, "  re-run:  %s\n", listOrNone(p.Rerun))
	for _, m := range p.Missing {
		a.progress(asJSON, "  missing: %s (artifact of %s)\n", m.Path, m.Step)
	}
	if len(p.Missing) > 0 && !force {
		return &exitError{code: ExitUsage, err: fmt.Errorf("kept steps' artifacts are missing; re-run from an earlier step, or pass --force")}
	}
	return nil
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "(none)"
	}
	return strings.Join(ids, ", ")
}

func (a *app) progress(asJSON bool, format string, args ...any) {
	w := a.stdio.Out
	if asJSON {
		w = a.stdio.Err
	}
	fmt.Fprintf(w, format, args...)
}

// checkStep rejects a step name the workflow does not have, suggesting
// the closest one.
func checkStep(wf *config.Workflow, id string) error {
	if wf.Step(id) != nil {
		return nil
	}
	ids := make([]string, len(wf.Steps))
	for i, s := range wf.Steps {
		ids[i] = s.ID
	}
	msg := fmt.Sprintf("%s: --start-at-step: unknown step %q", wf.File, id)
	if s, ok := suggest.Closest(id, ids); ok {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return usageError("%s\nsteps: %s", msg, strings.Join(ids, ", "))
}

// parseVars reads --var key=value flags; keys must be vars of the
// workflow.
func parseVars(wf *config.Workflow, kvs []string) (map[string]string, error) {
	vars := map[string]string{}
	names := make([]string, 0, len(wf.Vars))
	for k := range wf.Vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError("--var %q: want key=value\ntry: flow run %s --var key=value", kv, wf.File)
		}
		if !utf8.ValidString(kv) {
			return nil, usageError("--var %s: the value is not valid UTF-8", strings.ToValidUTF8(k, "?"))
		}
		if config.IsSecretName(k, wf.Secrets) {
			// A var is recorded in events.jsonl and run_state.json; a
			// secret must never be.
			return nil, usageError("--var %s: %q names a secret, and vars are recorded in the run; pass it through the environment instead (export %s=...; flow reads it at every start, hides its value in everything it writes, and never records it)",
				k, k, strings.ToUpper(k))
		}
		if _, known := wf.Vars[k]; !known {
			msg := fmt.Sprintf("--var %s: the workflow has no var %q", k, k)
			if s, ok := suggest.Closest(k, names); ok {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			if len(names) > 0 {
				msg += "; its vars: " + strings.Join(names, ", ")
			}
			return nil, usageError("%s", msg)
		}
		vars[k] = v
	}
	return vars, nil
}

// repoDir returns the absolute repository directory.
func (a *app) repoDir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", usageError("--repo %s: %v", flag, err)
	}
	if fi, err := a.fs.Stat(abs); err != nil || !fi.IsDir() {
		return "", usageError("--repo %s: not a directory", dir)
	}
	return abs, nil
}

// openRun returns the repository of --repo and the run named by args[0]
// in it (the newest run when args is empty).
func (a *app) openRun(repoFlag string, args []string) (string, runner.RunRef, error) {
	dir, err := a.repoDir(repoFlag)
	if err != nil {
		return "", runner.RunRef{}, err
	}
	ref, err := a.findRun(dir, args)
	return dir, ref, err
}

// findRun returns the run named by args[0], or the newest run.
func (a *app) findRun(repo string, args []string) (runner.RunRef, error) {
	id := ""
	if len(args) > 0 {
		id = args[0]
		if err := runner.CheckRunID(id); err != nil {
			return runner.RunRef{}, err
		}
	}
	ref, err := runner.FindRun(a.fs, repo, id, "")
	if err != nil {
		if errors.Is(err, runner.ErrNoRun) && id != "" {
			var ids []string
			runs, _ := runner.ListRuns(a.fs, repo)
			for _, r := range runs {
				ids = append(ids, r.ID)
			}
			msg := err.Error()
			if s, ok := suggest.Closest(id, ids); ok {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return ref, usageError("%s\ntry: flow runs", msg)
		}
		if errors.Is(err, runner.ErrNoRun) {
			return ref, usageError("%v\ntry: flow run WORKFLOW", err)
		}
		return ref, &exitError{code: int(runner.CodeOf(err)), err: err}
	}
	return ref, nil
}

// locateWorkflow finds a run's workflow file: where it was, or at the
// same place relative to the repository when the run directory was
// copied to another checkout.
func locateWorkflow(fsys afero.Fs, st *runner.State, repo string) string {
	if ok, _ := afero.Exists(fsys, st.WorkflowFile); ok {
		return st.WorkflowFile
	}
	if rel, err := filepath.Rel(st.RepoDir, st.WorkflowFile); err == nil && !strings.HasPrefix(rel, "..") {
		if p := filepath.Join(repo, rel); p != st.WorkflowFile {
			if ok, _ := afero.Exists(fsys, p); ok {
				return p
			}
		}
	}
	return st.WorkflowFile
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func fmtTime(t *runner.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.DateTime)
}
