package record

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/safefs"
	"github.com/flow-run/flow/runner/core"
)

func historyEntry(id string, status core.RunStatus, at time.Time) HistoryEntry {
	c, e := core.Time{Time: at}, core.Time{Time: at.Add(time.Minute)}
	return HistoryEntry{RunID: id, Workflow: "wf", Status: status, CreatedAt: &c, EndedAt: &e}
}

// TestHistory appends lines and reads them back: the last line of a run
// wins, and what cannot be read is skipped.
func TestHistory(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b := historyEntry("a", core.RunFailed, t0), historyEntry("b", core.RunCompleted, t0.Add(time.Hour))
	a2 := historyEntry("a", core.RunCompleted, t0)
	a2.Usage = &core.AgentUsage{TokensIn: 10, CostUSD: 0.5, Sessions: 1}
	ids := func(es []HistoryEntry) string {
		var s []string
		for _, e := range es {
			s = append(s, e.RunID+":"+string(e.Status))
		}
		return strings.Join(s, " ")
	}
	cases := []struct {
		name string
		// before is what the file holds before the appends.
		before  string
		appends [][]HistoryEntry
		want    string
	}{
		{"no history", "", nil, ""},
		{"one line", "", [][]HistoryEntry{{a}}, "a:failed"},
		{"two in one write", "", [][]HistoryEntry{{a, b}}, "a:failed b:completed"},
		{"a run that ended again", "", [][]HistoryEntry{{a}, {b}, {a2}}, "b:completed a:completed"},
		{"a torn last line is ended first", `{"run_id":"x","sta`, [][]HistoryEntry{{a}}, "a:failed"},
		{"a damaged line and an empty one", "not json\n\n{\"status\":\"completed\"}\n", [][]HistoryEntry{{b}}, "b:completed"},
		{"an overlong line", `{"run_id":"long","x":"` + strings.Repeat("x", maxHistoryLine) + "\"}\n", [][]HistoryEntry{{a}}, "a:failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			if c.before != "" {
				if err := afero.WriteFile(fsys, HistoryPath("/repo"), []byte(c.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, es := range c.appends {
				if err := AppendHistory(fsys, "/repo", es...); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ReadHistory(fsys, "/repo")
			if err != nil {
				t.Fatal(err)
			}
			if ids(got) != c.want {
				t.Errorf("history %q, want %q", ids(got), c.want)
			}
			if c.name == "a run that ended again" && !reflect.DeepEqual(got[1], a2) {
				t.Errorf("last line of a: %+v, want %+v", got[1], a2)
			}
		})
	}
}

// TestHistoryOnDisk appends from many writers at once through the
// safe file system, and refuses a history that is a link.
func TestHistoryOnDisk(t *testing.T) {
	repo := t.TempDir()
	rec := safefs.New(repo)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := AppendHistory(rec, repo, historyEntry(fmt.Sprintf("r%02d", i), core.RunCompleted, t0)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := ReadHistory(afero.NewOsFs(), repo)
	if err != nil || len(got) != 20 {
		t.Fatalf("read %d lines, %v", len(got), err)
	}
	// A history that a session replaced with a link is neither written
	// through nor read.
	outside := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(outside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(HistoryPath(repo)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, HistoryPath(repo)); err != nil {
		t.Fatal(err)
	}
	if err := AppendHistory(rec, repo, historyEntry("x", core.RunCompleted, t0)); err == nil {
		t.Error("appended through a link")
	}
	if b, _ := os.ReadFile(outside); len(b) != 0 {
		t.Errorf("the link's target was written: %q", b)
	}
	if _, err := ReadHistory(afero.NewOsFs(), repo); err == nil {
		t.Error("read through a link out of .agents")
	}
}
