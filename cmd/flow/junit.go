package main

import (
	"fmt"

	"github.com/flow-run/flow/runner"
	"github.com/flow-run/flow/runner/ops"
)

// withJUnit runs a launch with run and then, when path is set, writes
// the run's JUnit XML report to path whatever the run's end (flow run,
// resume and retry --junit). A new run is given its id first, so that
// the report names the run that ran.
func (a *app) withJUnit(path string, l *ops.Launch, run func() error) error {
	if path == "" {
		return run()
	}
	if l.Options.RunID == "" {
		l.Options.RunID = runner.NewRunID(a.svc.Clock.Now())
	}
	err := run()
	jerr := a.svc.WriteRunJUnit(l.Options.Repo, l.Options.RunID, path)
	switch {
	case jerr == nil:
	case err == nil:
		return jerr
	default:
		fmt.Fprintf(a.stdio.Err, "flow: %v\n", jerr)
	}
	return err
}
