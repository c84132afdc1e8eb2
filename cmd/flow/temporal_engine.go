//go:build temporal

package main

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/temporal"
)

// This file links the Temporal engine: it is built into flow-temporal
// (go build -tags temporal -o flow-temporal ./cmd/flow).

func init() {
	temporalHooks = &temporalCLI{engine: temporalEngine, worker: temporalWorker}
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
	return &temporal.Engine{Client: c, TaskQueue: f.queue, FS: a.svc.FS, Detach: f.detach, SessionHeartbeat: f.heartbeat,
		Prepare: a.svc.PrepareRun}, c.Close, nil
}

func temporalWorker(ctx context.Context, a *app, f *temporalFlags, repo string, shared bool) error {
	// A worker waits for its server: one started beside it by a
	// service manager may come up first.
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(a.stdio.Err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	c, err := temporal.DialWaiting(ctx, client.Options{HostPort: f.address, Namespace: f.namespace, Logger: logger}, a.stdio.Err, nil)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(a.stdio.Err, "flow worker: stopped before Temporal at %s could be reached\n", f.address)
			return nil
		}
		return fmt.Errorf("connect to Temporal at %s: %w", f.address, err)
	}
	defer c.Close()
	acts := temporal.ActivitiesOf(a.svc, a.stdio.Out, repo)
	queue := f.queue
	if !shared {
		queue += " and " + temporal.HostQueue(f.queue, acts.Host, repo)
	}
	fmt.Fprintf(a.stdio.Out, "flow worker: %s namespace %s, task queue %s, repository %s\n", f.address, f.namespace, queue, repo)
	return temporal.Serve(ctx, c, temporal.ServeOptions{Queue: f.queue, Shared: shared, DrainTimeout: f.drain}, acts)
}
