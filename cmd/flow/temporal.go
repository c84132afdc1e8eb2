package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// This file wires the Temporal engine (DESIGN §16) into flow's
// commands. The engine itself links Temporal's SDK, which costs every
// flow command about 3.5 ms of start-up and 15 MB: it lives in
// flow-temporal, the same command line built with -tags temporal
// (temporal_engine.go). flow runs flow-temporal — next to its own
// executable, else on PATH — for the commands that need it.

// flowTemporal is the name of the binary that holds the Temporal engine.
const flowTemporal = "flow-temporal"

// temporalFlags say which Temporal server, namespace and task queue a
// command talks to.
type temporalFlags struct {
	engine    string
	address   string
	namespace string
	queue     string
	detach    bool
	move      bool
	// heartbeat is how long a session's activity may go without a beat
	// before Temporal runs it again (--heartbeat-timeout; 0: a minute).
	heartbeat time.Duration
}

// minHeartbeat is the shortest --heartbeat-timeout: a session's activity
// beats three times within it.
const minHeartbeat = 3 * time.Second

// temporalCLI are the commands of the Temporal engine; nil in a flow
// built without it.
type temporalCLI struct {
	engine  func(ctx context.Context, a *app, f *temporalFlags) (ops.Engine, func(), error)
	worker  func(ctx context.Context, a *app, f *temporalFlags, repo string, shared bool) error
	decide  func(ctx context.Context, a *app, f *temporalFlags, runID, step string, in core.HumanInput) error
	control func(ctx context.Context, a *app, f *temporalFlags, runID string, state core.ControlState) error
	status  func(ctx context.Context, a *app, f *temporalFlags, runID string, asJSON, watch bool) error
	// restart runs flow resume, flow retry and flow run --start-at-step
	// (with fresh, the launch of a new run at the step when the workflow
	// has no run on Temporal).
	restart func(ctx context.Context, a *app, f *temporalFlags, cmd *cobra.Command, req restartRequest) error
	logs    func(ctx context.Context, a *app, f *temporalFlags, runID, step string, follow bool) error
}

// restartRequest is a command that makes a run on Temporal go on.
type restartRequest struct {
	runID, startAt string
	retry, noWait  bool
	// move moves the run off its lost worker (--move); force goes on
	// though kept steps' artifacts are missing (--force).
	move, force bool
	asJSON      bool
	budgets     local.Budgets
	inv         record.Invocation
	// wf is the workflow flow run names, and fresh its launch as a new
	// run; nil for flow resume and flow retry.
	wf    *config.Workflow
	fresh *ops.Launch
	// workflowPath is the file flow resume --workflow names; repo is
	// the caller's repository, where the run's workflow file is read.
	workflowPath, repo string
	// junit is where --junit writes the run's report, or "".
	junit string
}

var temporalHooks *temporalCLI

// addTemporal adds flow worker, and --engine temporal to the commands
// that run and steer runs.
func (a *app) addTemporal(root *cobra.Command) {
	root.AddCommand(a.workerCmd())
	for _, c := range root.Commands() {
		switch c.Name() {
		case "run", "resume", "retry", "logs", "approve", "reject", "pause", "continue", "run-once", "cleanup", "status":
			a.withEngine(c)
		}
	}
}

// addServer adds the flags that name a Temporal server.
func (f *temporalFlags) addServer(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.address, "address", "", "the Temporal server, HOST:PORT (default: $FLOW_TEMPORAL_ADDRESS, else localhost:7233)")
	fl.StringVar(&f.namespace, "namespace", "", "the Temporal namespace (default: $FLOW_TEMPORAL_NAMESPACE, else default)")
	fl.StringVar(&f.queue, "task-queue", "", "the task queue of flow's workers (default: $FLOW_TEMPORAL_TASK_QUEUE, else flow)")
}

// resolve fills in the defaults from the environment.
func (f *temporalFlags) resolve(getenv func(string) string) {
	or := func(v *string, env, def string) {
		if *v == "" {
			*v = getenv(env)
		}
		if *v == "" {
			*v = def
		}
	}
	or(&f.address, "FLOW_TEMPORAL_ADDRESS", "localhost:7233")
	or(&f.namespace, "FLOW_TEMPORAL_NAMESPACE", "default")
	or(&f.queue, "FLOW_TEMPORAL_TASK_QUEUE", "flow")
}

