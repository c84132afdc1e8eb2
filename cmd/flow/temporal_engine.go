//go:build temporal

package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/temporal"
)

// This file links the Temporal engine: it is built into flow-temporal
// (go build -tags temporal -o flow-temporal ./cmd/flow).

func init() {
	temporalHooks = &temporalCLI{engine: temporalEngine, worker: temporalWorker, decide: temporalDecide,
		control: temporalControl, status: temporalStatus, restart: temporalRestart, logs: temporalLogs}
}

// dial connects to the Temporal server the flags name; the SDK says
// only what goes wrong.
func dial(ctx context.Context, a *app, f *temporalFlags) (client.Client, error) {
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(a.stdio.Err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	c, err := client.DialContext(ctx, client.Options{HostPort: f.address, Namespace: f.namespace, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", f.address, err)
	}
	return c, nil
}

func temporalEngine(ctx context.Context, a *app, f *temporalFlags) (ops.Engine, func(), error) {
	c, err := dial(ctx, a, f)
	if err != nil {
		return nil, nil, err
	}
	return &temporal.Engine{Client: c, TaskQueue: f.queue, FS: a.svc.FS, Detach: f.detach, SessionHeartbeat: f.heartbeat}, c.Close, nil
}

func temporalWorker(ctx context.Context, a *app, f *temporalFlags, repo string, shared bool) error {
	c, err := dial(ctx, a, f)
	if err != nil {
		return err
	}
	defer c.Close()
	acts := temporal.ActivitiesOf(a.svc, a.stdio.Out, repo)
	queue := f.queue
	if !shared {
		queue += " and " + temporal.HostQueue(f.queue, acts.Host, repo)
	}
	fmt.Fprintf(a.stdio.Out, "flow worker: %s namespace %s, task queue %s, repository %s\n", f.address, f.namespace, queue, repo)
	return temporal.Serve(ctx, c, f.queue, shared, acts)
}

func temporalDecide(ctx context.Context, a *app, f *temporalFlags, runID, step string, in core.HumanInput) error {
	c, err := dial(ctx, a, f)
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := temporal.Decide(ctx, c, runID, temporal.DecideRequest{Step: step, Input: in})
	if err != nil {
		return err
	}
	verb := "approved"
	if !d.Approved {
		verb = "rejected"
	}
	fmt.Fprintf(a.stdio.Out, "%s %s of run %s\n", verb, d.Step, d.RunID)
	return nil
}

func temporalControl(ctx context.Context, a *app, f *temporalFlags, runID string, state core.ControlState) error {
	c, err := dial(ctx, a, f)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := temporal.Control(ctx, c, runID, state); err != nil {
		return err
	}
	fmt.Fprintf(a.stdio.Out, "run %s: desired state %s\n", runID, state)
	return nil
}

func temporalStatus(ctx context.Context, a *app, f *temporalFlags, runID string, asJSON, watch bool) error {
	c, err := dial(ctx, a, f)
	if err != nil {
		return err
	}
	defer c.Close()
	if runID == "" {
		if runID, err = temporal.NewestRun(ctx, c, ""); err != nil {
			return err
		}
		if runID == "" {
			return core.Usage("no run on Temporal (namespace %s); start one with flow run WORKFLOW --engine temporal", f.namespace)
		}
	}
	if watch {
		// On a terminal, the running sessions' tails are those their
		// activities last beat.
		term, show := a.statusWatcher(asJSON, false)
		return temporal.Watch(ctx, c, runID, 0, watchOptions(term), show)
	}
	st, err := temporal.Status(ctx, c, runID)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(st)
	}
	printStatus(a.stdio.Out, st, false)
	return nil
}

func temporalRestart(ctx context.Context, a *app, f *temporalFlags, cmd *cobra.Command, req restartRequest) error {
	c, err := dial(ctx, a, f)
	if err != nil {
		return err
	}
	defer c.Close()
	eng := &temporal.Engine{Client: c, TaskQueue: f.queue, FS: a.svc.FS, Detach: f.detach, SessionHeartbeat: f.heartbeat}
	a.svc.Engine = eng
	if req.runID == "" {
		name := ""
		if req.wf != nil {
			name = req.wf.Name
		}
		if req.runID, err = temporal.NewestRun(ctx, c, name); err != nil {
			return err
		}
	}
	if req.runID == "" {
		if req.fresh == nil {
			return core.Usage("no run on Temporal to %s", cmd.Name())
		}
		// No run of the workflow: a new one starts at the step.
		l := req.fresh
		if core.IsInstance(req.startAt) {
			return core.Usage("--start-at-step %s: no run of %s to restart; a new run starts at a step of the top level (its loops' items are known once they start)", req.startAt, l.Workflow.Name)
		}
		if l.Workflow.Step(req.startAt) == nil {
			return core.Usage("--start-at-step: unknown step %q", req.startAt)
		}
		l.Options.StartAt = req.startAt
		l.Plan = &ops.StartAtPlan{Workflow: l.Workflow.Name, Step: req.startAt, NewRun: true, Kept: []string{}, Rerun: []string{}, Missing: []ops.MissingArtifact{}}
		return a.withJUnit(ctx, req.junit, l, func() error { return a.execute(cmd, l, req.asJSON) })
	}
	l, err := eng.PrepareRestart(ctx, temporal.RestartRequest{RunID: req.runID, Workflow: req.wf, WorkflowPath: req.workflowPath,
		Repo: req.repo, StartAt: req.startAt, Retry: req.retry, NoWait: req.noWait, Budgets: req.budgets, Invocation: req.inv, Move: req.move, Force: req.force})
	if err != nil {
		return err
	}
	return a.withJUnit(ctx, req.junit, l, func() error { return a.execute(cmd, l, req.asJSON) })
}

func temporalLogs(ctx context.Context, a *app, f *temporalFlags, runID, step string, follow bool) error {
	c, err := dial(ctx, a, f)
	if err != nil {
		return err
	}
	defer c.Close()
	if follow {
		return temporal.FollowLogs(ctx, c, runID, step, 0, a.stdio.Out, a.stdio.Err)
	}
	tails, err := temporal.Logs(ctx, c, runID, step)
	if err != nil {
		return err
	}
	if len(tails) == 0 {
		if step == "" {
			fmt.Fprintf(a.stdio.Err, "run %s has no session's output on Temporal yet\n", runID)
		} else {
			fmt.Fprintf(a.stdio.Err, "step %s of run %s printed no output\n", step, runID)
		}
		return nil
	}
	for _, t := range tails {
		if step == "" {
			fmt.Fprintf(a.stdio.Out, "==> %s (iteration %d, attempt %d) <==\n", t.Step, t.Iteration, t.Attempt)
		}
		if int64(len(t.Tail)) < t.Size {
			fmt.Fprintf(a.stdio.Err, "%s: the last %d of %d bytes; the whole log is %s on %s\n", t.Step, len(t.Tail), t.Size, t.Log, t.Host)
		}
		fmt.Fprint(a.stdio.Out, t.Tail)
	}
	return nil
}
