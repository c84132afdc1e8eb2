package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/flow-run/flow/runner/core"
)

// printWorkspaces prints, under a run's steps, the worktrees of its
// scopes: each one's branch, last commit and merge, the run's first and
// then the items' and steps' in order.
func printWorkspaces(w io.Writer, st *core.State) {
	if len(st.Workspaces) == 0 {
		return
	}
	names := make([]string, 0, len(st.Workspaces))
	for n := range st.Workspaces {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case a == core.RunScope:
			return -1
		case b == core.RunScope:
			return 1
		}
		return strings.Compare(a, b)
	})
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tBRANCH\tCOMMIT\tMERGE\tPATH")
	for _, n := range names {
		ws := st.Workspaces[n]
		commit := ws.Commit
		if commit == "" {
			commit = ws.Base
		}
		path := ws.Path
		switch {
		case ws.Shared:
			path += " (the repository's checkout)"
		case ws.Removed && ws.BranchDeleted:
			path = "removed, with its branch"
		case ws.Removed:
			path = "removed"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n, ws.Branch, short(commit), mergeText(ws), path)
	}
	tw.Flush()
}

// mergeText says where a workspace's merge stands.
func mergeText(ws *core.Workspace) string {
	var s string
	switch ws.Merge {
	case "":
		s = "-"
	case core.MergeMerged:
		s = "merged into " + ws.Into
		if ws.MergedAs != "" {
			s += " (" + short(ws.MergedAs) + ")"
		}
	case core.MergeWaiting:
		s = "waiting for the checkout: " + firstLine(ws.Reason)
	case core.MergeConflict:
		s = "conflict, sent back to resolve it"
	case core.MergeFailed:
		s = "FAILED: " + firstLine(ws.Reason)
	default:
		s = ws.Merge
	}
	if ws.Conflicts > 0 && ws.Merge != core.MergeConflict {
		s += fmt.Sprintf("; %d %s", ws.Conflicts, plural(ws.Conflicts, "conflict", "conflicts"))
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

// short is a commit's first twelve digits.
func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