// withEngine adds --engine to a command: local runs it as before;
// temporal runs it against a Temporal server. With FLOW_TEMPORAL_ADDRESS
// set, temporal is the default.
func (a *app) withEngine(c *cobra.Command) {
	f := &temporalFlags{}
	c.Flags().StringVar(&f.engine, "engine", "", "local, or temporal: run on a Temporal server (default: temporal when $FLOW_TEMPORAL_ADDRESS is set, else local)")
	f.addServer(c)
	if c.Name() == "run" {
		c.Flags().BoolVar(&f.detach, "detach", false, "with --engine temporal: return at once with the run id (exit 0)")
	}
	if c.Name() == "run" || c.Name() == "resume" || c.Name() == "retry" {
		c.Flags().DurationVar(&f.heartbeat, "heartbeat-timeout", 0, "with --engine temporal: how long a session may go without a beat before Temporal runs it again elsewhere (default 1m; a running session's output reaches flow logs and status within 0.8 of it)")
	}
	if c.Name() == "resume" || c.Name() == "retry" {
		c.Flags().BoolVar(&f.move, "move", false, "with --engine temporal: move the run off its worker, whose host is lost, to whichever worker of --task-queue takes it (its running steps run again there, in that worker's checkout)")
	}
	local := c.RunE
	if c.Name() == "logs" {
		// flow logs RUN_ID on Temporal prints the tail of every step's
		// last session; a local run needs the STEP.
		exact := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if e, _ := cmd.Flags().GetString("engine"); e == "temporal" || e == "" && a.svc.Getenv("FLOW_TEMPORAL_ADDRESS") != "" {
				return cobra.RangeArgs(1, 2)(cmd, args)
			}
			return exact(cmd, args)
		}
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		engine := f.engine
		if engine == "" {
			engine = "local"
			if a.svc.Getenv("FLOW_TEMPORAL_ADDRESS") != "" {
				engine = "temporal"
			}
		}
		switch engine {
		case "local":
			if f.detach {
				return core.Usage("--detach is for --engine temporal")
			}
			if f.move {
				return core.Usage("--move is for --engine temporal: a local run goes on in its own checkout")
			}
			if f.heartbeat != 0 {
				return core.Usage("--heartbeat-timeout is for --engine temporal")
			}
			return local(cmd, args)
		case "temporal":
			if by, _ := cmd.Flags().GetString("by"); by != "" && c.Name() != "approve" && c.Name() != "reject" {
				return core.Usage("--by is recorded by the local engine: a run on Temporal has its server's history")
			}
			if f.heartbeat != 0 && f.heartbeat < minHeartbeat {
				return core.Usage("--heartbeat-timeout %s: at least %s", f.heartbeat, minHeartbeat)
			}
		default:
			return core.Usage("--engine %q: want local or temporal", engine)
		}
		h := temporalHooks
		if h == nil {
			return a.execTemporal(cmd.Context())
		}
		f.resolve(a.svc.Getenv)
		ctx := cmd.Context()
		fl := cmd.Flags()
		switch cmd.Name() {
		case "run", "resume", "retry":
			if j, _ := fl.GetString("junit"); j != "" && f.detach {
				return core.Usage("--junit writes the run's report when it ends: not with --detach")
			}
			if cmd.Name() != "run" || fl.Changed("start-at-step") {
				req, err := a.restartRequestOf(cmd, args)
				if err != nil {
					return err
				}
				req.move = f.move
				req.junit, _ = fl.GetString("junit")
				return h.restart(ctx, a, f, cmd, req)
			}
			e, closeFn, err := h.engine(ctx, a, f)
			if err != nil {
				return err
			}
			defer closeFn()
			a.svc.Engine = e
			return local(cmd, args)
		case "approve", "reject":
			by, _ := fl.GetString("by")
			in := core.HumanInput{Approved: cmd.Name() == "approve", By: a.svc.Who(by)}
			if in.Approved {
				raw, _ := fl.GetStringArray("input")
				vals, err := ops.ParseInputs(raw)
				if err != nil {
					return err
				}
				in.Input = vals
			} else {
				in.Reason, _ = fl.GetString("reason")
			}
			return h.decide(ctx, a, f, args[0], args[1], in)
		case "logs":
			if all, _ := fl.GetBool("all"); all {
				return core.Usage("logs --all is for local runs: a run on Temporal keeps the tail of each step's last session")
			}
			follow, _ := fl.GetBool("follow")
			if follow && len(args) < 2 {
				return core.Usage("logs --follow follows one step's session: flow logs %s STEP --follow --engine temporal", args[0])
			}
			return h.logs(ctx, a, f, args[0], argAt(args, 1), follow)
		case "status":
			asJSON, _ := fl.GetBool("json")
			watch, _ := fl.GetBool("watch")
			// Without a run id, the newest run on the server, as a
			// local status shows the repository's newest.
			return h.status(ctx, a, f, argAt(args, 0), asJSON, watch)
		default:
			if len(args) == 0 {
				return core.Usage("%s --engine temporal needs a RUN_ID", cmd.Name())
			}
			states := map[string]core.ControlState{"pause": core.Pause, "continue": core.Continuous, "run-once": core.RunOnce, "cleanup": core.RunCleanup}
			return h.control(ctx, a, f, args[0], states[cmd.Name()])
		}
	}
}

