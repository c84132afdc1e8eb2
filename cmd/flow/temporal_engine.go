//go:build temporal

package main

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/flow-run/flow/runner"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/temporal"
)

// This file links the Temporal engine: it is built into flow-temporal
// (go build -tags temporal -o flow-temporal ./cmd/flow).

func init() {
	temporalHooks = &temporalCLI{engine: temporalEngine, worker: temporalWorker, decide: temporalDecide,
		control: temporalControl, status: temporalStatus}
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
	return &temporal.Engine{Client: c, TaskQueue: f.queue, FS: a.svc.FS, Detach: f.detach}, c.Close, nil
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

func temporalDecide(ctx context.Context, a *app, f *temporalFlags, runID, step string, in runner.HumanInput) error {
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

func temporalControl(ctx context.Context, a *app, f *temporalFlags, runID string, state runner.ControlState) error {
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

func temporalStatus(ctx context.Context, a *app, f *temporalFlags, runID string, asJSON bool) error {
	c, err := dial(ctx, a, f)
	if err != nil {
		return err
	}
	defer c.Close()
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
