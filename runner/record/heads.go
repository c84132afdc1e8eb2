package record

import (
	"bufio"
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/runner/core"
)

// RunHead is a run as a list of runs shows it: its state without the
// steps.
type RunHead struct {
	ID  string
	Dir string
	// State is the run's exact state without its steps (StepOrder and
	// Steps are nil), or nil when the run cannot be read.
	State *core.State
	// Err is why the run could not be read, or nil. With State set, the
	// run was read only up to a fault in its events.jsonl, which Err
	// describes (as in RunRef).
	Err error
}

// ListRunHeads returns the runs of repo as ListRuns does — newest
// first (by creation time, then id), each as LoadState reads it, runs
// that cannot be read with Err set — but without their steps, and
// without decoding what it does not show.
//
// Of a run whose snapshot is as new as its log, it decodes only the
// snapshot's head, every field but the steps and their order, and
// checks the order of every line of events.jsonl without decoding
// them; LoadState would return the snapshot as it is. A run whose
// snapshot is missing, damaged or behind its log (a live runner's
// between two snapshots, a dead runner's) is read whole with
// LoadState, so a list says what status says of every run.
func ListRunHeads(fsys afero.Fs, repo string) ([]RunHead, error) {
	dir := RunsDir(repo)
	ids, err := runIDs(fsys, dir)
	if err != nil {
		return nil, err
	}
	runs := make([]RunHead, len(ids))
	// Reading a run is mostly system calls (open, read, close of two
	// files), so the runs are read by a few goroutines, one per CPU.
	workers := min(runtime.NumCPU(), maxHeadReaders, len(ids))
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) {
					return
				}
				rd := filepath.Join(dir, ids[i])
				st, err := readHead(fsys, rd)
				runs[i] = RunHead{ID: ids[i], Dir: rd, State: st, Err: err}
			}
		})
	}
	wg.Wait()
	slices.SortStableFunc(runs, func(a, b RunHead) int {
		if c := createdAt(b.State).Compare(createdAt(a.State)); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return runs, nil
}

func createdAt(st *core.State) time.Time {
	if st == nil || st.CreatedAt == nil {
		return time.Time{}
	}
	return st.CreatedAt.Time
}

// maxHeadReaders bounds the goroutines of ListRunHeads and
// ListRunEntries.
const maxHeadReaders = 8

// readHead returns the state of the run in runDir without its steps,
// as LoadState(fsys, runDir, false, …) returns it.
func readHead(fsys afero.Fs, runDir string) (*core.State, error) {
	st, _, err := readHeadFrom(fsys, runDir)
	return st, err
}

// readHeadFrom is readHead, and says whether it read the run whole
// (its snapshot was missing, damaged or behind its log) rather than
// from the head of its snapshot alone.
func readHeadFrom(fsys afero.Fs, runDir string) (_ *core.State, whole bool, _ error) {
	if st := snapshotHead(fsys, filepath.Join(runDir, StateFile)); st != nil {
		// Every line is checked for order; only events after the
		// snapshot's seq are decoded, and there are none unless the
		// snapshot is behind.
		events, err := eventlog.Read(fsys, filepath.Join(runDir, EventsFile), st.Seq)
		if (err == nil || errors.Is(err, fs.ErrNotExist)) && len(events) == 0 {
			return st, false, nil
		}
	}
	st, _, err := LoadState(fsys, runDir, false, time.Time{})
	if st != nil {
		head := *st
		head.StepOrder, head.Steps = nil, nil
		st = &head
	}
	return st, true, err
}

// snapshotHead returns the run_state.json at path without its steps
// (see decodeHead), or nil when there is none, or it does not name a
// run, or it is not a state's JSON, and the caller reads the run whole.
//
// It does not decode the steps: a snapshot is replaced atomically,
// never torn, so steps that are JSON but not a run's are a hand edit,
// which LoadState finds when the run is shown.
func snapshotHead(fsys afero.Fs, path string) *core.State {
	f, err := fsys.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st := decodeHead(bufio.NewReaderSize(f, 32<<10))
	if st == nil || st.RunID == "" {
		return nil
	}
	return st
}
