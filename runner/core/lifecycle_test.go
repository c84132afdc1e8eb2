package core_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

const lifecycleWorkflow = `
name: lc
vars: {feature: one}
steps:
  - id: plan
    run: "true"
  - id: code
    run: "true"
  - id: review
    run: "true"
    gate: {loop_back_to: code, max_iterations: 2}
  - id: ship
    run: "true"
`

// lifecycleAt is the instant every lifecycle scenario opens its run.
var lifecycleAt = time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)

// openNew opens a new run of wf as a driver does, and fails the test on
// a refusal.
func openNew(t *testing.T, wf *config.Workflow, o core.Opening) (*core.State, []core.Event) {
	t.Helper()
	o.Now = lifecycleAt
	o.Created = record.Created(wf, "/repo", "r1", nil)
	st, evs, err := core.Open(wf, o)
	if err != nil {
		t.Fatal(err)
	}
	return st, evs
}

// finish records step outcomes on st, as a run would have.
func finish(t *testing.T, st *core.State, typ, step string, data any) {
	t.Helper()
	if err := core.Apply(st, core.NewEvent(lifecycleAt, typ, keytest.K(step), data)); err != nil {
		t.Fatal(err)
	}
}

// TestOpenNewRun: a new run is created, then taken by its runner; a
// start at a step skips what it does not lead to; a raised budget is
// recorded last.
func TestOpenNewRun(t *testing.T) {
	wf := loadWorkflow(t, lifecycleWorkflow)
	st, evs := openNew(t, wf, core.Opening{Runner: core.RunnerStarted{Host: "h", PID: 7}})
	if got := eventTypes(evs); !slices.Equal(got, []string{core.EvRunCreated, core.EvRunnerStarted}) {
		t.Fatalf("events = %v", got)
	}
	if st.RunID != "r1" || st.Runner == nil || st.Runner.Host != "h" || len(st.StepOrder) != 4 {
		t.Fatalf("state = %+v", st)
	}

	st, evs = openNew(t, wf, core.Opening{StartAt: core.Key("review"), Raise: core.Budget{Sessions: 3}})
	if got := eventTypes(evs); !slices.Equal(got, []string{core.EvRunCreated, core.EvRunnerStarted, core.EvBudgetRaised}) {
		t.Fatalf("events = %v", got)
	}
	for id, want := range map[string]core.Status{"plan": core.Skipped, "code": core.Skipped, "review": core.Pending, "ship": core.Pending} {
		if got := st.Steps[keytest.K(id)].Status; got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}

	_, _, err := core.Open(wf, core.Opening{Now: lifecycleAt, Created: record.Created(wf, "/repo", "r1", nil), StartAt: core.Key("reviw")})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), `did you mean "review"`) {
		t.Fatalf("start at a typo: %v", err)
	}
}

