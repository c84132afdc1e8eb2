package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/flow-run/flow/internal/eventlog"
)

// The files of a run directory (DESIGN §6).
const (
	StateFile          = "run_state.json"
	EventsFile         = "events.jsonl"
	ControlFile        = "control.json"
	LoadedWorkflowFile = "workflow.json"
	SummaryFile        = "run-summary.md"
	LockFile           = "lock"
	ReportsDir         = "reports"
	InputsDir          = "manual_inputs"
	LogsDir            = "logs"
	PromptsDir         = "prompts"
)

// RunsDir returns the directory holding the runs of repo.
func RunsDir(repo string) string { return filepath.Join(repo, ".agents", "runs") }

// RunDir returns the directory of one run.
func RunDir(repo, runID string) string { return filepath.Join(RunsDir(repo), runID) }

// LoadState reads a run's state exactly: the run_state.json snapshot
// with every newer event of events.jsonl applied. A snapshot that cannot
// be read is rebuilt from the events.
//
// With repair set — a runner opening the run to write it — the snapshot
// is not trusted at all: every event is replayed, and a snapshot that
// is damaged, claims a seq beyond the log's last event, or disagrees
// with the replay at its seq (a hand edit, a bug) is kept aside as
// run_state.json.corrupt-<time>. Readers pass false and change nothing.
// It returns the state and whether the snapshot was set aside (or, for
// readers, found damaged).
//
// A log with a fault in it (a seq that does not increase: two writers)
// is read up to the fault: the state of the events before it is
// returned together with an error wrapping *eventlog.CorruptError, so
// that readers can still show it.
func LoadState(fsys afero.Fs, runDir string, repair bool, now time.Time) (*State, bool, error) {
	statePath := filepath.Join(runDir, StateFile)
	eventsPath := filepath.Join(runDir, EventsFile)
	snap, damaged, err := readSnapshot(fsys, statePath)
	if err != nil {
		return nil, false, err
	}
	after := int64(0)
	if snap != nil && !repair {
		after = snap.Seq
	}
	events, readErr := eventlog.Read(fsys, eventsPath, after)
	var corrupt *eventlog.CorruptError
	switch {
	case readErr == nil:
	case errors.As(readErr, &corrupt):
		// A fault in the log: the events before it still tell the run.
	case errors.Is(readErr, fs.ErrNotExist):
		if snap == nil {
			return nil, false, fmt.Errorf("%w: %s has no %s", ErrNoRun, runDir, EventsFile)
		}
		readErr = nil
	default:
		return nil, damaged, fmt.Errorf("read events: %w", readErr)
	}
	st := &State{}
	if snap != nil && !repair {
		st = snap
	}
	var atSnap []byte
	for _, e := range events {
		if err := Apply(st, e); err != nil {
			return nil, damaged, fmt.Errorf("replay %s: %w", eventsPath, err)
		}
		if repair && snap != nil && e.Seq == snap.Seq {
			atSnap = comparable(st)
		}
	}
	if st.RunID == "" {
		if readErr != nil {
			return nil, damaged, fmt.Errorf("read events: %w", readErr)
		}
		return nil, damaged, fmt.Errorf("%w: %s records no run", ErrNoRun, runDir)
	}
	if readErr != nil {
		return st, damaged, fmt.Errorf("read events of run %s: %w", st.RunID, readErr)
	}
	if repair && snap != nil && !damaged {
		if atSnap == nil || !bytes.Equal(atSnap, comparable(snap)) {
			damaged = true
		} else if snap.Runner != nil && st.Runner != nil && snap.Runner.PID == st.Runner.PID && snap.Runner.Host == st.Runner.Host {
			// The heartbeat lives only in the snapshot.
			st.Runner.HeartbeatAt = snap.Runner.HeartbeatAt
		}
	}
	if damaged && repair {
		if err := keepAside(fsys, statePath, now); err != nil {
			return nil, damaged, err
		}
	}
	return st, damaged, nil
}

// readSnapshot reads run_state.json: nil when there is none, and
// damaged when it is not a run's state.
func readSnapshot(fsys afero.Fs, path string) (st *State, damaged bool, err error) {
	b, err := afero.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read run state %s: %w", path, err)
	}
	s := decodeState(b)
	if s == nil || s.RunID == "" || s.Steps == nil {
		return nil, true, nil
	}
	return s, false, nil
}

// comparable encodes a state for comparison with a snapshot, without
// the heartbeat, which only the snapshot records.
func comparable(st *State) []byte {
	var hb *Time
	if st.Runner != nil {
		hb, st.Runner.HeartbeatAt = st.Runner.HeartbeatAt, nil
		defer func() { st.Runner.HeartbeatAt = hb }()
	}
	b, err := st.Indented()
	if err != nil {
		return nil
	}
	return b
}

// keepAside renames a damaged run_state.json out of the way.
func keepAside(fsys afero.Fs, statePath string, now time.Time) error {
	aside := statePath + ".corrupt-" + now.UTC().Format("20060102T150405.000000Z")
	if err := fsys.Rename(statePath, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keep damaged run state aside: %w", err)
	}
	return nil
}

