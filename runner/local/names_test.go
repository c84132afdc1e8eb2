package local

import (
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// TestInstanceNames: the driver maps a step instance's key to its files
// (loop.item.step) and puts the instance in the expression environment
// under its key.
func TestInstanceNames(t *testing.T) {
	n := record.LayoutOf("/r/.agents/runs/x", "x")
	for got, want := range map[string]string{
		n.Log(keytest.K("stories[s1].code"), 2, 1):      "/r/.agents/runs/x/logs/stories.s1.code.2.1.log",
		n.Report(keytest.K("stories[s1].code")):         "/r/.agents/runs/x/reports/x__stories.s1.code.json",
		n.ManualInput(keytest.K("stories[s1].approve")): "/r/.agents/runs/x/manual_inputs/x__stories.s1.approve.json",
		n.Prompt(keytest.K("stories[s1].code"), 0, 1):   "/r/.agents/runs/x/prompts/stories.s1.code.0.1.md",
		n.Log(keytest.K("plain"), 0, 1):                 "/r/.agents/runs/x/logs/plain.0.1.log",
		n.Report(keytest.K("plain")):                    "/r/.agents/runs/x/reports/x__plain.json",
	} {
		if got != want {
			t.Errorf("%s; want %s", got, want)
		}
	}
	st := &core.State{RunID: "x", Steps: map[core.StepKey]*core.StepState{
		keytest.K("stories[s1].code"): {Status: core.Completed, Metrics: map[string]string{"lines": "12"}},
	}, StepOrder: keytest.Keys("stories[s1].code")}
	fsys := afero.NewMemMapFs()
	x := &run{r: &Runner{FS: fsys, Clock: clock.Real()}, rec: fsys, st: st, outputs: map[core.StepKey]string{}, reports: map[core.StepKey]map[string]any{}}
	env := x.env(nil)
	// An instance is steps.<body step> inside its item, and an entry of
	// steps.<loop>.items after the loop; never a key of steps.
	if _, ok := env.Steps[keytest.K("stories[s1].code").String()]; ok {
		t.Errorf("the environment's steps hold an instance key: %+v", env.Steps)
	}
}

// TestCleanupSessionNames: the workflow's cleanup session and a step
// named cleanup never share a file.
func TestCleanupSessionNames(t *testing.T) {
	n := record.LayoutOf("/r", "x")
	pairs := [][2]string{
		{n.CleanupLog(1), n.Log(keytest.K("cleanup"), 0, 1)},
		{n.Report(keytest.K(record.CleanupSession)), n.Report(keytest.K("cleanup"))},
		{n.Prompt(keytest.K(record.CleanupSession), 0, 1), n.Prompt(keytest.K("cleanup"), 0, 1)},
	}
	for _, p := range pairs {
		if p[0] == p[1] {
			t.Errorf("the cleanup session and the step cleanup share %s", p[0])
		}
	}
}

func TestShellArg(t *testing.T) {
	for in, want := range map[string]string{
		"review":                "review",
		"stories[login].review": "'stories[login].review'",
		"a b":                   "'a b'",
		"it's":                  `'it'\''s'`,
		"":                      "''",
	} {
		if got := core.ShellArg(in); got != want {
			t.Errorf("ShellArg(%q) = %s, want %s", in, got, want)
		}
	}
}
