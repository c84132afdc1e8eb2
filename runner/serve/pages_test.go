package serve

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
)

// TestStepRowsWaits: a pending step says what it waits for — the
// target of a loop-back to its side, or its closed gates — and nothing
// else does.
func TestStepRowsWaits(t *testing.T) {
	fix := keytest.K("fix")
	st := &core.State{StepOrder: keytest.Keys("code", "review", "deploy", "docs"), Steps: map[core.StepKey]*core.StepState{
		keytest.K("code"):   {Status: core.Completed},
		keytest.K("review"): {Status: core.Pending, WaitingFor: &fix},
		keytest.K("deploy"): {Status: core.Pending, WaitingGates: []string{"ci", "window"}},
		keytest.K("docs"):   {Status: core.Running, WaitingGates: []string{"stale"}},
	}}
	want := map[string]string{"code": "", "review": "fix", "deploy": "gates: ci, window", "docs": ""}
	for _, row := range stepRows("/runs/0/r", ops.Status{State: st}, nil) {
		if row.Waits != want[row.Key] {
			t.Errorf("%s waits %q, want %q", row.Key, row.Waits, want[row.Key])
		}
	}
}

// TestPageOf: a table longer than a page opens where the run is — its
// first running or waiting step, else its first failed one — unless a
// page is asked for, and links every page.
func TestPageOf(t *testing.T) {
	rows := func(statuses ...core.Status) []stepRow {
		var out []stepRow
		for i, s := range statuses {
			out = append(out, stepRow{Key: string(rune('a' + i)), Status: string(s)})
		}
		return out
	}
	done, failed, running, waiting := core.Completed, core.Failed, core.Running, core.WaitingOnHuman
	for _, tc := range []struct {
		name        string
		rows        []stepRow
		query       string
		first, last int
		prev, next  string
	}{
		{"first page by default", rows(done, done, done, done, done), "", 1, 2, "", "/r?page=2"},
		{"the running step's page", rows(done, done, done, running, done), "", 3, 4, "/r?page=1", "/r?page=3"},
		{"the waiting step's page", rows(done, done, done, done, waiting), "", 5, 5, "/r?page=2", ""},
		{"a failed step's page", rows(done, done, failed, done, done), "", 3, 4, "/r?page=1", "/r?page=3"},
		{"running wins over failed", rows(failed, done, done, done, running), "", 5, 5, "/r?page=2", ""},
		{"the page asked for", rows(done, done, done, running, done), "3", 5, 5, "/r?page=2", ""},
		{"a page past the end", rows(done, done, done, done, done), "9", 1, 2, "", "/r?page=2"},
		{"not a number", rows(done, done, done, done, done), "x", 1, 2, "", "/r?page=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, p := pageOf(tc.rows, 2, tc.query, "/r")
			if p == nil {
				t.Fatal("no pager")
			}
			if p.First != tc.first || p.Last != tc.last || p.Total != len(tc.rows) || p.Prev != tc.prev || p.Next != tc.next {
				t.Errorf("pager %d-%d of %d, prev %q, next %q; want %d-%d of %d, %q, %q", p.First, p.Last, p.Total, p.Prev, p.Next,
					tc.first, tc.last, len(tc.rows), tc.prev, tc.next)
			}
			if len(got) != tc.last-tc.first+1 || got[0].Key != tc.rows[tc.first-1].Key {
				t.Errorf("rows %v, want rows %d-%d", got, tc.first, tc.last)
			}
			if len(p.Pages) != 3 {
				t.Errorf("%d page links, want 3", len(p.Pages))
			}
			for _, l := range p.Pages {
				if (l.URL == "") != (l.N == (tc.first+1)/2) {
					t.Errorf("page %d links %q", l.N, l.URL)
				}
			}
		})
	}
	if got, p := pageOf(rows(done, running), 2, "2", "/r"); p != nil || len(got) != 2 {
		t.Errorf("a table of one page: %d rows, pager %v", len(got), p)
	}
}

