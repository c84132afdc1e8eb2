package retention

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/runner/core"
)

// TestSelect applies policies to one set of runs: which go, which stay,
// and why.
func TestSelect(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	run := func(id, wf string, status core.RunStatus, ageDays int) Run {
		at := now.Add(-time.Duration(ageDays) * day)
		return Run{ID: id, Workflow: wf, Status: status, Created: at.Add(-time.Hour), Ended: at}
	}
	runs := []Run{
		run("a1", "a", core.RunCompleted, 1),
		run("a2", "a", core.RunCompleted, 3),
		run("a3", "a", core.RunFailed, 4),
		run("a4", "a", core.RunCompleted, 10),
		run("a5", "a", core.RunInterrupted, 20),
		run("a6", "a", core.RunBudgetExceeded, 30),
		run("b1", "b", core.RunCompleted, 2),
		run("b2", "b", core.RunCompleted, 40),
		run("w1", "a", core.RunWaitingOnHuman, 50),
		run("r1", "a", core.RunRunning, 60),
		{ID: "z1", Workflow: "a", Status: core.RunCompleted}, // no times recorded
	}
	all := Prunable
	cases := []struct {
		name string
		p    Policy
		// gone and kept list the ids, newest first.
		gone, kept string
	}{
		{"keep 1: completed runs only, per workflow", Policy{Keep: 1}, "a2 a4 b2 z1", "a1 b1"},
		{"keep 0: every completed run", Policy{Keep: 0}, "a1 b1 a2 a4 b2 z1", ""},
		{"keep 5: fewer runs than that", Policy{Keep: 5}, "", "a1 b1 a2 a4 b2 z1"},
		{"older than a week", Policy{Keep: 0, OlderThan: 7 * day}, "a4 b2", "a1 b1 a2 z1"},
		{"keep 1 and older than 2 days: both must hold", Policy{Keep: 1, OlderThan: 2 * day}, "a2 a4 b2", "a1 b1 z1"},
		{"one workflow", Policy{Keep: 1, Workflow: "b"}, "b2", "b1"},
		{"failed too", Policy{Keep: 1, Statuses: []core.RunStatus{core.RunCompleted, core.RunFailed}}, "a2 a3 a4 b2 z1", "a1 b1"},
		{"every status that may go", Policy{Keep: 0, Statuses: all}, "a1 b1 a2 a3 a4 a5 a6 b2 z1", ""},
		{"interrupted only", Policy{Keep: 0, OlderThan: day, Statuses: []core.RunStatus{core.RunInterrupted}}, "a5", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var gone, kept []string
			for _, d := range Select(c.p, runs, now) {
				if d.Why == "" {
					t.Errorf("%s: no reason given", d.ID)
				}
				if d.Status == core.RunWaitingOnHuman || d.Status == core.RunRunning {
					t.Errorf("%s (%s) judged at all", d.ID, d.Status)
				}
				if d.Go {
					gone = append(gone, d.ID)
				} else {
					kept = append(kept, d.ID)
				}
			}
			if got := strings.Join(gone, " "); got != c.gone {
				t.Errorf("gone %q, want %q", got, c.gone)
			}
			if got := strings.Join(kept, " "); got != c.kept {
				t.Errorf("kept %q, want %q", got, c.kept)
			}
		})
	}
}

// TestSelectWhy: the reasons name the policy's terms.
func TestSelectWhy(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	runs := []Run{
		{ID: "new", Workflow: "wf", Status: core.RunCompleted, Created: now.Add(-time.Hour), Ended: now.Add(-time.Hour)},
		{ID: "old", Workflow: "wf", Status: core.RunCompleted, Created: now.Add(-240 * time.Hour), Ended: now.Add(-240 * time.Hour)},
	}
	ds := Select(Policy{Keep: 1, OlderThan: 48 * time.Hour}, runs, now)
	want := map[string]string{
		"new": "one of the 1 newest completed runs of wf",
		"old": "not one of the 1 newest completed runs of wf; ended 10d ago",
	}
	for _, d := range ds {
		if d.Why != want[d.ID] {
			t.Errorf("%s: %q, want %q", d.ID, d.Why, want[d.ID])
		}
	}
	ds = Select(Policy{Keep: 0, OlderThan: 48 * time.Hour}, runs, now)
	if ds[0].Why != "ended 1h0m ago, less than 2d" {
		t.Errorf("young run: %q", ds[0].Why)
	}
}

// TestParseStatuses accepts the statuses a run may go in and refuses
// the others, saying why.
func TestParseStatuses(t *testing.T) {
	cases := []struct {
		in   []string
		want string // the statuses, or the error's text
	}{
		{[]string{"failed", "completed"}, "completed failed"},
		{[]string{"budget_exceeded", "interrupted", "failed"}, "failed interrupted budget_exceeded"},
		{[]string{"completed", "completed"}, "completed"},
		{[]string{"waiting_on_human"}, "waits on a human is never pruned"},
		{[]string{"running"}, "has not finished is never pruned"},
		{[]string{"paused"}, "has not finished is never pruned"},
		{[]string{"complete"}, `did you mean "completed"?`},
	}
	for _, c := range cases {
		got, err := ParseStatuses(c.in)
		var text string
		if err != nil {
			if !errors.Is(err, core.ErrInvalid) {
				t.Errorf("%v: error %v is not a usage error", c.in, err)
			}
			text = err.Error()
		} else {
			var s []string
			for _, st := range got {
				s = append(s, string(st))
			}
			text = strings.Join(s, " ")
		}
		if !strings.Contains(text, c.want) {
			t.Errorf("%v: %q, want %q", c.in, text, c.want)
		}
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		3 * time.Second: "3s", 90 * time.Minute: "1h30m", 47 * time.Hour: "47h0m",
		49 * time.Hour: "2d", 10 * 24 * time.Hour: "10d", -time.Second: "0s",
	} {
		if got := Age(d); got != want {
			t.Errorf("Age(%s) = %q, want %q", d, got, want)
		}
	}
}
