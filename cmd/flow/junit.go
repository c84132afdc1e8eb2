package main

import (
	"context"
	"fmt"
	"time"

	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/spec"
)

// withJUnit runs a launch with run and then, when path is set, writes
// the run's JUnit XML report to path whatever the run's end (flow run,
// resume and retry --junit). A new run is given its id first, so that
// the report names the run that ran.
func (a *app) withJUnit(ctx context.Context, path string, l *ops.Launch, run func() error) error {
	if path == "" {
		return run()
	}
	if l.Options.RunID == "" {
		l.Options.RunID = spec.NewRunID(a.svc.Clock.Now())
	}
	err := run()
	// The report is written however the run ended, interrupted too; a
	// run on Temporal is asked for its state, which may take a while
	// when no worker answers.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), junitWait)
	defer cancel()
	jerr := a.svc.WriteRunJUnit(ctx, l.Options.Repo, l.Options.RunID, path)
	switch {
	case jerr == nil:
	case err == nil:
		return jerr
	default:
		fmt.Fprintf(a.stdio.Err, "flow: %v\n", jerr)
	}
	return err
}

// junitWait bounds the wait for a run's state when its report is
// written: a run on Temporal is asked through a query, which a worker
// answers.
const junitWait = 30 * time.Second
