package core_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
)

// mergePlan is loopPlan whose items have worktrees, merged with mode,
// looping back to implement on a conflict when loopBack is set.
func mergePlan(t *testing.T, parallel int, mode string, loopBack bool) *core.Plan {
	t.Helper()
	fe := &core.PlanLoop{Body: []string{"implement", "review"}, MaxParallel: parallel, MaxItems: 5, Merge: mode}
	if loopBack {
		fe.MergeLoopBack, fe.MergeMaxIterations = "implement", 3
	}
	steps := []core.PlanStep{
		{ID: "breakdown", Kind: core.KindCommand, MaxAttempts: 1, MaxIterations: 4},
		{ID: "stories", Kind: core.KindLoop, Needs: []string{"breakdown"}, MaxAttempts: 1, MaxIterations: 4, ForEach: fe},
		{ID: "implement", Kind: core.KindCommand, Loop: "stories", MaxAttempts: 1, MaxIterations: 4},
		{ID: "review", Kind: core.KindCommand, Needs: []string{"implement"}, Loop: "stories", MaxAttempts: 1, MaxIterations: 3},
		{ID: "integrate", Kind: core.KindCommand, Needs: []string{"stories"}, MaxAttempts: 1, MaxIterations: 4},
	}
	plan, err := core.NewPlan(steps, 1)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// merges returns the MergeItem effects of the last decision.
func (h *coreHarness) merges() []core.MergeItem {
	var out []core.MergeItem
	for _, e := range h.effects {
		if m, ok := e.(core.MergeItem); ok {
			out = append(out, m)
		}
	}
	return out
}

func mergeKeys(ms []core.MergeItem) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Key)
	}
	return out
}

// body completes an item's two instances.
func (h *coreHarness) body(key string) {
	h.t.Helper()
	h.ok(inst("stories", key, "implement"))
	h.ok(inst("stories", key, "review"))
}

func (h *coreHarness) merged(m core.MergeItem) []core.Effect {
	return h.decide(core.MergeResult{Loop: m.Loop, Index: m.Index, Key: m.Key, Status: core.MergeMerged, Commit: "c-" + m.Key, Into: "flow/r1/_run", MergedAs: "m-" + m.Key})
}

// TestMergeInItemOrder: three parallel items whose bodies finish in
// the order c, a, b are merged a, b, c, one at a time; the loop
// completes once the last is merged.
func TestMergeInItemOrder(t *testing.T) {
	h := newPlanHarness(t, mergePlan(t, 3, core.MergeAuto, false))
	h.ok("breakdown")
	h.items("stories", "a", "b", "c")
	h.body("c")
	if ms := h.merges(); len(ms) != 0 {
		t.Fatalf("c merged before a and b: %v", ms)
	}
	if got := h.itemStatuses("stories"); got != "a=RUNNING b=RUNNING c=RUNNING" {
		t.Fatalf("items: %s", got)
	}
	h.body("a")
	if got := mergeKeys(h.merges()); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("merges after a: %v", got)
	}
	first := h.merges()[0]
	h.body("b")
	if ms := h.merges(); len(ms) != 0 {
		t.Fatalf("b merged while a's merge is in flight: %v", ms)
	}
	h.merged(first)
	if got := mergeKeys(h.merges()); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("merges after a's: %v", got)
	}
	if got := h.itemStatuses("stories"); got != "a=COMPLETED b=RUNNING c=RUNNING" {
		t.Fatalf("items: %s", got)
	}
	h.merged(h.merges()[0])
	if got := mergeKeys(h.merges()); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("merges after b's: %v", got)
	}
	h.merged(h.merges()[0])
	if ls := h.st.Steps[core.Key("stories")]; ls.Status != core.Completed {
		t.Fatalf("loop %s", ls.Status)
	}
	if got := h.started(); !slices.Equal(got, []string{"integrate"}) {
		t.Fatalf("after the loop: %v", got)
	}
	if ws := h.st.Workspaces["stories.b"]; ws == nil || ws.Merge != core.MergeMerged || ws.Commit != "c-b" || ws.MergedAs != "m-b" || ws.Into != "flow/r1/_run" {
		t.Fatalf("workspace of b: %+v", ws)
	}
	h.replayed()
}

