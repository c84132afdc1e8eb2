package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
)

// This file wires the Temporal engine (docs/temporal.md) into flow's
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
	// drain is how long a worker asked to stop lets its sessions finish
	// before it hands them back (--drain-timeout).
	drain time.Duration
}

// minHeartbeat is the shortest --heartbeat-timeout: a session's activity
// beats three times within it.
const minHeartbeat = 3 * time.Second

// temporalCLI is what flow-temporal links in; nil in a flow built
// without it.
type temporalCLI struct {
	// engine connects to the server the flags name; close disconnects.
	engine func(ctx context.Context, a *app, f *temporalFlags) (eng ops.Engine, close func(), err error)
	worker func(ctx context.Context, a *app, f *temporalFlags, repo string, shared bool) error
}

var temporalHooks *temporalCLI

// addTemporal adds flow worker, and --engine temporal to the commands
// that run and steer runs.
func (a *app) addTemporal(root *cobra.Command) {
	root.AddCommand(a.workerCmd())
	for _, c := range root.Commands() {
		switch c.Name() {
		case "run", "resume", "retry", "logs", "approve", "reject", "pause", "continue", "run-once", "cleanup", "status", "cancel":
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
				return ops.Usage("--detach is for --engine temporal")
			}
			if f.move {
				return ops.Usage("--move is for --engine temporal: a local run goes on in its own checkout")
			}
			if f.heartbeat != 0 {
				return ops.Usage("--heartbeat-timeout is for --engine temporal")
			}
			return local(cmd, args)
		case "temporal":
			if f.heartbeat != 0 && f.heartbeat < minHeartbeat {
				return ops.Usage("--heartbeat-timeout %s: at least %s", f.heartbeat, minHeartbeat)
			}
		default:
			return ops.Usage("--engine %q: want local or temporal", engine)
		}
		if j, _ := cmd.Flags().GetString("junit"); j != "" && f.detach {
			return ops.Usage("--junit writes the run's report when it ends: not with --detach")
		}
		h := temporalHooks
		if h == nil {
			return a.execTemporal(cmd.Context())
		}
		f.resolve(a.svc.Getenv)
		eng, closeFn, err := h.engine(cmd.Context(), a, f)
		if err != nil {
			return err
		}
		defer closeFn()
		a.svc.Engine, a.move = eng, f.move
		return local(cmd, args)
	}
}

// argAt returns args[i], or "".
func argAt(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

// stepAt reads args[i] as a step key (a step, or loop[item].step); the
// zero key when there is no such argument.
func stepAt(args []string, i int) (core.StepKey, error) {
	if i >= len(args) {
		return core.StepKey{}, nil
	}
	k, err := core.ParseStepKey(args[i])
	if err != nil {
		return core.StepKey{}, ops.Usage("%v", err)
	}
	return k, nil
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
checkout, unless the workers share one repository (--shared-repo).

A worker started before its server waits for it, trying again with backoff
and saying so on stderr. On SIGTERM or SIGINT it drains: it takes no more
work, lets the sessions it runs finish for up to --drain-timeout, then hands
the rest back to their runs, which record it and run them again on another
worker (docs/temporal.md).`,
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
	cmd.Flags().StringVar(&repo, "repo", "", "repository the sessions work in "+repoDefault)
	cmd.Flags().BoolVar(&shared, "shared-repo", false, "the workers share this repository: any of them may run any session")
	cmd.Flags().DurationVar(&f.drain, "drain-timeout", 0, "on SIGTERM, how long the sessions running may finish before they are handed back to run on another worker (default 5m)")
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
			return ops.Usage("the Temporal engine is in %s, which is neither next to flow nor on PATH; build it with: go build -tags temporal -o %s ./cmd/flow", flowTemporal, flowTemporal)
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
	if a.svc.Engine == nil || a.svc.Engine.Name() != "temporal" || a.svc.Getenv("FLOW_TEMPORAL_ADDRESS") != "" {
		return ""
	}
	return " --engine temporal"
}
