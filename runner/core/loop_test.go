package core_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
)

// loopPlan is the shape of docs/loops.md's example: breakdown, a loop of
// stories running implement then review (whose gate loops back to
// implement), then integrate, whose gate may loop back to the loop.
func loopPlan(t *testing.T, parallel int, continueOnError bool) *core.Plan {
	t.Helper()
	steps := []core.PlanStep{
		{ID: "breakdown", Kind: core.KindCommand, MaxAttempts: 1, MaxIterations: 4},
		{
			ID: "stories", Kind: core.KindLoop, Needs: []string{"breakdown"}, MaxAttempts: 1, MaxIterations: 4, ForEach: &core.PlanLoop{Body: []string{"implement", "review"}, MaxParallel: parallel, ContinueOnError: continueOnError, MaxItems: 5},
		},
		{ID: "implement", Kind: core.KindCommand, Loop: "stories", MaxAttempts: 2, MaxIterations: 4},
		{ID: "review", Kind: core.KindCommand, Needs: []string{"implement"}, Loop: "stories", LoopTarget: "implement", HasGate: true, MaxAttempts: 1, MaxIterations: 3},
		{ID: "integrate", Kind: core.KindCommand, Needs: []string{"stories"}, LoopTarget: "stories", HasGate: true, MaxAttempts: 1, MaxIterations: 4},
	}
	plan, err := core.NewPlan(steps, 1)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// newPlanHarness drives a core over a hand-made plan.
func newPlanHarness(t *testing.T, plan *core.Plan) *coreHarness {
	t.Helper()
	h := &coreHarness{t: t, plan: plan, core: core.NewCore(plan), st: &core.State{}, now: time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)}
	e := core.NewEvent(h.now, core.EvRunCreated, core.StepKey{}, core.RunCreated{RunID: "r1", WorkflowName: "stories", Steps: keytest.Keys(plan.IDs()...)})
	if err := core.Apply(h.st, e); err != nil {
		t.Fatal(err)
	}
	h.events = append(h.events, e)
	h.decide(core.Begin{})
	return h
}

// items answers the loop's ExpandItems with items keyed by the given
// keys, each item a JSON object {"id": key}.
func (h *coreHarness) items(loop string, keys ...string) []core.Effect {
	h.t.Helper()
	if !h.expanding(loop) {
		h.t.Fatalf("no ExpandItems for %s in %#v", loop, h.effects)
	}
	in := core.ItemsResult{Step: keytest.K(loop), Items: []core.LoopItem{}}
	for _, k := range keys {
		in.Items = append(in.Items, core.LoopItem{Key: k, Value: json.RawMessage(fmt.Sprintf(`{"id":%q}`, k))})
	}
	return h.decide(in)
}

func (h *coreHarness) expanding(loop string) bool {
	for _, e := range h.effects {
		if x, ok := e.(core.ExpandItems); ok && x.Step == keytest.K(loop) {
			return true
		}
	}
	return false
}

func inst(loop, item, step string) string { return core.Instance(loop, item, step).String() }

func (h *coreHarness) itemStatuses(loop string) string {
	var out []string
	for _, it := range h.st.Steps[keytest.K(loop)].Items {
		out = append(out, it.Key+"="+string(it.Status))
	}
	return strings.Join(out, " ")
}

// TestLoopSequential: the items run one after another, each through its
// body; the loop then completes with loop_index and loop_completed set,
// and the step after it starts.
func TestLoopSequential(t *testing.T) {
	h := newPlanHarness(t, loopPlan(t, 1, false))
	h.ok("breakdown")
	h.items("stories", "a", "b", "c")
	if got := h.started(); !slices.Equal(got, []string{inst("stories", "a", "implement")}) {
		t.Fatalf("first item's first step: %v", got)
	}
	for _, k := range []string{"a", "b", "c"} {
		h.ok(inst("stories", k, "implement"))
		if got := h.started(); !slices.Equal(got, []string{inst("stories", k, "review")}) {
			t.Fatalf("item %s: started %v after implement", k, got)
		}
		h.ok(inst("stories", k, "review"))
	}
	ls := h.st.Steps[core.Key("stories")]
	if ls.Status != core.Completed || *ls.LoopIndex != 3 || !*ls.LoopCompleted {
		t.Fatalf("loop: %s index %d completed %v", ls.Status, *ls.LoopIndex, *ls.LoopCompleted)
	}
	if got := h.started(); !slices.Equal(got, []string{"integrate"}) {
		t.Fatalf("after the loop: %v", got)
	}
	if string(ls.LoopItems[1]) != `{"id":"b"}` {
		t.Errorf("loop_items[1] = %s", ls.LoopItems[1])
	}
	// Instances sit in the record's order right after their loop.
	want := []string{"breakdown", "stories", inst("stories", "a", "implement"), inst("stories", "a", "review"),
		inst("stories", "b", "implement"), inst("stories", "b", "review"), inst("stories", "c", "implement"), inst("stories", "c", "review"), "integrate"}
	if !slices.Equal(core.KeyStrings(h.st.StepOrder), want) {
		t.Errorf("step order %v", h.st.StepOrder)
	}
	h.ok("integrate")
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish %+v", f)
	}
	h.replayed()
}