// TestMergeConflictLoopsBack: a conflicting item goes back to its
// implement with the conflict as feedback; its next merge resolves;
// the items after it wait for it.
func TestMergeConflictLoopsBack(t *testing.T) {
	h := newPlanHarness(t, mergePlan(t, 2, core.MergeAuto, true))
	h.ok("breakdown")
	h.items("stories", "a", "b")
	h.body("a")
	a := h.merges()[0]
	h.body("b")
	if a.Resolving || !a.LoopBack {
		t.Fatalf("first merge of a: %+v", a)
	}
	h.decide(core.MergeResult{Loop: "stories", Index: 0, Key: "a", Status: core.MergeConflict, Commit: "c-a1", Files: []string{"f.go"}, Output: "<<<<<<< flow/r1/_run\nx\n=======\ny\n>>>>>>> flow/r1/stories.a"})
	h.expect(inst("stories", "a", "implement"), core.Running, 1, 1)
	h.expect(inst("stories", "a", "review"), core.Pending, 1, 0)
	fb := h.st.Steps[keytest.K(inst("stories", "a", "implement"))].Feedback
	if fb == nil || fb.Step != "stories[a]" || fb.Reason != "merge conflict in f.go" || !strings.Contains(fb.Output, "<<<<<<<") {
		t.Fatalf("feedback %+v", fb)
	}
	if ms := h.merges(); len(ms) != 0 {
		t.Fatalf("b merged before a: %v", ms)
	}
	h.body("a")
	again := h.merges()
	if len(again) != 1 || again[0].Key != "a" || !again[0].Resolving {
		t.Fatalf("second merge of a: %+v", again)
	}
	h.merged(again[0])
	if got := mergeKeys(h.merges()); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("after a: %v", got)
	}
	h.merged(h.merges()[0])
	if ws := h.st.Workspaces["stories.a"]; ws.Conflicts != 1 || ws.Merge != core.MergeMerged {
		t.Fatalf("workspace of a: %+v", ws)
	}
	if ls := h.st.Steps[core.Key("stories")]; ls.Status != core.Completed {
		t.Fatalf("loop %s", ls.Status)
	}
	h.replayed()
}

// TestMergeConflictFails: without merge.loop_back_to a conflict fails
// the item, and the loop (exit 1); with its loop-backs spent, exit 5.
func TestMergeConflictFails(t *testing.T) {
	for name, tc := range map[string]struct {
		loopBack  bool
		conflicts int
		code      int
		reason    string
	}{
		"no loop-back": {false, 1, 1, "merge: merge conflict in f.go"},
		"spent":        {true, 3, 5, "merge: max iterations reached (3): merge conflict in f.go"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newPlanHarness(t, mergePlan(t, 1, core.MergeAuto, tc.loopBack))
			h.ok("breakdown")
			h.items("stories", "a")
			for n := 0; n < tc.conflicts; n++ {
				h.body("a")
				m := h.merges()
				if len(m) != 1 || m[0].LoopBack != (n < tc.conflicts-1) {
					t.Fatalf("merge %d: %+v", n, m)
				}
				h.decide(core.MergeResult{Loop: "stories", Index: 0, Key: "a", Status: core.MergeConflict, Files: []string{"f.go"}, Output: "hunks"})
			}
			if it := h.st.Steps[core.Key("stories")].Items[0]; it.Status != core.Failed || it.Error != tc.reason {
				t.Fatalf("item a: %+v", it)
			}
			if f := h.finish(); f == nil || f.ExitCode != tc.code {
				t.Fatalf("finish %+v", f)
			}
			h.replayed()
		})
	}
}

// TestMergeWaits: a checkout that refuses the merge holds the item
// (waiting_for: merge) and idles the run; MergeRetry tries again, a
// refusal for the same reason records nothing new, and a retry that
// merges goes on.
func TestMergeWaits(t *testing.T) {
	h := newPlanHarness(t, mergePlan(t, 1, core.MergeAuto, false))
	h.ok("breakdown")
	h.items("stories", "a")
	h.body("a")
	m := h.merges()[0]
	h.decide(core.MergeResult{Loop: "stories", Index: 0, Key: "a", Status: core.MergeWaiting, Reason: "local changes to f.go would be overwritten"})
	ws := h.st.Workspaces["stories.a"]
	if ws == nil || ws.WaitingFor != "merge" || ws.Reason != "local changes to f.go would be overwritten" {
		t.Fatalf("workspace %+v", ws)
	}
	var idle *core.Idle
	for _, e := range h.effects {
		if i, ok := e.(core.Idle); ok {
			idle = &i
		}
	}
	if idle == nil || !slices.Equal(idle.Merges, []string{"stories.a"}) {
		t.Fatalf("effects %#v", h.effects)
	}
	n := len(h.events)
	h.decide(core.MergeRetry{})
	if got := mergeKeys(h.merges()); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("retry: %v", got)
	}
	h.decide(core.MergeResult{Loop: "stories", Index: 0, Key: "a", Status: core.MergeWaiting, Reason: "local changes to f.go would be overwritten"})
	if len(h.events) != n {
		t.Fatalf("a refusal for the same reason recorded %v", eventTypes(h.events[n:]))
	}
	h.decide(core.MergeRetry{})
	h.merged(m)
	if ws := h.st.Workspaces["stories.a"]; ws.WaitingFor != "" || ws.Merge != core.MergeMerged {
		t.Fatalf("workspace %+v", ws)
	}
	if got := h.started(); !slices.Equal(got, []string{"integrate"}) {
		t.Fatalf("after the loop: %v", got)
	}
	h.replayed()
}

