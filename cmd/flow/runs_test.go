package main

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
)

// TestPrintRuns: the table of runs is aligned as text/tabwriter aligns
// it, whether it aligns the rows itself or through tabwriter.
func TestPrintRuns(t *testing.T) {
	run := func(id, wf, status string) ops.RunSummary {
		return ops.RunSummary{RunID: id, Workflow: wf, Status: status, CreatedAt: "2026-01-02T03:04:05.000000Z", UpdatedAt: "2026-01-02T03:05:05.000000Z"}
	}
	long := run("20260102-030405-abcdef", "a-much-longer-workflow", "budget_exceeded")
	pruned := run("r2", "wf", "completed")
	pruned.Pruned = true
	costly := run("r3", "wf", "failed")
	costly.Usage = &core.AgentUsage{CostUSD: 1.5}
	cases := []struct {
		name string
		runs []ops.RunSummary
	}{
		{"one run", []ops.RunSummary{run("r1", "wf", "completed")}},
		{"widths from every row", []ops.RunSummary{run("r1", "wf", "completed"), long, pruned}},
		{"non-ASCII names", []ops.RunSummary{run("r1", "flöw-ünïcode", "completed"), run("r2", "wf", "running")}},
		{"a cost column", []ops.RunSummary{run("r1", "wf", "completed"), costly}},
		{"an empty workflow name", []ops.RunSummary{run("r1", "", "completed"), run("r2", "", "completed")}},
		{"an unreadable run", []ops.RunSummary{run("r1", "wf", "completed"), {RunID: "bad", Error: "no events.jsonl"}, costly}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got strings.Builder
			w := bufio.NewWriter(&got)
			if err := printRuns(w, c.runs); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			// What flow runs printed through tabwriter alone.
			var want strings.Builder
			tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
			rows := runRows(c.runs)
			for _, row := range rows {
				fmt.Fprintln(tw, strings.Join(row, "\t"))
			}
			if err := tw.Flush(); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("table:\n%s\nwant:\n%s", got.String(), want.String())
			}
			if strings.Count(got.String(), "\n") != len(c.runs)+1 {
				t.Errorf("%d lines for %d runs:\n%s", strings.Count(got.String(), "\n"), len(c.runs), got.String())
			}
		})
	}
}