// TestLoopParallel: the loop's max_parallel runs that many items at
// once, although the workflow's max_parallel is 1; a third item waits
// for a slot.
func TestLoopParallel(t *testing.T) {
	h := newPlanHarness(t, loopPlan(t, 2, false))
	h.ok("breakdown")
	h.items("stories", "a", "b", "c")
	if got := h.started(); !slices.Equal(got, []string{inst("stories", "a", "implement"), inst("stories", "b", "implement")}) {
		t.Fatalf("two items at once: %v", got)
	}
	h.ok(inst("stories", "b", "implement"))
	h.ok(inst("stories", "b", "review"))
	if got := h.started(); !slices.Equal(got, []string{inst("stories", "c", "implement")}) {
		t.Fatalf("the third item takes b's slot: %v", got)
	}
	if got := h.itemStatuses("stories"); got != "a=RUNNING b=COMPLETED c=RUNNING" {
		t.Errorf("items: %s", got)
	}
	h.replayed()
}

// TestLoopBackInsideItem: a review failing its gate loops back to its
// own item's implement, leaving the other item alone; the iteration
// budget is the item's own, and spending it fails the item and then
// the loop (exit 5) once the other item finished.
func TestLoopBackInsideItem(t *testing.T) {
	h := newPlanHarness(t, loopPlan(t, 2, false))
	h.ok("breakdown")
	h.items("stories", "a", "b")
	a, b := func(s string) string { return inst("stories", "a", s) }, func(s string) string { return inst("stories", "b", s) }
	h.ok(a("implement"))
	h.ok(b("implement"))
	h.gateFail(a("review"), "missing tests")
	h.expect(a("implement"), core.Running, 1, 1)
	h.expect(a("review"), core.Pending, 1, 0)
	h.expect(b("implement"), core.Completed, 0, 1)
	if fb := h.st.Steps[keytest.K(a("implement"))].Feedback; fb == nil || fb.Step != a("review") {
		t.Errorf("feedback %+v", fb)
	}
	h.ok(a("implement"))
	h.gateFail(a("review"), "still missing")
	h.ok(a("implement"))
	h.gateFail(a("review"), "still missing") // third failure: max_iterations 3 spent
	if s := h.st.Steps[keytest.K(a("review"))]; s.Status != core.Failed || !strings.Contains(deref(s.LastError), "max iterations reached") {
		t.Fatalf("a.review: %s %s", s.Status, deref(s.LastError))
	}
	if h.finish() != nil {
		t.Fatal("the run ended while item b still runs")
	}
	h.ok(b("review"))
	if got := h.itemStatuses("stories"); got != "a=FAILED b=COMPLETED" {
		t.Errorf("items: %s", got)
	}
	f := h.finish()
	if f == nil || f.ExitCode != 5 || !strings.Contains(f.Reason, "1 of 2 items failed: a") {
		t.Fatalf("finish %+v", f)
	}
	if s := h.st.Steps[core.Key("stories")]; s.Status != core.Failed {
		t.Errorf("loop %s", s.Status)
	}
	h.replayed()
}

