package record

import (
	"strings"
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
)

// TestSummaryNotes: run-summary.md explains each step's status in a
// note; a loop's says how far its items got, then why it failed.
func TestSummaryNotes(t *testing.T) {
	zero, two := 0, 2
	reason, target, manual := "1 of 3 items failed: b", keytest.K("fix"), "/r/manual_inputs/r__ok.json"
	st := &core.State{RunID: "r", StepOrder: keytest.Keys("items", "done", "pending_loop", "fix_it", "ok", "check"), Steps: map[core.StepKey]*core.StepState{
		keytest.K("items"): {
			Status: core.Failed, LastError: &reason, LoopIndex: &two, Items: []core.Item{
				{Key: "a", Status: core.Completed}, {Key: "b", Status: core.Failed}, {Key: "c", Status: core.Running}}, RemovedItems: []string{"d"},
		},
		keytest.K("done"):         {Status: core.Completed, LoopIndex: &zero, Items: []core.Item{{Key: "a", Status: core.Completed}}},
		keytest.K("pending_loop"): {Status: core.Pending},
		keytest.K("fix_it"):       {Status: core.Pending, WaitingFor: &target},
		keytest.K("ok"):           {Status: core.WaitingOnHuman, ManualInputPath: &manual},
		keytest.K("check"):        {Status: core.Pending, WaitingGates: []string{"window"}},
	}}
	got := Summary(st)
	for _, want := range []string{
		"| items | FAILED | 0 | 0 | 2/3 items, 1 failed, 1 running, 1 removed: 1 of 3 items failed: b |",
		"| done | COMPLETED | 0 | 0 | 1/1 items |",
		"| pending_loop | PENDING | 0 | 0 |  |",
		"| fix_it | PENDING | 0 | 0 | waiting for fix |",
		"| ok | WAITING_ON_HUMAN | 0 | 0 | waiting on a human: /r/manual_inputs/r__ok.json |",
		"| check | PENDING | 0 | 0 | waiting for gates to open: window |",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

// TestMarkdownCell: a cell escapes |, makes line ends spaces and is cut
// after 200 bytes at a character's start.
func TestMarkdownCell(t *testing.T) {
	for in, want := range map[string]string{
		"a|b":                          `a\|b`,
		"one\r\ntwo\nthree\rfour":      "one two three four",
		strings.Repeat("x", 200):       strings.Repeat("x", 200),
		strings.Repeat("x", 199) + "é": strings.Repeat("x", 199) + "…",
		strings.Repeat("é", 150):       strings.Repeat("é", 100) + "…",
	} {
		if got := MarkdownCell(in); got != want {
			t.Errorf("MarkdownCell(%.20q…) = %.30q…, want %.30q…", in, got, want)
		}
	}
	// run-summary.md makes a cell a step with every snapshot: a plain
	// cell allocates nothing.
	for _, in := range []string{"", "exit status 1", strings.Repeat("x", 200)} {
		if n := testing.AllocsPerRun(100, func() { MarkdownCell(in) }); n != 0 {
			t.Errorf("MarkdownCell(%.20q) allocates %.0f times", in, n)
		}
	}
}
