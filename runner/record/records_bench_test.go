package record

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// Benchmarks of reading the record: listing the runs of a repository
// (flow runs) and reading a large run (flow status). They read real
// files under b.TempDir(); run them with -benchmem:
//
//	go test -run '^$' -bench 'ListRun|LoadState|DecodeState' -benchmem ./runner

// copyRuns records one run of steps steps and copies its record n
// times into a new repository, each copy a minute newer; it returns the
// repository.
func copyRuns(b *testing.B, n, steps int) string {
	b.Helper()
	fsys := afero.NewOsFs()
	tpl, repo := b.TempDir(), b.TempDir()
	recordRun(b, fsys, tpl, "tpl", steps, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), 0)
	for i := range n {
		for _, f := range []string{StateFile, EventsFile} {
			data, err := afero.ReadFile(fsys, filepath.Join(RunDir(tpl, "tpl"), f))
			if err != nil {
				b.Fatal(err)
			}
			id := fmt.Sprintf("r%05d", i)
			data = []byte(strings.ReplaceAll(string(data), "2026-01-02T03:04:05.000000Z", time.Date(2026, 1, 2, 3, 4+i, 5, 0, time.UTC).Format("2006-01-02T15:04:05.000000Z")))
			if err := fsys.MkdirAll(RunDir(repo, id), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := afero.WriteFile(fsys, filepath.Join(RunDir(repo, id), f), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return repo
}

// BenchmarkListRunHeads is flow runs: 200 runs of 20 steps, 10,000 of
// 3 steps (a repository that nothing pruned), and 50 of 5,000 steps.
func BenchmarkListRunHeads(b *testing.B) {
	for _, c := range []struct{ runs, steps int }{{200, 20}, {10000, 3}, {50, 5000}} {
		b.Run(fmt.Sprintf("runs=%d/steps=%d", c.runs, c.steps), func(b *testing.B) {
			repo := copyRuns(b, c.runs, c.steps)
			fsys := afero.NewOsFs()
			for b.Loop() {
				heads, err := ListRunHeads(fsys, repo)
				if err != nil || len(heads) != c.runs || heads[0].Err != nil {
					b.Fatal(len(heads), err)
				}
			}
		})
	}
}

// BenchmarkListRunEntries is flow runs through the runs index: 10,000
// runs of 3 steps, the index written by a first call, then checked
// with one stat per run.
func BenchmarkListRunEntries(b *testing.B) {
	repo := copyRuns(b, 10000, 3)
	fsys := afero.NewOsFs()
	if _, err := ListRunEntries(fsys, repo, fsys); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		runs, err := ListRunEntries(fsys, repo, fsys)
		if err != nil || len(runs) != 10000 || runs[0].Err != nil {
			b.Fatal(len(runs), err)
		}
	}
}

// BenchmarkListRuns reads every run whole, as flow runs did.
func BenchmarkListRuns(b *testing.B) {
	repo := copyRuns(b, 200, 20)
	fsys := afero.NewOsFs()
	for b.Loop() {
		runs, err := ListRuns(fsys, repo)
		if err != nil || len(runs) != 200 {
			b.Fatal(len(runs), err)
		}
	}
}

// BenchmarkLoadState reads a run of 5,000 steps as flow status does
// (the snapshot and the events after it), and as a runner taking the
// run over does (every event replayed, the snapshot compared with the
// replay at its seq).
func BenchmarkLoadState(b *testing.B) {
	repo := copyRuns(b, 1, 5000)
	fsys := afero.NewOsFs()
	dir := RunDir(repo, "r00000")
	for _, c := range []struct {
		name   string
		repair bool
	}{{"reader", false}, {"runner", true}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				st, damaged, err := LoadState(fsys, dir, c.repair, time.Time{})
				if err != nil || damaged || len(st.Steps) != 5000 {
					b.Fatal(damaged, err)
				}
			}
		})
	}
}

// BenchmarkDecodeState decodes the snapshot of a run of 5,000 steps
// whole (decodeState) and its head alone (decodeHead).
func BenchmarkDecodeState(b *testing.B) {
	snap := snapshotOf(b, 5000)
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(len(snap)))
		for b.Loop() {
			if st := decodeState(snap); st == nil || len(st.Steps) != 5000 {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("head", func(b *testing.B) {
		b.SetBytes(int64(len(snap)))
		for b.Loop() {
			if st := decodeHead(bytes.NewReader(snap)); st == nil {
				b.Fatal("not decoded")
			}
		}
	})
}
