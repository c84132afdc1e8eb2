package spec

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

func parse(t *testing.T, src string) *config.Workflow {
	t.Helper()
	wf, err := config.Parse(afero.NewMemMapFs(), "/wf.yaml", "yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// TestNewPlanBudgets: a step's own budget wins over the overrides,
// which win over the workflow's defaults, which win over flow's; a
// budget expression is evaluated with the vars, and one below 1 is an
// error naming the step and the field.
func TestNewPlanBudgets(t *testing.T) {
	const src = "name: w\nvars: {n: \"5\", zero: \"0\"}\ndefaults: {max_attempts: 3}\nsteps:\n" +
		"  - {id: own, run: x, max_attempts: 7}\n  - {id: expr, run: x, max_attempts: vars.n}\n  - {id: plain, run: x}\n"
	now := time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		over Budgets
		want map[string]int
	}{
		{name: "defaults", want: map[string]int{"own": 7, "expr": 5, "plain": 3}},
		{name: "override", over: Budgets{MaxAttempts: 9}, want: map[string]int{"own": 7, "expr": 5, "plain": 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := NewPlanOf(parse(t, src), tc.over, map[string]string{"n": "5"}, now)
			if err != nil {
				t.Fatal(err)
			}
			for _, ps := range plan.Steps {
				if ps.MaxAttempts != tc.want[ps.ID] {
					t.Errorf("%s: max attempts %d, want %d", ps.ID, ps.MaxAttempts, tc.want[ps.ID])
				}
				if ps.MaxIterations != config.DefaultMaxIterations {
					t.Errorf("%s: max iterations %d, want %d", ps.ID, ps.MaxIterations, config.DefaultMaxIterations)
				}
			}
		})
	}
	t.Run("below one", func(t *testing.T) {
		_, err := NewPlanOf(parse(t, src), Budgets{}, map[string]string{"n": "0"}, now)
		if err == nil || !strings.Contains(err.Error(), "step expr: max_attempts") || !strings.Contains(err.Error(), "at least 1") {
			t.Errorf("NewPlanOf with n=0: %v, want an error naming step expr's max_attempts", err)
		}
	})
}

// TestPlanStartAt: restarting at a step reruns it and what is
// downstream, keeps what is upstream, and lists the kept steps'
// declared artifacts that are gone.
func TestPlanStartAt(t *testing.T) {
	wf := parse(t, "name: w\nsteps:\n  - {id: a, run: x, artifacts: [A.md]}\n  - {id: b, run: x, needs: [a]}\n  - {id: c, run: x, needs: [b]}\n")
	st := &core.State{StepOrder: keytest.Keys("a", "b", "c"), Steps: map[core.StepKey]*core.StepState{
		keytest.K("a"): {Status: core.Completed}, keytest.K("b"): {Status: core.Completed}, keytest.K("c"): {Status: core.Failed},
	}}
	fsys := afero.NewMemMapFs()
	p, err := PlanStartAt(fsys, wf, st, "/repo", core.Key("b"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Kept, keytest.Keys("a")) || !slices.Equal(p.Rerun, keytest.Keys("b", "c")) {
		t.Errorf("kept %v rerun %v, want [a] and [b c]", p.Kept, p.Rerun)
	}
	if len(p.Missing) != 1 || p.Missing[0] != (MissingArtifact{Step: keytest.K("a"), Path: "A.md"}) {
		t.Errorf("missing %+v, want a's A.md", p.Missing)
	}
	if err := afero.WriteFile(fsys, "/repo/A.md", []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, _ := PlanStartAt(fsys, wf, st, "/repo", core.Key("b")); len(p.Missing) != 0 {
		t.Errorf("missing %+v after A.md was written", p.Missing)
	}
	if _, err := PlanStartAt(fsys, wf, st, "/repo", core.Key("nope")); err == nil {
		t.Error("start at an unknown step: no error")
	}
}

// TestRunIDsSortByAge: run ids name the time they were made, so that
// they sort by age, and two made at once differ.
func TestRunIDsSortByAge(t *testing.T) {
	t0 := time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)
	a, b, later := NewRunID(t0), NewRunID(t0), NewRunID(t0.Add(time.Second))
	if !strings.HasPrefix(a, "20250115-143000-") || a == b {
		t.Errorf("ids %q and %q at the same time", a, b)
	}
	if !(a < later && b < later) {
		t.Errorf("ids %q, %q do not sort before the later %q", a, b, later)
	}
	if err := record.CheckRunID(a); err != nil {
		t.Errorf("new id %q is refused: %v", a, err)
	}
}

// TestSecrets: the values of declared secrets and of variables whose
// names look secret are hidden; others, and empty values, are not.
func TestSecrets(t *testing.T) {
	wf := parse(t, "name: w\nsecrets: [DEPLOY_KEY]\nsteps:\n  - {id: a, run: x}\n")
	environ := []string{"DEPLOY_KEY=k-1234", "API_TOKEN=t-5678", "HOME=/home/me", "EMPTY_TOKEN="}
	got := Secrets(wf, environ).String("k-1234 t-5678 /home/me")
	if strings.Contains(got, "k-1234") || strings.Contains(got, "t-5678") || !strings.Contains(got, "/home/me") {
		t.Errorf("redacted %q", got)
	}
	if m := EnvironMap(append(environ, "HOME=/other")); m["HOME"] != "/other" || m["API_TOKEN"] != "t-5678" {
		t.Errorf("EnvironMap: %v; a later pair must win", m)
	}
}