// writeSnapshot replaces run_state.json atomically.
func writeSnapshot(fsys afero.Fs, runDir string, st *State) error {
	b, err := st.Indented()
	if err != nil {
		return fmt.Errorf("encode run state: %w", err)
	}
	b = append(b, '\n')
	if err := atomicfile.WriteFile(fsys, filepath.Join(runDir, StateFile), b, 0o644); err != nil {
		return fmt.Errorf("write run state: %w", err)
	}
	return nil
}

// RunRef is a run found in a repository.
type RunRef struct {
	ID    string
	Dir   string
	State *State
	// Err is why the run could not be read, or nil. With State set, the
	// run was read only up to a fault in its events.jsonl, which Err
	// describes.
	Err error
}

// RunIDs lists the ids of the runs of repo, newest first, from the
// head of each run's events.jsonl (see runHeads) rather than from the
// whole record: a run whose head cannot be read comes last.
func RunIDs(fsys afero.Fs, repo string) ([]string, error) {
	heads, err := runHeads(fsys, repo)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(heads))
	for i, h := range heads {
		ids[i] = h.id
	}
	return ids, nil
}

// runIDs lists the run directories in dir, the runs directory: every
// directory but the hidden ones (an import being extracted). A
// repository without runs has none.
func runIDs(fsys afero.Fs, dir string) ([]string, error) {
	entries, err := afero.ReadDir(fsys, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs in %s: %w", dir, err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// ListRuns returns the runs of repo, newest first (by creation time,
// then id). Runs that cannot be read are listed with Err set.
func ListRuns(fsys afero.Fs, repo string) ([]RunRef, error) {
	dir := RunsDir(repo)
	ids, err := runIDs(fsys, dir)
	if err != nil {
		return nil, err
	}
	runs := make([]RunRef, 0, len(ids))
	for _, id := range ids {
		rd := filepath.Join(dir, id)
		st, _, err := LoadState(fsys, rd, false, time.Time{})
		runs = append(runs, RunRef{ID: id, Dir: rd, State: st, Err: err})
	}
	slices.SortStableFunc(runs, func(a, b RunRef) int {
		ta, tb := created(a), created(b)
		if c := tb.Compare(ta); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return runs, nil
}

// runHead is what the head of a run's first event says: when the run
// was created, and of which workflow.
type runHead struct {
	id       string
	created  time.Time
	workflow string
}

var (
	headAt       = regexp.MustCompile(`"at":"([^"]+)"`)
	headWorkflow = regexp.MustCompile(`"workflow_name":"([^"\\]*)"`)
)

// runHeads lists the runs of repo, newest first, from the first bytes
// of each run's events.jsonl: a run's run_created event comes first and
// begins with its time and workflow. Reading a few kilobytes per run
// instead of every run's whole record keeps finding the newest run fast
// in a repository with hundreds of runs. A run whose head cannot be
// read sorts last.
func runHeads(fsys afero.Fs, repo string) ([]runHead, error) {
	dir := RunsDir(repo)
	ids, err := runIDs(fsys, dir)
	if err != nil {
		return nil, err
	}
	heads := make([]runHead, 0, len(ids))
	buf := make([]byte, 4<<10)
	for _, id := range ids {
		h := runHead{id: id}
		if f, err := fsys.Open(filepath.Join(dir, id, EventsFile)); err == nil {
			n, _ := io.ReadFull(f, buf)
			_ = f.Close()
			line, _, _ := bytes.Cut(buf[:n], []byte("\n"))
			if m := headAt.FindSubmatch(line); m != nil {
				h.created, _ = time.Parse(time.RFC3339Nano, string(m[1]))
			}
			if m := headWorkflow.FindSubmatch(line); m != nil {
				h.workflow = string(m[1])
			}
		}
		heads = append(heads, h)
	}
	slices.SortStableFunc(heads, func(a, b runHead) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	return heads, nil
}

func created(r RunRef) time.Time {
	if r.State == nil || r.State.CreatedAt == nil {
		return time.Time{}
	}
	return r.State.CreatedAt.Time
}

// FindRun returns the run with id, or the newest run when id is "";
// with workflow set, the newest run of that workflow.
func FindRun(fsys afero.Fs, repo, id, workflow string) (RunRef, error) {
	if id != "" {
		if err := CheckRunID(id); err != nil {
			return RunRef{}, err
		}
		rd := RunDir(repo, id)
		st, _, err := LoadState(fsys, rd, false, time.Time{})
		if err != nil && st == nil {
			return RunRef{}, fmt.Errorf("run %s: %w", id, err)
		}
		// A run whose log has a fault is found, with the state before
		// the fault and the fault in Err.
		return RunRef{ID: id, Dir: rd, State: st, Err: err}, nil
	}
	// The newest run is found from the head of each run's first event
	// (run_created: when, which workflow), and only that run is read.
	heads, err := runHeads(fsys, repo)
	if err != nil {
		return RunRef{}, err
	}
	for _, h := range heads {
		if workflow != "" && h.workflow != workflow {
			continue
		}
		rd := RunDir(repo, h.id)
		st, _, err := LoadState(fsys, rd, false, time.Time{})
		if err != nil || (workflow != "" && st.WorkflowName != workflow) {
			continue
		}
		return RunRef{ID: h.id, Dir: rd, State: st}, nil
	}
	if workflow != "" {
		return RunRef{}, fmt.Errorf("%w of workflow %s in %s", ErrNoRun, workflow, RunsDir(repo))
	}
	return RunRef{}, fmt.Errorf("%w in %s", ErrNoRun, RunsDir(repo))
}