// TestStatusSendsChangedRows: a run's streams are sent its whole step
// table once, then only the rows that changed; a stream that joins later
// is sent the whole table as it stands.
func TestStatusSendsChangedRows(t *testing.T) {
	w := &watcher{subs: map[*subscription]struct{}{}}
	sub := &subscription{ch: make(chan message, 10), wake: make(chan struct{}, 1)}
	w.subs[sub] = struct{}{}
	row := func(key string, s core.Status) stepRow { return stepRow{Key: key, Status: string(s)} }
	keys := func(m message) []string {
		var ls liveStatus
		if err := json.Unmarshal(m.data, &ls); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range ls.Steps {
			out = append(out, r.Key+"="+r.Status)
		}
		return out
	}
	w.update(&liveStatus{Status: "running", Steps: []stepRow{row("a", core.Running), row("b", core.Pending)}})
	if got := keys(<-sub.ch); !slices.Equal(got, []string{"a=RUNNING", "b=PENDING"}) {
		t.Errorf("first status %v, want the whole table", got)
	}
	// Nothing changed: nothing is sent.
	w.update(&liveStatus{Status: "running", Steps: []stepRow{row("a", core.Running), row("b", core.Pending)}})
	// a completes, b starts, c appears (a loop's new instance).
	w.update(&liveStatus{Status: "running", Steps: []stepRow{row("a", core.Completed), row("b", core.Running), row("c", core.Pending)}})
	if got := keys(<-sub.ch); !slices.Equal(got, []string{"a=COMPLETED", "b=RUNNING", "c=PENDING"}) {
		t.Errorf("second status %v", got)
	}
	// Only the run's liveness changed: the status says so, with no rows.
	w.update(&liveStatus{Status: "running", Live: "stale", Steps: []stepRow{row("a", core.Completed), row("b", core.Running), row("c", core.Pending)}})
	if got := keys(<-sub.ch); len(got) != 0 {
		t.Errorf("a liveness change sent rows %v", got)
	}
	w.update(&liveStatus{Status: "running", Live: "stale", Steps: []stepRow{row("a", core.Completed), row("b", core.Completed), row("c", core.Pending)}})
	if got := keys(<-sub.ch); !slices.Equal(got, []string{"b=COMPLETED"}) {
		t.Errorf("third status %v, want b alone", got)
	}
	select {
	case m := <-sub.ch:
		t.Errorf("unexpected message %s", m.data)
	default:
	}
	w.mu.Lock()
	whole := w.whole()
	w.mu.Unlock()
	if got := keys(*whole); !slices.Equal(got, []string{"a=COMPLETED", "b=COMPLETED", "c=PENDING"}) {
		t.Errorf("a joining stream is sent %v, want the whole table", got)
	}
}

// TestTailNext: a step's log stream goes on while its session runs and
// while the step waits to run again in a running run, tells the page
// when the step runs another session, and ends otherwise.
func TestTailNext(t *testing.T) {
	const l1, l2 = "/r/logs/a.0.1.log", "/r/logs/a.0.2.log"
	for _, tc := range []struct {
		name string
		run  core.RunStatus
		step *core.StepState
		path string
		want int
	}{
		{"its session runs", core.RunRunning, &core.StepState{Status: core.Running, LogPath: l1}, l1, tailGoOn},
		{"no log yet", core.RunRunning, &core.StepState{Status: core.Running}, "", tailGoOn},
		{"the first log appears", core.RunRunning, &core.StepState{Status: core.Running, LogPath: l1}, "", tailGoOn},
		{"another session", core.RunRunning, &core.StepState{Status: core.Running, LogPath: l2}, l1, tailNextSession},
		{"waits to run again", core.RunRunning, &core.StepState{Status: core.Pending, Attempts: 1, LogPath: l1}, l1, tailGoOn},
		{"pending in a paused run", core.RunPaused, &core.StepState{Status: core.Pending, LogPath: l1}, l1, tailEnd},
		{"completed", core.RunRunning, &core.StepState{Status: core.Completed, LogPath: l1}, l1, tailEnd},
		{"failed", core.RunFailed, &core.StepState{Status: core.Failed, LogPath: l1}, l1, tailEnd},
		{"waits on a human", core.RunWaitingOnHuman, &core.StepState{Status: core.WaitingOnHuman, LogPath: l1}, l1, tailEnd},
		{"no such step", core.RunRunning, nil, l1, tailEnd},
	} {
		st := &core.State{Status: tc.run, Steps: map[core.StepKey]*core.StepState{}}
		if tc.step != nil {
			st.Steps[keytest.K("a")] = tc.step
		}
		if got := tailNext(st, keytest.K("a"), tc.path); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestPageWords(t *testing.T) {
	for in, want := range map[string]string{
		"waiting on a human (no runner; flow resume after approval)":                    "Waiting on a human (no runner; Resume after approval)",
		"no runner holds the run and it did not finish; flow resume takes it over":      "No runner holds the run and it did not finish; Resume takes it over",
		"run r1 is interrupted: nothing to cancel (it stays resumable: flow resume r1)": "Run r1 is interrupted: nothing to cancel (it stays resumable: Resume (on the run's page))",
		"paused; no runner holds the run: flow continue r1, then flow resume r1":        "Paused; no runner holds the run: Continue (on the run's page), then Resume (on the run's page)",
		"reject needs --reason\ntry: flow reject RUN_ID approve --reason 'why'":         "Reject needs --reason",
		"waiting on a human: flow approve r1 ship_it":                                   "Waiting on a human: the approval form on the run's page",
	} {
		if got := pageWords(in); got != want {
			t.Errorf("pageWords(%q) = %q, want %q", in, got, want)
		}
	}
}