// TestLoopFailureStopsAdmitting: without continue_on_error a failed
// item lets the items in flight finish, admits no more, and fails the
// loop (exit 1), saying the rest did not run.
func TestLoopFailureStopsAdmitting(t *testing.T) {
	h := newPlanHarness(t, loopPlan(t, 2, false))
	h.ok("breakdown")
	h.items("stories", "a", "b", "c")
	h.fail(inst("stories", "a", "implement"), false)
	if got := h.started(); len(got) != 0 {
		t.Fatalf("started %v after a failed", got)
	}
	h.ok(inst("stories", "b", "implement"))
	h.ok(inst("stories", "b", "review"))
	if got := h.itemStatuses("stories"); got != "a=FAILED b=COMPLETED c=PENDING" {
		t.Errorf("items: %s", got)
	}
	f := h.finish()
	if f == nil || f.ExitCode != 1 || !strings.Contains(f.Reason, "the items after it did not run") {
		t.Fatalf("finish %+v", f)
	}
	h.replayed()
}

// TestLoopContinueOnError: every item runs; the loop fails at the end
// naming the failed items.
func TestLoopContinueOnError(t *testing.T) {
	h := newPlanHarness(t, loopPlan(t, 1, true))
	h.ok("breakdown")
	h.items("stories", "a", "b", "c")
	h.fail(inst("stories", "a", "implement"), false)
	h.ok(inst("stories", "b", "implement"))
	h.ok(inst("stories", "b", "review"))
	h.fail(inst("stories", "c", "implement"), false)
	f := h.finish()
	if f == nil || f.ExitCode != 1 || !strings.Contains(f.Reason, "2 of 3 items failed: a, c") {
		t.Fatalf("finish %+v", f)
	}
	if got := h.itemStatuses("stories"); got != "a=FAILED b=COMPLETED c=FAILED" {
		t.Errorf("items: %s", got)
	}
	if e := h.st.Steps[core.Key("stories")].Items[0].Error; !strings.HasPrefix(e, "implement: ") {
		t.Errorf("item error %q", e)
	}
	h.replayed()
}

// TestLoopBackIntoLoop: a gate after the loop looping back to the loop
// evaluates its list afresh and runs every item again; an item no
// longer in the list stays in the record, SKIPPED.
func TestLoopBackIntoLoop(t *testing.T) {
	h := newPlanHarness(t, loopPlan(t, 1, false))
	h.ok("breakdown")
	h.items("stories", "a", "b")
	for _, k := range []string{"a", "b"} {
		h.ok(inst("stories", k, "implement"))
		h.ok(inst("stories", k, "review"))
	}
	h.gateFail("integrate", "tests fail")
	if !h.expanding("stories") {
		t.Fatalf("the loop did not evaluate its list again: %#v", h.effects)
	}
	h.expect(inst("stories", "a", "implement"), core.Pending, 1, 0)
	h.items("stories", "b", "c")
	if got := h.started(); !slices.Equal(got, []string{inst("stories", "b", "implement")}) {
		t.Fatalf("started %v", got)
	}
	h.expect(inst("stories", "b", "implement"), core.Running, 1, 1)
	h.expect(inst("stories", "c", "implement"), core.Pending, 1, 0)
	if s := h.st.Steps[keytest.K(inst("stories", "a", "review"))]; s.Status != core.Skipped || s.SkipReason != "item removed" || s.LastError != nil {
		t.Errorf("removed item's instance: %s %q, last_error %q", s.Status, s.SkipReason, deref(s.LastError))
	}
	if got := h.st.Steps[core.Key("stories")].RemovedItems; !slices.Equal(got, []string{"a"}) {
		t.Errorf("removed_items %v", got)
	}
	for _, k := range []string{"b", "c"} {
		if k != "b" {
			h.ok(inst("stories", k, "implement"))
		} else {
			h.ok(inst("stories", k, "implement"))
		}
		h.ok(inst("stories", k, "review"))
	}
	h.ok("integrate")
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish %+v", f)
	}
	h.replayed()
}

// TestLoopBackFromBodyToBefore: a body step looping back to a step
// before the loop resets the whole loop.
func TestLoopBackFromBodyToBefore(t *testing.T) {
	plan := loopPlan(t, 1, false)
	plan.Step("review").LoopTarget = "breakdown"
	h := newPlanHarness(t, plan)
	h.ok("breakdown")
	h.items("stories", "a", "b")
	h.ok(inst("stories", "a", "implement"))
	h.gateFail(inst("stories", "a", "review"), "the plan is wrong")
	h.expect("breakdown", core.Running, 1, 1)
	h.expect("stories", core.Pending, 1, 0)
	h.expect(inst("stories", "b", "implement"), core.Pending, 1, 0)
	if fb := h.st.Steps[core.Key("breakdown")].Feedback; fb == nil || fb.Step != inst("stories", "a", "review") {
		t.Errorf("feedback %+v", fb)
	}
	h.ok("breakdown")
	h.items("stories", "a", "b")
	if got := h.started(); !slices.Equal(got, []string{inst("stories", "a", "implement")}) {
		t.Fatalf("started %v", got)
	}
	h.replayed()
}

