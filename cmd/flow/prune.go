package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/runner/core"
)

// pruneCmd is flow prune: it removes what runs left behind; for now,
// their git worktrees.
func (a *app) pruneCmd() *cobra.Command {
	var repo string
	var worktrees, asJSON bool
	cmd := &cobra.Command{
		Use:   "prune --worktrees [RUN_ID]",
		Short: "Remove the git worktrees runs left behind",
		Long: `prune --worktrees removes the git worktrees of a run (of every run of the repository
when RUN_ID is left out) that its end did not remove: those kept by keep: always or
on_failure, those of a run that was stopped or failed, and any worktree under
.agents/worktrees/ whose run has no record. The branch of an item or step whose work
was merged goes with its worktree; a run's own branch (flow/<run>/_run) and branches
holding work that was not merged are kept. Runs whose runner is alive are left alone.`,
		Example: "  flow prune --worktrees\n  flow prune --worktrees 20250115-143000-f8c1a4",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !worktrees {
				return core.Usage("prune needs --worktrees (what it prunes)\ntry: flow prune --worktrees")
			}
			p, err := a.svc.PruneWorktrees(cmd.Context(), repo, argOr(args))
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
		},
	}
	cmd.Flags().BoolVar(&worktrees, "worktrees", false, "remove the git worktrees runs left")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was pruned as JSON")
	cmd.Flags().StringVar(&repo, "repo", "", "repository (default: the current directory)")
	return cmd
}