// TestMergeAdmitsWhileMerging: an item whose body completed and whose
// merge waits for its turn holds no slot of max_parallel; an item
// after a failed one still merges.
func TestMergeAdmitsWhileMerging(t *testing.T) {
	h := newPlanHarness(t, mergePlan(t, 1, core.MergeAuto, false))
	h.ok("breakdown")
	h.items("stories", "a", "b")
	h.body("a")
	if got := h.itemStatuses("stories"); got != "a=RUNNING b=RUNNING" {
		t.Fatalf("items %s", got)
	}
	h.decide(core.MergeResult{Loop: "stories", Index: 0, Key: "a", Status: core.MergeConflict, Files: []string{"f.go"}})
	h.body("b")
	if got := mergeKeys(h.merges()); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("merges after a failed: %v", got)
	}
	h.merged(h.merges()[0])
	if got := h.itemStatuses("stories"); got != "a=FAILED b=COMPLETED" {
		t.Fatalf("items %s", got)
	}
	if f := h.finish(); f == nil || f.ExitCode != 1 {
		t.Fatalf("finish %+v", f)
	}
	h.replayed()
}

// TestMergeNone: with merge none each item is committed as it ends,
// in any order, and not merged.
func TestMergeNone(t *testing.T) {
	h := newPlanHarness(t, mergePlan(t, 2, core.MergeNone, false))
	h.ok("breakdown")
	h.items("stories", "a", "b")
	h.body("b")
	m := h.merges()
	if len(m) != 1 || m[0].Key != "b" || m[0].Mode != core.MergeNone {
		t.Fatalf("merges %+v", m)
	}
	h.decide(core.MergeResult{Loop: "stories", Index: 1, Key: "b", Status: core.MergeCommitted, Commit: "c-b"})
	if got := h.itemStatuses("stories"); got != "a=RUNNING b=COMPLETED" {
		t.Fatalf("items %s", got)
	}
	h.replayed()
}

// TestMergeResumes: a merge in flight when the runner stops is asked
// for again by the next runner.
func TestMergeResumes(t *testing.T) {
	plan := mergePlan(t, 1, core.MergeAuto, false)
	h := newPlanHarness(t, plan)
	h.ok("breakdown")
	h.items("stories", "a")
	h.body("a")
	if len(h.merges()) != 1 {
		t.Fatal("no merge")
	}
	h.core = core.NewCore(plan)
	h.decide(core.Begin{})
	if got := mergeKeys(h.merges()); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after a new runner began: %v", got)
	}
}

// stepMerges returns the MergeStep effects of the last decision.
func (h *coreHarness) stepMerges() []core.MergeStep {
	var out []core.MergeStep
	for _, e := range h.effects {
		if m, ok := e.(core.MergeStep); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestMergeStep: a step with a worktree of its own completes once its
// work is merged; a conflict fails its gate and loops back to it with
// the conflict as feedback; a checkout that refuses keeps it running
// until a retry merges.
func TestMergeStep(t *testing.T) {
	plan, err := core.NewPlan([]core.PlanStep{
		{ID: "code", Kind: core.KindCommand, MaxAttempts: 1, MaxIterations: 3, LoopTarget: "code", HasGate: true, Extra: &core.PlanExtra{Worktree: true}},
		{ID: "ship", Kind: core.KindCommand, Needs: []string{"code"}, MaxAttempts: 1, MaxIterations: 3},
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	h := newPlanHarness(t, plan)
	h.ok("code")
	m := h.stepMerges()
	if len(m) != 1 || m[0].Step != core.Key("code") || m[0].Resolving || !m[0].LoopBack {
		t.Fatalf("merges %+v", m)
	}
	h.expect("code", core.Running, 0, 1)
	h.decide(core.MergeResult{Step: core.Key("code"), Status: core.MergeConflict, Files: []string{"f.go"}, Output: "<<<<<<< hunks"})
	h.expect("code", core.Running, 1, 1)
	if fb := h.st.Steps[core.Key("code")].Feedback; fb == nil || fb.Reason != "merge conflict in f.go" || fb.Output != "<<<<<<< hunks" {
		t.Fatalf("feedback %+v", fb)
	}
	h.ok("code")
	if m := h.stepMerges(); len(m) != 1 || !m[0].Resolving {
		t.Fatalf("second merge %+v", m)
	}
	h.decide(core.MergeResult{Step: core.Key("code"), Status: core.MergeWaiting, Reason: "local changes"})
	h.expect("code", core.Running, 1, 1)
	h.decide(core.MergeRetry{})
	if m := h.stepMerges(); len(m) != 1 {
		t.Fatalf("retry %+v", h.effects)
	}
	h.decide(core.MergeResult{Step: core.Key("code"), Status: core.MergeMerged, Commit: "c1", Into: "main", MergedAs: "m1"})
	h.expect("code", core.Completed, 1, 1)
	if got := h.started(); !slices.Equal(got, []string{"ship"}) {
		t.Fatalf("after the merge: %v", got)
	}
	if ws := h.st.Workspaces["code"]; ws == nil || ws.Merge != core.MergeMerged || ws.Conflicts != 1 || ws.MergedAs != "m1" {
		t.Fatalf("workspace %+v", ws)
	}
	h.replayed()
}
