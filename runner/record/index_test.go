package record

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
)

// wantEntries is what ListRunEntries must return: what ListRunHeads
// says of every run, in its order.
func wantEntries(t *testing.T, fsys afero.Fs, repo string) []RunEntry {
	t.Helper()
	heads, err := ListRunHeads(fsys, repo)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]RunEntry, len(heads))
	for i, h := range heads {
		out[i] = entryOf(h)
	}
	return out
}

// checkEntries lists the runs of repo through the index and compares
// them with ListRunHeads.
func checkEntries(t *testing.T, fsys afero.Fs, repo, when string) []RunEntry {
	t.Helper()
	got, err := ListRunEntries(fsys, repo, fsys)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	want := wantEntries(t, fsys, repo)
	if len(got) != len(want) {
		t.Fatalf("%s: %d runs listed, want %d", when, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if fmt.Sprint(g.Err) != fmt.Sprint(w.Err) {
			t.Errorf("%s: %s: error %v, want %v", when, g.ID, g.Err, w.Err)
		}
		g.Err, w.Err = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: run %d\n%+v\nwant\n%+v", when, i, g, w)
		}
	}
	return got
}

// indexed returns the ids the runs index of repo holds.
func indexed(t *testing.T, fsys afero.Fs, repo string) []string {
	t.Helper()
	var ids []string
	for id := range readIndex(fsys, filepath.Join(RunsDir(repo), IndexFile)) {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TestListRunEntriesIsListRunHeads: through the index or not, the list
// says of every run what ListRunHeads says, whatever state its record
// is in; only runs read from a snapshot as new as their log, which no
// runner holds, are indexed.
func TestListRunEntriesIsListRunHeads(t *testing.T) {
	fsys := afero.NewMemMapFs()
	repo := "/repo"
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, id := range []string{"a-plain", "b-behind", "c-locked", "d-temporal", "e-nostate", "f-fault"} {
		keep := 0
		if id == "b-behind" {
			keep = 4
		}
		recordRun(t, fsys, repo, id, 2, t0.Add(time.Duration(i)*time.Minute), keep)
	}
	dir := func(id string) string { return RunDir(repo, id) }
	write := func(path, data string) {
		t.Helper()
		if err := afero.WriteFile(fsys, path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir("c-locked"), LockFile), `{"pid": 1, "host": "h", "token": "t"}`)
	write(filepath.Join(dir("d-temporal"), TemporalLaunchFile), `{}`)
	if err := fsys.Remove(filepath.Join(dir("e-nostate"), StateFile)); err != nil {
		t.Fatal(err)
	}
	b, err := afero.ReadFile(fsys, filepath.Join(dir("f-fault"), EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	write(filepath.Join(dir("f-fault"), EventsFile), strings.Join(append(lines[:3:3], append([]string{lines[1]}, lines[3:]...)...), ""))
	// Not runs: a file, and a hidden directory (an import).
	write(filepath.Join(RunsDir(repo), "notes.txt"), "x")
	if err := fsys.MkdirAll(filepath.Join(RunsDir(repo), ".importing"), 0o755); err != nil {
		t.Fatal(err)
	}

	first := checkEntries(t, fsys, repo, "without an index")
	if got := strings.Join(indexed(t, fsys, repo), " "); got != "a-plain" {
		t.Errorf("indexed %q, want only a-plain", got)
	}
	second := checkEntries(t, fsys, repo, "with the index")
	if !reflect.DeepEqual(first, second) {
		t.Errorf("the index changed the list")
	}
	fi, err := fsys.Stat(filepath.Join(RunsDir(repo), IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, fsys, repo, "again")
	if again, err := fsys.Stat(filepath.Join(RunsDir(repo), IndexFile)); err != nil || !again.ModTime().Equal(fi.ModTime()) {
		t.Errorf("the index was written again though nothing changed")
	}
	// Without a file system to write it through, the index is only read.
	repo2 := "/repo2"
	recordRun(t, fsys, repo2, "r", 1, t0, 0)
	if _, err := ListRunEntries(fsys, repo2, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(filepath.Join(RunsDir(repo2), IndexFile)); err == nil {
		t.Error("index written without a file system to write it")
	}
	if runs, err := ListRunEntries(fsys, "/none", fsys); err != nil || len(runs) != 0 {
		t.Errorf("a repository without runs: %v, %v", runs, err)
	}
}

// TestRunsIndexCannotGoStale changes indexed runs in every way their
// writers change them and checks, after each change, that the list
// says what ListRunHeads says.
func TestRunsIndexCannotGoStale(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	appendEvents := func(t *testing.T, fsys afero.Fs, dir string, n int) {
		t.Helper()
		log, err := eventlog.Open(fsys, filepath.Join(dir, EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, err := log.Append(core.NewEvent(t0.Add(time.Hour+time.Duration(i)*time.Second), core.EvRunnerStarted, keytest.K(""), core.RunnerStarted{PID: 99, Host: "h"})); err != nil {
				t.Fatal(err)
			}
		}
		if err := log.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		change func(t *testing.T, fsys afero.Fs, dir string)
		// indexed says whether the run is in the index after the change.
		indexed bool
		// memoryOnly: on disk, a file rewritten in place within the
		// same tick of the kernel's clock may keep its time, and a hand
		// edit that keeps the size then goes unseen.
		memoryOnly bool
		// same: the list does not change (a snapshot rebuilt from the
		// log says what the snapshot said).
		same bool
	}{
		{"a runner takes the run and dies before its first snapshot", func(t *testing.T, fsys afero.Fs, dir string) {
			if err := afero.WriteFile(fsys, filepath.Join(dir, LockFile), []byte(`{"pid": 1, "host": "h", "token": "t"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := TouchState(fsys, dir, t0); err != nil {
				t.Fatal(err)
			}
			appendEvents(t, fsys, dir, 2)
		}, false, false, false},
		{"a runner writes a snapshot and releases the run", func(t *testing.T, fsys afero.Fs, dir string) {
			if err := TouchState(fsys, dir, t0); err != nil {
				t.Fatal(err)
			}
			appendEvents(t, fsys, dir, 1)
			st, _, err := LoadState(fsys, dir, false, t0)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteSnapshot(fsys, dir, st); err != nil {
				t.Fatal(err)
			}
		}, true, false, false},
		{"the snapshot is replaced by one of the same size", func(t *testing.T, fsys afero.Fs, dir string) {
			b, err := afero.ReadFile(fsys, filepath.Join(dir, StateFile))
			if err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.Replace(string(b), `"status": "completed"`, `"status": "abandoned"`, 1))
			if err := afero.WriteFile(fsys, filepath.Join(dir, StateFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, true, true, false},
		{"the snapshot is set aside as damaged", func(t *testing.T, fsys afero.Fs, dir string) {
			if err := keepAside(fsys, filepath.Join(dir, StateFile), t0); err != nil {
				t.Fatal(err)
			}
		}, false, false, true},
		{"the run is removed", func(t *testing.T, fsys afero.Fs, dir string) {
			if err := fsys.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}, false, false, false},
		{"a Temporal worker adopts the run", func(t *testing.T, fsys afero.Fs, dir string) {
			if err := afero.WriteFile(fsys, filepath.Join(dir, TemporalLaunchFile), []byte(`{}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := TouchState(fsys, dir, t0); err != nil {
				t.Fatal(err)
			}
			appendEvents(t, fsys, dir, 1)
		}, false, false, false},
	}
	for _, fsName := range []string{"memory", "disk"} {
		for _, c := range cases {
			if c.memoryOnly && fsName == "disk" {
				continue
			}
			t.Run(fsName+"/"+c.name, func(t *testing.T) {
				fsys, repo := afero.Fs(afero.NewMemMapFs()), "/repo"
				if fsName == "disk" {
					fsys, repo = afero.NewOsFs(), t.TempDir()
				}
				recordRun(t, fsys, repo, "r1", 2, t0, 0)
				recordRun(t, fsys, repo, "r2", 2, t0.Add(time.Minute), 0)
				before := checkEntries(t, fsys, repo, "before")
				if got := indexed(t, fsys, repo); len(got) != 2 {
					t.Fatalf("indexed %v", got)
				}
				c.change(t, fsys, RunDir(repo, "r1"))
				after := checkEntries(t, fsys, repo, "after")
				if !c.same && reflect.DeepEqual(before, after) {
					t.Errorf("the change is not seen: %+v", after)
				}
				checkEntries(t, fsys, repo, "after, through the index")
				want := []string{"r2"}
				if c.indexed {
					want = []string{"r1", "r2"}
				}
				if got := indexed(t, fsys, repo); !reflect.DeepEqual(got, want) {
					t.Errorf("indexed %v, want %v", got, want)
				}
			})
		}
	}
}

// TestRunsIndexFile reads back what it writes, and ignores what it
// cannot read: another version's index, a torn or damaged line.
func TestRunsIndexFile(t *testing.T) {
	fsys := afero.NewMemMapFs()
	entries := []*indexEntry{
		{RunEntry: RunEntry{ID: "a", Workflow: "wf", Status: core.RunCompleted, CreatedAt: "2026-01-02T03:04:05.123456Z", UpdatedAt: "2026-01-02T04:04:05.123456Z",
			Usage: &core.AgentUsage{TokensIn: 1, TokensOut: 2, TokensCached: 3, CostUSD: 0.1 + 0.2, CostEstimated: true, Turns: 4, Sessions: 5}}, size: 10, mtime: 20},
		{RunEntry: RunEntry{ID: "b", Workflow: "wf 2", Status: core.RunFailed, ExitCode: 1}, size: 1, mtime: -5},
	}
	path := "/runs/" + IndexFile
	if err := writeIndex(fsys, path, entries); err != nil {
		t.Fatal(err)
	}
	got := readIndex(fsys, path)
	if len(got) != 2 {
		t.Fatalf("read %d entries", len(got))
	}
	for _, e := range entries {
		g := got[e.ID]
		if g == nil || !reflect.DeepEqual(*g, *e) {
			t.Errorf("entry %s read as %+v, want %+v", e.ID, g, e)
		}
	}
	b, err := afero.ReadFile(fsys, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, data string
		want       int
	}{
		{"another version", strings.Replace(string(b), "index 1", "index 2", 1), 0},
		{"a torn last line", string(b[:len(b)-3]), 1},
		{"a damaged line", strings.Replace(string(b), "\t20\t", "\tx\t", 1), 1},
		{"a line with a field too many", strings.Replace(string(b), "\t-\n", "\t-\tx\n", 1), 1},
		{"bad usage", strings.Replace(string(b), ",4,5", ",4", 1), 1},
		{"empty", "", 0},
	} {
		if err := afero.WriteFile(fsys, path, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := readIndex(fsys, path); len(got) != c.want {
			t.Errorf("%s: %d entries read, want %d", c.name, len(got), c.want)
		}
	}
	if indexable(RunEntry{ID: "x", Workflow: "a\tb"}) {
		t.Error("a workflow name with a tab is indexable")
	}
}

// TestTouchState changes run_state.json's time, even when asked to set
// the time it has, and does nothing to a run without one.
func TestTouchState(t *testing.T) {
	fsys := afero.NewMemMapFs()
	dir := RunDir("/repo", "r")
	if err := TouchState(fsys, dir, time.Now()); err != nil {
		t.Errorf("a run without run_state.json: %v", err)
	}
	if err := afero.WriteFile(fsys, filepath.Join(dir, StateFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := func() time.Time {
		t.Helper()
		fi, err := fsys.Stat(filepath.Join(dir, StateFile))
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	prev := mtime()
	for _, now := range []time.Time{prev, prev.Add(-time.Hour), prev.Add(time.Hour)} {
		if err := TouchState(fsys, dir, now); err != nil {
			t.Fatal(err)
		}
		if after := mtime(); after.Equal(prev) {
			t.Errorf("touched at %v: time unchanged", now)
		} else {
			prev = after
		}
	}
}

// TestParseTime reads back the times of a list of runs.
func TestParseTime(t *testing.T) {
	want := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	if got, err := ParseTime(timeText(&core.Time{Time: want})); err != nil || !got.Equal(want) {
		t.Errorf("ParseTime = %v, %v; want %v", got, err, want)
	}
	if got, err := ParseTime(""); err != nil || !got.IsZero() {
		t.Errorf("ParseTime(\"\") = %v, %v", got, err)
	}
	if _, err := ParseTime("yesterday"); err == nil {
		t.Error("ParseTime(yesterday): no error")
	}
}

// TestPermute sorts in place by a permutation of every shape.
func TestPermute(t *testing.T) {
	for _, order := range [][]int{{}, {0}, {1, 0}, {2, 0, 1}, {0, 1, 2, 3}, {3, 2, 1, 0}, {1, 2, 3, 0, 5, 4}} {
		runs := make([]RunEntry, len(order))
		for i := range runs {
			runs[i].ID = fmt.Sprint(i)
		}
		want := make([]string, len(order))
		for k, i := range order {
			want[k] = fmt.Sprint(i)
		}
		permute(runs, slices.Clone(order))
		var got []string
		for _, r := range runs {
			got = append(got, r.ID)
		}
		if !slices.Equal(got, want) && len(order) > 0 {
			t.Errorf("permute by %v: %v, want %v", order, got, want)
		}
	}
}
