package local

import (
	"context"
	"strings"

	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/retention"
)

// This file is what the local driver does when a run ends
// (docs/operating-runs.md, "Retention: removing finished runs"): it writes the run's line in
// the repository's history, and removes the runs of the workflow that
// its defaults.retention lets go — never the run that ends, a live run
// or one that waits (package runner/retention). Neither changes how the
// run ended: what goes wrong is printed, not recorded in the run.

// ended is what the runner does once the run it ran has finished.
func (x *run) ended(ctx context.Context) {
	if err := record.AppendHistory(x.rec, x.opts.Repo, record.HistoryOf(x.st)); err != nil {
		x.printf("history: %v\n", err)
	}
	x.retain(ctx)
}

// retain applies the workflow's retention to its other runs.
func (x *run) retain(ctx context.Context) {
	r := x.wf.Defaults.Retention
	if r == nil || x.opts.Invocation.SkipRetention {
		return
	}
	pol := retention.Policy{Keep: r.Keep, OlderThan: r.OlderThan, Workflow: x.st.WorkflowName}
	var g retention.Git
	if rg, ok := x.ws().git.(retention.Git); ok {
		g = rg
	}
	p := &retention.Pruner{FS: x.r.FS, Rec: x.rec, Git: g, Clock: x.r.Clock, Alive: x.r.Alive, Host: x.r.Host, PID: x.r.PID}
	res, err := p.Prune(ctx, x.opts.Repo, pol, retention.Options{Except: x.st.RunID})
	for _, pr := range res.Pruned {
		x.printf("retention: removed run %s (%s)\n", pr.RunID, pr.Why)
	}
	for _, w := range res.Warnings {
		x.printf("retention: %s\n", w)
	}
	for _, l := range res.Left {
		if !strings.HasPrefix(l.Reason, "the run that is ending") {
			x.printf("retention: kept run %s: %s\n", l.RunID, l.Reason)
		}
	}
	if err != nil {
		x.printf("retention: %v\n", err)
	}
}