// TestOpenRecordedRun covers the ways a recorded run is opened again:
// a takeover after an edit of its workflow, a restart at a step, a
// retry, and the refusals.
func TestOpenRecordedRun(t *testing.T) {
	wf := loadWorkflow(t, lifecycleWorkflow)
	base := func(t *testing.T) *core.State {
		st, _ := openNew(t, wf, core.Opening{Runner: core.RunnerStarted{Host: "h"}})
		return st
	}

	t.Run("takeover of an edited workflow", func(t *testing.T) {
		st := base(t)
		// The edit changes a var, adds docs and removes plan.
		src := strings.Replace(lifecycleWorkflow, "feature: one", "feature: two", 1)
		src = strings.Replace(src, "  - id: ship\n", "  - id: docs\n    run: \"true\"\n  - id: ship\n", 1)
		src = strings.Replace(src, "  - id: plan\n    run: \"true\"\n", "", 1)
		edited := loadWorkflow(t, src)
		_, evs, err := core.Open(edited, core.Opening{Now: lifecycleAt, State: st, Digest: edited.Digest(),
			Vars: core.RunVars(edited.Vars, st), Runner: core.RunnerStarted{Host: "h2"}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{core.EvStepAdded, core.EvStepRemoved, core.EvWorkflowChanged, core.EvRunnerStarted}
		if got := eventTypes(evs); !slices.Equal(got, want) {
			t.Fatalf("events = %v, want %v", got, want)
		}
		if evs[0].Step != core.Key("docs") || evs[1].Step != core.Key("plan") || st.Vars["feature"] != "two" || st.Runner.Host != "h2" {
			t.Fatalf("events %v, vars %v, runner %+v", evs, st.Vars, st.Runner)
		}
	})

	t.Run("restart at a step", func(t *testing.T) {
		st := base(t)
		for _, id := range []string{"plan", "code", "review"} {
			finish(t, st, core.EvStepCompleted, id, core.Outcome{})
		}
		_, evs, err := core.Open(wf, core.Opening{Now: lifecycleAt, State: st, Digest: wf.Digest(), Vars: core.RunVars(wf.Vars, st), StartAt: core.Key("code")})
		if err != nil {
			t.Fatal(err)
		}
		var sa core.StartAt
		if err := json.Unmarshal(evs[len(evs)-1].Data, &sa); err != nil || evs[len(evs)-1].Type != core.EvStartAt {
			t.Fatalf("last event %+v (%v)", evs[len(evs)-1], err)
		}
		if !slices.Equal(sa.Reset, keytest.Keys("code", "review", "ship")) || st.Steps[core.Key("plan")].Status != core.Completed || st.Steps[core.Key("code")].Status != core.Pending {
			t.Fatalf("reset %v; plan %s, code %s", sa.Reset, st.Steps[core.Key("plan")].Status, st.Steps[core.Key("code")].Status)
		}
	})

	t.Run("finished runs are refused, a failed one with the way out", func(t *testing.T) {
		for _, c := range []struct {
			status core.RunStatus
			want   string
		}{
			{core.RunCompleted, "flow run"},
			{core.RunFailed, "flow retry r1"},
		} {
			st := base(t)
			st.Status = c.status
			err := core.CheckReopen(wf, st, core.Opening{})
			if !errors.Is(err, core.ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v", c.status, err)
			}
			if _, _, err2 := core.Open(wf, core.Opening{Now: lifecycleAt, State: st}); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("%s: Open says %v, CheckReopen %v", c.status, err2, err)
			}
		}
		st := base(t)
		if err := core.CheckReopen(wf, st, core.Opening{Retry: true}); !errors.Is(err, core.ErrRefused) {
			t.Errorf("retry of a running run: %v", err)
		}
	})

	t.Run("retry", func(t *testing.T) {
		failed := func(t *testing.T, reason string) *core.State {
			st := base(t)
			finish(t, st, core.EvStepCompleted, "plan", core.Outcome{})
			finish(t, st, core.EvStepCompleted, "code", core.Outcome{})
			finish(t, st, core.EvStepFailed, "review", core.Outcome{Error: reason})
			finish(t, st, core.EvRunFinished, "", core.RunFinished{Status: core.RunFailed, ExitCode: 1})
			return st
		}
		st := failed(t, "exit code 1")
		_, evs, err := core.Open(wf, core.Opening{Now: lifecycleAt, State: st, Digest: wf.Digest(), Vars: core.RunVars(wf.Vars, st), Retry: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := eventTypes(evs); got[len(got)-1] != core.EvRetry {
			t.Fatalf("events = %v", got)
		}
		if st.Steps[core.Key("review")].Status != core.Pending || st.Steps[core.Key("ship")].Status != core.Pending || st.Steps[core.Key("code")].Status != core.Completed {
			t.Fatalf("after retry: review %s, ship %s, code %s", st.Steps[core.Key("review")].Status, st.Steps[core.Key("ship")].Status, st.Steps[core.Key("code")].Status)
		}

		st = failed(t, "max iterations reached (2)")
		err = core.CheckReopen(wf, st, core.Opening{Retry: true})
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "--max-iterations") {
			t.Fatalf("retry at a spent budget: %v", err)
		}
		if err := core.CheckReopen(wf, st, core.Opening{Retry: true, MaxIterations: 5, ForceMaxIterations: true}); err != nil {
			t.Fatalf("retry with a higher budget: %v", err)
		}
	})
}

// TestOpenIsDeterministic: the same opening gives the same events, and
// the events rebuild the state Open left.
func TestOpenIsDeterministic(t *testing.T) {
	wf := loadWorkflow(t, lifecycleWorkflow)
	_, first := openNew(t, wf, core.Opening{StartAt: core.Key("code"), Runner: core.RunnerStarted{Host: "h"}})
	st, second := openNew(t, wf, core.Opening{StartAt: core.Key("code"), Runner: core.RunnerStarted{Host: "h"}})
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("two openings differ:\n%v\n%v", first, second)
	}
	replayed := &core.State{}
	for _, e := range second {
		if err := core.Apply(replayed, e); err != nil {
			t.Fatal(err)
		}
	}
	if mustJSON(t, replayed) != mustJSON(t, st) {
		t.Fatalf("replayed state differs:\n%s\n%s", mustJSON(t, replayed), mustJSON(t, st))
	}
}
