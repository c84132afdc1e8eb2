package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
)

// recordRun writes the record of a finished run of n command steps, as a
// runner leaves it, into repo: every event in events.jsonl, and the
// snapshot of them all in run_state.json (the snapshot of the first keep
// events when keep is above 0: a runner that appended more since).
func recordRun(t testing.TB, fsys afero.Fs, repo, id string, n int, created time.Time, keep int) {
	t.Helper()
	dir := RunDir(repo, id)
	steps := make([]string, n)
	for i := range steps {
		steps[i] = fmt.Sprintf("s%d", i+1)
	}
	at := created
	tick := func() time.Time { at = at.Add(time.Millisecond); return at }
	events := []core.Event{
		core.NewEvent(created, core.EvRunCreated, keytest.K(""), core.RunCreated{RunID: id, WorkflowName: "seq", WorkflowFile: repo + "/wf.yaml",
			WorkflowDigest: "sha256:0", RepoDir: repo, ReportsDir: dir + "/reports", ManualInputsDir: dir + "/manual_inputs",
			Vars: map[string]string{}, VarOverrides: map[string]string{}, Steps: keytest.Keys(steps...)}),
		core.NewEvent(created, core.EvRunnerStarted, keytest.K(""), core.RunnerStarted{PID: 4242, Host: "host"}),
	}
	zero := 0
	for _, s := range steps {
		report := fmt.Sprintf("%s/reports/%s__%s.json", dir, id, s)
		events = append(events,
			core.NewEvent(tick(), core.EvStepStarted, keytest.K(s), core.StepStarted{Attempt: 1}),
			core.NewEvent(tick(), core.EvSessionStarted, keytest.K(s), core.SessionStarted{PID: 4243, Marker: "MARKER", LogPath: dir + "/logs/" + s + ".0.1.log", ReportPath: report}),
			core.NewEvent(tick(), core.EvStepCompleted, keytest.K(s), core.Outcome{Attempt: 1, ExitCode: &zero, Signals: map[string]bool{"DONE": false, "FAIL": false, "PASS": false}, Duration: "1ms"}))
	}
	events = append(events, core.NewEvent(tick(), core.EvRunFinished, keytest.K(""), core.RunFinished{Status: core.RunCompleted}))
	log, err := eventlog.Open(fsys, filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	st := &core.State{}
	for i, e := range events {
		e, err := log.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		if keep <= 0 || i < keep {
			if err := core.Apply(st, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if err := WriteSnapshot(fsys, dir, st); err != nil {
		t.Fatal(err)
	}
}

// stepsKey begins the steps of run_state.json as State.Indented writes
// them: the last field at the top level.
const stepsKey = "\n  \"steps\": "

// headOf is what ListRunHeads must return for a run LoadState reads as
// st: the state without its steps.
func headOf(st *core.State) *core.State {
	if st == nil {
		return nil
	}
	h := *st
	h.StepOrder, h.Steps = nil, nil
	return &h
}

// TestListRunHeadsIsLoadState checks that the list of runs says of each
// run what LoadState, which flow status uses, says of it, whatever
// state its record is in, and lists the runs newest first.
func TestListRunHeadsIsLoadState(t *testing.T) {
	fsys := afero.NewMemMapFs()
	repo := "/repo"
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	edit := func(id, file string, fn func([]byte) []byte) {
		t.Helper()
		p := filepath.Join(RunDir(repo, id), file)
		b, err := afero.ReadFile(fsys, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := afero.WriteFile(fsys, p, fn(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type damage struct {
		id   string
		what string
		fn   func(id string)
	}
	cases := []damage{
		{"a-plain", "a finished run", nil},
		{"b-live", "a live runner appended events since its snapshot", nil},
		{"c-torn", "the last line of events.jsonl is torn", func(id string) {
			edit(id, EventsFile, func(b []byte) []byte { return b[:len(b)-20] })
		}},
		{"d-nostate", "no run_state.json", func(id string) {
			if err := fsys.Remove(filepath.Join(RunDir(repo, id), StateFile)); err != nil {
				t.Fatal(err)
			}
		}},
		{"e-noevents", "no events.jsonl", func(id string) {
			if err := fsys.Remove(filepath.Join(RunDir(repo, id), EventsFile)); err != nil {
				t.Fatal(err)
			}
		}},
		{"f-fault", "a second writer's line in the middle of events.jsonl", func(id string) {
			edit(id, EventsFile, func(b []byte) []byte {
				lines := bytes.SplitAfter(b, []byte("\n"))
				return bytes.Join(append(lines[:5:5], append([][]byte{lines[2]}, lines[5:]...)...), nil)
			})
		}},
		{"g-compact", "a snapshot not indented (an older or foreign writer)", func(id string) {
			edit(id, StateFile, func(b []byte) []byte {
				var c bytes.Buffer
				if err := json.Compact(&c, b); err != nil {
					t.Fatal(err)
				}
				return c.Bytes()
			})
		}},
		{"h-after", "a field after the steps (a hand edit)", func(id string) {
			edit(id, StateFile, func(b []byte) []byte {
				b = bytes.TrimRight(b, "\n")
				return append(b[:len(b)-2], []byte(",\n  \"status\": \"failed\"\n}\n")...)
			})
		}},
		{"i-badstate", "a damaged run_state.json", func(id string) {
			edit(id, StateFile, func(b []byte) []byte { return b[:len(b)/2] })
		}},
		{"j-nullsteps", "a snapshot without steps", func(id string) {
			edit(id, StateFile, func(b []byte) []byte {
				i := bytes.Index(b, []byte(stepsKey))
				return append(b[:i+len(stepsKey)], []byte("null\n}\n")...)
			})
		}},
		{"k-empty", "an empty events.jsonl and no run_state.json", func(id string) {
			if err := fsys.Remove(filepath.Join(RunDir(repo, id), StateFile)); err != nil {
				t.Fatal(err)
			}
			edit(id, EventsFile, func([]byte) []byte { return nil })
		}},
		{"m-field", "a field between step_order and the steps", func(id string) {
			edit(id, StateFile, func(b []byte) []byte {
				return bytes.Replace(b, []byte(stepsKey), []byte("\n  \"cleanups\": 2,"+stepsKey), 1)
			})
		}},
		{"l-copied", "a run copied from another checkout", func(id string) {
			edit(id, StateFile, func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("/repo/"), []byte("/elsewhere/")) })
		}},
	}
	for i, c := range cases {
		keep := 0
		if c.id == "b-live" {
			keep = 8 // the snapshot has 8 events of 16
		}
		recordRun(t, fsys, repo, c.id, 4, t0.Add(time.Duration(i)*time.Minute), keep)
		if c.fn != nil {
			c.fn(c.id)
		}
	}
	if err := fsys.MkdirAll(filepath.Join(RunsDir(repo), ".importing"), 0o755); err != nil {
		t.Fatal(err)
	}
	heads, err := ListRunHeads(fsys, repo)
	if err != nil {
		t.Fatal(err)
	}
	full, err := ListRuns(fsys, repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(heads) != len(cases) || len(full) != len(cases) {
		t.Fatalf("%d heads and %d runs listed, want %d", len(heads), len(full), len(cases))
	}
	for i, h := range heads {
		r := full[i]
		if h.ID != r.ID || h.Dir != r.Dir {
			t.Errorf("run %d: %s %s, ListRuns has %s %s", i, h.ID, h.Dir, r.ID, r.Dir)
			continue
		}
		// A field after the steps (a hand edit: flow writes none) is
		// not read by a head, which stops at the steps.
		if h.ID != "h-after" && !reflect.DeepEqual(h.State, headOf(r.State)) {
			t.Errorf("%s: head\n%+v\nwant\n%+v", h.ID, h.State, headOf(r.State))
		}
		if fmt.Sprint(h.Err) != fmt.Sprint(r.Err) {
			t.Errorf("%s: error %v, want %v", h.ID, h.Err, r.Err)
		}
	}
	// What each case must show, beyond agreeing with LoadState.
	byID := map[string]RunHead{}
	for _, h := range heads {
		byID[h.ID] = h
	}
	// The snapshot of the live run says running at seq 8; the events
	// after it finish the run.
	if h := byID["b-live"]; h.State == nil || h.State.Status != core.RunCompleted || h.State.Seq != 15 {
		t.Errorf("live run listed as %+v", h.State)
	}
	if h := byID["f-fault"]; h.Err == nil || !strings.Contains(h.Err.Error(), "seq 3 is not after 5") || h.State == nil {
		t.Errorf("run with a fault listed with error %v, state %v", h.Err, h.State)
	}
	if h := byID["h-after"]; h.State == nil || h.State.Status != core.RunCompleted {
		t.Errorf("field after the steps read: %+v", h.State)
	}
	if h := byID["m-field"]; h.State == nil || h.State.Cleanups != 2 {
		t.Errorf("field after step_order not read: %+v", h.State)
	}
	if h := byID["k-empty"]; h.State != nil || !errors.Is(h.Err, ErrNoRun) {
		t.Errorf("empty run listed as %+v, %v", h.State, h.Err)
	}
	for _, id := range []string{"a-plain", "c-torn", "d-nostate", "e-noevents", "g-compact", "i-badstate", "l-copied"} {
		if h := byID[id]; h.Err != nil || h.State == nil || h.State.Status != core.RunCompleted || h.State.RunID != id {
			t.Errorf("%s listed as %+v, %v", id, h.State, h.Err)
		}
	}
	// Which snapshots are read by their head alone, the others whole.
	for id, fast := range map[string]bool{"a-plain": true, "b-live": true, "c-torn": true, "e-noevents": true, "f-fault": true, "l-copied": true, "m-field": true,
		"g-compact": true, "h-after": true, "i-badstate": true, "d-nostate": false, "j-nullsteps": false} {
		head := snapshotHead(fsys, filepath.Join(RunDir(repo, id), StateFile))
		if (head != nil) != fast {
			t.Errorf("%s: snapshot head %+v", id, head)
		}
		if id == "b-live" && (head == nil || head.Status != core.RunRunning || head.Seq != 8) {
			t.Errorf("the live run's snapshot is %+v", head)
		}
	}
	var order []string
	for _, h := range heads {
		order = append(order, h.ID)
	}
	// Newest first; a run that records no creation time last.
	want := "l-copied m-field j-nullsteps i-badstate h-after g-compact f-fault e-noevents d-nostate c-torn b-live a-plain k-empty"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("order\n%s\nwant\n%s", got, want)
	}
}

// TestListRunHeadsOnDisk reads the same record through the operating
// system's files as through memory.
func TestListRunHeadsOnDisk(t *testing.T) {
	fsys := afero.NewOsFs()
	repo := t.TempDir()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 3 {
		recordRun(t, fsys, repo, fmt.Sprintf("r%d", i), 400, t0.Add(time.Duration(i)*time.Minute), 0)
	}
	heads, err := ListRunHeads(fsys, repo)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range heads {
		st, _, err := LoadState(fsys, h.Dir, false, t0)
		if err != nil || h.Err != nil || !reflect.DeepEqual(h.State, headOf(st)) {
			t.Errorf("run %d %s: head %+v (%v), LoadState %+v (%v)", i, h.ID, h.State, h.Err, headOf(st), err)
		}
	}
	if len(heads) != 3 || heads[0].ID != "r2" || heads[2].ID != "r0" {
		t.Errorf("heads %+v", heads)
	}
}

// TestRunIDsNewestFirst: the ids a did-you-mean chooses from come
// newest first, as flow runs lists them.
func TestRunIDsNewestFirst(t *testing.T) {
	fsys := afero.NewMemMapFs()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, id := range []string{"b", "c", "a"} {
		recordRun(t, fsys, "/repo", id, 1, t0.Add(time.Duration(i)*time.Minute), 0)
	}
	ids, err := RunIDs(fsys, "/repo")
	if err != nil || strings.Join(ids, " ") != "a c b" {
		t.Errorf("RunIDs = %v, %v", ids, err)
	}
	if ids, err := RunIDs(fsys, "/none"); err != nil || len(ids) != 0 {
		t.Errorf("RunIDs of a repository without runs = %v, %v", ids, err)
	}
}