// TestLoopResumeKeepsItems: a new core over the recorded state (a
// runner that died) neither evaluates the list again nor re-runs a
// finished instance; the instance in flight runs again.
func TestLoopResumeKeepsItems(t *testing.T) {
	h := newPlanHarness(t, loopPlan(t, 2, false))
	h.ok("breakdown")
	h.items("stories", "a", "b", "c")
	h.ok(inst("stories", "a", "implement"))
	// The runner dies with a.review and b.implement in flight.
	h.core = core.NewCore(h.plan)
	h.decide(core.Begin{})
	if h.expanding("stories") {
		t.Fatal("resume evaluated the list again")
	}
	got := h.started()
	slices.Sort(got)
	if want := []string{inst("stories", "a", "review"), inst("stories", "b", "implement")}; !slices.Equal(got, want) {
		t.Fatalf("resumed %v, want %v", got, want)
	}
	h.expect(inst("stories", "a", "implement"), core.Completed, 0, 1)
	h.ok(inst("stories", "a", "review"))
	h.ok(inst("stories", "b", "implement"))
	h.ok(inst("stories", "b", "review"))
	h.ok(inst("stories", "c", "implement"))
	h.ok(inst("stories", "c", "review"))
	h.ok("integrate")
	if f := h.finish(); f == nil || f.Status != core.RunCompleted {
		t.Fatalf("finish %+v", f)
	}
	h.replayed()
}

// TestLoopItemsErrors: the list's problems fail the loop step, with
// what was wrong; an empty list completes the loop with no items.
func TestLoopItemsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   core.ItemsResult
		want string
	}{
		{"not a list", core.ItemsResult{Err: "for_each gave a map, not a list"}, "not a list"},
		{"collision", core.ItemsResult{Items: []core.LoopItem{{Key: "log in"}, {Key: "log-in"}, {Key: "log?in"}}},
			`items 0 (key "log in") and 2 (key "log?in") have the same key log_in`},
		{"empty key", core.ItemsResult{Items: []core.LoopItem{{Key: ""}}}, "has no letter"},
		{"too many", core.ItemsResult{Items: make([]core.LoopItem, 6)}, "for_each gave 6 items; a loop has at most 5 (defaults.max_items raises the limit)"},
		{"too many, the driver stopped reading", core.ItemsResult{Items: make([]core.LoopItem, 6), Total: 1000000}, "for_each gave 1000000 items; a loop has at most 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newPlanHarness(t, loopPlan(t, 1, false))
			h.ok("breakdown")
			tc.in.Step = keytest.K("stories")
			h.decide(tc.in)
			s := h.st.Steps[core.Key("stories")]
			if s.Status != core.Failed || !strings.Contains(deref(s.LastError), tc.want) {
				t.Fatalf("loop: %s %q, want an error with %q", s.Status, deref(s.LastError), tc.want)
			}
			if f := h.finish(); f == nil || f.ExitCode != 1 {
				t.Fatalf("finish %+v", f)
			}
			h.replayed()
		})
	}
	h := newPlanHarness(t, loopPlan(t, 1, false))
	h.ok("breakdown")
	h.items("stories")
	if s := h.st.Steps[core.Key("stories")]; s.Status != core.Completed || *s.LoopIndex != 0 {
		t.Fatalf("empty loop: %s", s.Status)
	}
	if got := h.started(); !slices.Equal(got, []string{"integrate"}) {
		t.Fatalf("after an empty loop: %v", got)
	}
	h.replayed()
}

func TestSanitizeItemKey(t *testing.T) {
	for in, want := range map[string]string{
		"login":                 "login",
		"Log in page!":          "Log_in_page_",
		"a/b/c.go":              "a_b_c_go",
		"ünïcode":               "_n_code",
		strings.Repeat("x", 60): strings.Repeat("x", 48),
		"":                      "",
	} {
		if got := core.SanitizeItemKey(in); got != want {
			t.Errorf("SanitizeItemKey(%q) = %q, want %q", in, got, want)
		}
	}
}
