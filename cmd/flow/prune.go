package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/retention"
)

// pruneCmd is flow prune: it removes finished runs (with their
// worktrees and branches) per a retention policy, or with --worktrees
// only the git worktrees runs left behind.
func (a *app) pruneCmd() *cobra.Command {
	var repo, olderThan, workflow string
	var keep int
	var statuses []string
	var worktrees, asJSON, dryRun bool
	cmd := &cobra.Command{
		Use:   "prune [--keep N] [--older-than D] [--status S]... [--dry-run] | prune --worktrees [RUN_ID]",
		Short: "Remove finished runs, or the git worktrees runs left behind",
		Long: `prune removes finished runs from the repository: each run's directory, its git
worktrees and its branches (flow/<run>/…). --keep N keeps the N newest runs of
each workflow whatever their age; --older-than D keeps the runs that ended less
than D ago (7d, 12h) whatever their number; with both, a run goes only when
both let it go. Only completed runs go, unless --status names others: failed,
interrupted, budget_exceeded (runs that flow retry or flow resume can still go
on with). A live run, or one that waits on a human, never goes. --dry-run says
what would go and removes nothing.

Each removed run leaves its line in .agents/history.jsonl (written when the run
ended, or now if it has none), so that flow runs --all still lists it. A
deleted branch is reported with its commit: git branch NAME COMMIT brings it
back until git collects its garbage. A run whose worktree holds changes that
are not committed is left, and said so. A workflow's defaults.retention applies
the same policy when one of its runs ends (docs/operating-runs.md, "Retention: removing finished runs").

prune --worktrees removes the git worktrees of a run (of every run of the
repository when RUN_ID is left out) that its end did not remove: those kept by
keep: always or on_failure, those of a run that was stopped or failed, and any
worktree under .agents/worktrees/ whose run has no record. The branch of an
item or step whose work was merged goes with its worktree; a run's own branch
(flow/<run>/_run) and branches holding work that was not merged are kept. Runs
whose runner is alive are left alone.`,
		Example: "  flow prune --keep 20 --dry-run\n  flow prune --older-than 30d --status completed,failed\n  flow prune --worktrees\n  flow prune --worktrees 20250115-143000-f8c1a4",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			policy := f.Changed("keep") || f.Changed("older-than") || f.Changed("status") || f.Changed("workflow") || dryRun
			if worktrees {
				if policy {
					return ops.Usage("--worktrees removes only worktrees; prune runs without it\ntry: flow prune --keep 20")
				}
				return a.pruneWorktrees(cmd, repo, argOr(args), asJSON)
			}
			if len(args) > 0 {
				return ops.Usage("flow prune takes no RUN_ID (a policy chooses the runs); only --worktrees does\ntry: flow prune --worktrees %s", args[0])
			}
			req := ops.PruneRequest{Repo: repo, Workflow: workflow, DryRun: dryRun}
			if !f.Changed("keep") && !f.Changed("older-than") {
				return ops.Usage("flow prune needs --keep N, --older-than D or both (which runs stay), or --worktrees\ntry: flow prune --keep 20 --dry-run")
			}
			if f.Changed("keep") {
				if keep < 0 {
					return ops.Usage("--keep %d: want 0 or more runs", keep)
				}
				req.Keep = keep
			}
			if f.Changed("older-than") {
				d, err := config.ParseDuration(olderThan)
				if err != nil || d <= 0 {
					return ops.Usage("--older-than %q: want a positive duration such as 30d or 12h", olderThan)
				}
				req.OlderThan = d
			}
			st, err := retention.ParseStatuses(statuses)
			if err != nil {
				return err
			}
			req.Statuses = st
			res, err := a.svc.Prune(cmd.Context(), req)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(res)
			}
			return printPruned(a.stdio.Out, res)
		},
	}
	cmd.Flags().IntVar(&keep, "keep", 0, "keep the N newest runs of each workflow (0: none for being new)")
	cmd.Flags().StringVar(&olderThan, "older-than", "", "keep the runs that ended less than this long ago (e.g. 30d, 12h)")
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "statuses of the runs that may go: completed (the default), failed, interrupted, budget_exceeded")
	cmd.Flags().StringVar(&workflow, "workflow", "", "prune only the runs of this workflow (its name)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would go, and remove nothing")
	cmd.Flags().BoolVar(&worktrees, "worktrees", false, "remove only the git worktrees runs left")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was pruned as JSON")
	cmd.Flags().StringVar(&repo, "repo", "", "repository "+repoDefault)
	return cmd
}

// printPruned prints what a prune removed (or would remove): a table
// of the runs, then their worktrees and branches, the runs left and
// the warnings.
func printPruned(out io.Writer, res retention.Result) error {
	w := bufio.NewWriter(out)
	verb, wt, br := "removed", "removed worktree", "deleted branch"
	if res.DryRun {
		verb, wt, br = "would remove", "would remove worktree", "would delete branch"
	}
	runs := "runs"
	if len(res.Pruned) == 1 {
		runs = "run"
	}
	switch {
	case len(res.Pruned) == 0:
		fmt.Fprintf(w, "no runs to prune (%d kept)\n", res.Kept)
	default:
		fmt.Fprintf(w, "%s %d %s (%d kept)", verb, len(res.Pruned), runs, res.Kept)
		if res.DryRun {
			fmt.Fprint(w, "; --dry-run: nothing was removed")
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATUS\tENDED\tWHY")
		for _, p := range res.Pruned {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.RunID, p.Workflow, p.Status, p.EndedAt, p.Why)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, p := range res.Pruned {
		for _, path := range p.Worktrees {
			fmt.Fprintf(w, "%s: %s %s\n", p.RunID, wt, path)
		}
		for _, b := range p.Branches {
			fmt.Fprintf(w, "%s: %s %s (was %s)\n", p.RunID, br, b.Name, b.Commit)
		}
	}
	for _, l := range res.Left {
		fmt.Fprintf(w, "left %s: %s\n", l.RunID, l.Reason)
	}
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	return w.Flush()
}

// pruneWorktrees is flow prune --worktrees.
func (a *app) pruneWorktrees(cmd *cobra.Command, repo, runID string, asJSON bool) error {
	p, err := a.svc.PruneWorktrees(cmd.Context(), repo, runID)
	if err != nil {
		return err
	}
	if asJSON {
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdio.Out, "%s\n", b)
		return nil
	}
	for _, r := range p.Removed {
		fmt.Fprintf(a.stdio.Out, "removed %s\n", r)
	}
	for _, b := range p.Branches {
		fmt.Fprintf(a.stdio.Out, "deleted branch %s (merged)\n", b)
	}
	for _, s := range p.Skipped {
		fmt.Fprintf(a.stdio.Out, "left %s\n", s)
	}
	if len(p.Removed) == 0 && len(p.Skipped) == 0 {
		fmt.Fprintln(a.stdio.Out, "no worktrees to prune")
	}
	return nil
}