// restartRequestOf reads the flags of flow resume, flow retry or flow
// run --start-at-step.
func (a *app) restartRequestOf(cmd *cobra.Command, args []string) (restartRequest, error) {
	fl := cmd.Flags()
	var r restartRequest
	r.startAt, _ = fl.GetString("start-at-step")
	r.noWait, _ = fl.GetBool("no-wait")
	r.asJSON, _ = fl.GetBool("json")
	r.retry = cmd.Name() == "retry"
	r.force, _ = fl.GetBool("force")
	r.workflowPath, _ = fl.GetString("workflow")
	r.budgets.MaxAttempts, _ = fl.GetInt("max-attempts")
	r.budgets.MaxIterations, _ = fl.GetInt("max-iterations")
	r.budgets.Raise.CostUSD, _ = fl.GetFloat64("budget-cost")
	r.budgets.Raise.Tokens, _ = fl.GetInt64("budget-tokens")
	r.budgets.Raise.Sessions, _ = fl.GetInt("budget-sessions")
	r.inv.Format, _ = fl.GetString("format")
	r.inv.Wrapper, _ = fl.GetString("wrapper")
	r.inv.WrapperArgs, _ = fl.GetStringArray("wrapper-arg")
	r.inv.CommandTemplate, _ = fl.GetString("command-template")
	r.inv.PauseForHumanInput, _ = fl.GetBool("pause-for-human-input")
	r.inv.GateStateFile, _ = fl.GetString("gate-state-file")
	r.inv.Env, _ = fl.GetStringArray("env")
	repo, _ := fl.GetString("repo")
	if cmd.Name() != "run" {
		r.runID = argAt(args, 0)
		var err error
		if r.repo, err = a.svc.Repo(repo); err != nil {
			return r, err
		}
		if r.workflowPath != "" {
			if r.workflowPath, err = filepath.Abs(r.workflowPath); err != nil {
				return r, err
			}
		}
		return r, nil
	}
	// flow run WORKFLOW --start-at-step: the newest run of WORKFLOW on
	// Temporal, or the one --run-id names; with none, a new run at the
	// step.
	r.runID, _ = fl.GetString("run-id")
	vars, _ := fl.GetStringArray("var")
	l, err := a.svc.PrepareRun(ops.RunRequest{Workflow: args[0], Repo: repo, RunID: r.runID, Vars: vars, NoWait: r.noWait,
		Budgets: r.budgets, Invocation: r.inv})
	if err != nil {
		return r, err
	}
	a.notices(cmd, l.Workflow)
	r.wf, r.fresh, r.repo = l.Workflow, l, l.Options.Repo
	return r, nil
}

// argAt returns args[i], or "".
func argAt(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

func (a *app) workerCmd() *cobra.Command {
	f := &temporalFlags{}
	var repo string
	var shared bool
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the sessions of runs on a Temporal server (flow run --engine temporal)",
		Long: `worker serves a task queue of a Temporal server: it runs the workflow code of flow
runs and their sessions, as activities, in --repo, exactly as flow run does
locally (process groups, timeouts, logs, reports, gates), and keeps each run's
events.jsonl and run_state.json under <repo>/.agents/runs/<run_id>/. A run's
sessions stay on the worker that took its first one, so that they share its
checkout, unless the workers share one repository (--shared-repo).`,
		Example: "  flow worker --address localhost:7233 --task-queue flow --repo .",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h := temporalHooks
			if h == nil {
				return a.execTemporal(cmd.Context())
			}
			f.resolve(a.svc.Getenv)
			dir, err := a.svc.Repo(repo)
			if err != nil {
				return err
			}
			return h.worker(cmd.Context(), a, f, dir, shared)
		},
	}
	f.addServer(cmd)
	cmd.Flags().StringVar(&repo, "repo", "", "repository the sessions work in (default: the current directory)")
	cmd.Flags().BoolVar(&shared, "shared-repo", false, "the workers share this repository: any of them may run any session")
	return cmd
}

// execTemporal runs this command line with flow-temporal, found next to
// flow's executable or on PATH, and exits with its code.
func (a *app) execTemporal(ctx context.Context) error {
	path := ""
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), flowTemporal); isExecutable(p) {
			path = p
		}
	}
	if path == "" {
		p, err := exec.LookPath(flowTemporal)
		if err != nil {
			return core.Usage("the Temporal engine is in %s, which is neither next to flow nor on PATH; build it with: go build -tags temporal -o %s ./cmd/flow", flowTemporal, flowTemporal)
		}
		path = p
	}
	cmd := exec.CommandContext(ctx, path, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdio.In, a.stdio.Out, a.stdio.Err
	cmd.Env = a.svc.Environ
	// An interrupt reaches flow-temporal as it reached flow.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitQuietly(ee.ExitCode())
	}
	return err
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// engineArg is what the commands that steer a run need beyond its id:
// " --engine temporal" for a run on Temporal, unless
// FLOW_TEMPORAL_ADDRESS makes it the default; "" for a local run.
func (a *app) engineArg() string {
	e, ok := a.svc.Engine.(interface{ Name() string })
	if !ok || e.Name() != "temporal" || a.svc.Getenv("FLOW_TEMPORAL_ADDRESS") != "" {
		return ""
	}
	return " --engine temporal"
}
