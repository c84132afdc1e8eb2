package record

import (
	"bytes"
	"crypto/sha256"
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
	"github.com/flow-run/flow/runner/core"
)

// The files of a run directory (docs/architecture.md, "The record").
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
func LoadState(fsys afero.Fs, runDir string, repair bool, now time.Time) (*core.State, bool, error) {
	statePath := filepath.Join(runDir, StateFile)
	eventsPath := filepath.Join(runDir, EventsFile)
	// A runner replays every event and checks the snapshot against the
	// replay at the snapshot's seq (snapshotCheck): neither the
	// snapshot's state nor its encoding is held while it replays, so
	// that a large run's two states are never in memory at once.
	st, check, damaged, err := startReplay(fsys, statePath, repair)
	if err != nil {
		return nil, false, err
	}
	hadSnap, after := check.present, int64(0)
	if !repair && hadSnap {
		after = st.Seq
	}
	var applyErr error
	readErr := eventlog.Each(fsys, eventsPath, after, func(e core.Event) error {
		if applyErr = core.Apply(st, e); applyErr != nil {
			return applyErr
		}
		if repair && hadSnap && e.Seq == check.seq {
			check.at(st)
		}
		return nil
	})
	if applyErr != nil {
		return nil, damaged, fmt.Errorf("replay %s: %w", eventsPath, applyErr)
	}
	var corrupt *eventlog.CorruptError
	switch {
	case readErr == nil:
	case errors.As(readErr, &corrupt):
		// A fault in the log: the events before it still tell the run.
	case errors.Is(readErr, fs.ErrNotExist):
		if !hadSnap {
			return nil, false, fmt.Errorf("%w: %s has no %s", ErrNoRun, runDir, EventsFile)
		}
		readErr = nil
	default:
		return nil, damaged, fmt.Errorf("read events: %w", readErr)
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
	if repair && hadSnap && !damaged {
		agreed, err := check.agreed(fsys, statePath)
		if err != nil {
			return nil, false, err
		}
		if !agreed {
			damaged = true
		} else if check.runner && st.Runner != nil && check.pid == st.Runner.PID && check.host == st.Runner.Host {
			// The heartbeat lives only in the snapshot.
			st.Runner.HeartbeatAt = check.heartbeat
		}
	}
	if damaged && repair {
		if err := keepAside(fsys, statePath, now); err != nil {
			return nil, damaged, err
		}
	}
	return st, damaged, nil
}

// snapshotCheck is what a runner keeps of a snapshot to compare it with
// the replay of the log: its seq, its runner (whose heartbeat only the
// snapshot records), and a digest to compare.
//
// A snapshot as flow writes it is checked without being decoded: the
// SHA-256 of the file is compared with that of the replay at its seq,
// encoded as a snapshot with the snapshot's heartbeat (fast). Any other
// file — another layout, a hand edit, an earlier version's encoding —
// is then decoded, and its encoding without the heartbeat compared with
// the replay's, as it always was.
type snapshotCheck struct {
	present   bool // whether there was a snapshot
	seq       int64
	runner    bool
	pid       int
	host      string
	heartbeat *core.Time

	// fast: file is the digest of the snapshot's bytes, and the
	// snapshot is decoded only if the replay's encoding differs.
	fast bool
	file [sha256.Size]byte
	same bool // the replay at seq encodes to the file's bytes

	// sum is the digest of the decoded snapshot's encoding without the
	// heartbeat (encoded: it could be encoded); replayed that of the
	// replay at seq (reached: it was reached and encoded).
	sum      [sha256.Size]byte
	encoded  bool
	replayed [sha256.Size]byte
	reached  bool
}

// FastSnapshotCheck is the check of the snapshot at path without
// decoding its steps, or ok false when its head (see decodeHead)
// cannot be read.
func FastSnapshotCheck(fsys afero.Fs, path string) (c snapshotCheck, ok bool) {
	head := snapshotHead(fsys, path)
	if head == nil {
		return c, false
	}
	f, err := fsys.Open(path)
	if err != nil {
		return c, false
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return c, false
	}
	c = snapshotCheck{present: true, seq: head.Seq, fast: true}
	h.Sum(c.file[:0])
	c.setRunner(head.Runner)
	return c, true
}

func (c *snapshotCheck) setRunner(r *core.RunnerInfo) {
	if r != nil {
		c.runner, c.pid, c.host, c.heartbeat = true, r.PID, r.Host, r.HeartbeatAt
	}
}

// at records the replay st at the snapshot's seq.
func (c *snapshotCheck) at(st *core.State) {
	if c.fast {
		if sum, ok := snapshotDigest(st, c.heartbeat); ok && sum == c.file {
			c.same = true
			return
		}
	}
	c.replayed, c.reached = Digest(st)
}

// agreed reports whether the snapshot agrees with the replay at its
// seq; a fast check that found the bytes different decodes the
// snapshot at statePath now.
func (c *snapshotCheck) agreed(fsys afero.Fs, statePath string) (bool, error) {
	if c.same {
		return true, nil
	}
	if c.fast {
		snap, damaged, err := ReadSnapshot(fsys, statePath)
		if err != nil || damaged || snap == nil {
			return false, err
		}
		c.sum, c.encoded = Digest(snap)
	}
	return c.reached && c.encoded && c.replayed == c.sum, nil
}

// startReplay reads the snapshot at statePath and returns the state to
// apply the log to: for a reader the snapshot itself (the log's later
// events complete it); for a runner (repair) an empty state, the
// snapshot kept only as a snapshotCheck (a reader's check holds only
// whether there was one, and its seq).
func startReplay(fsys afero.Fs, statePath string, repair bool) (*core.State, snapshotCheck, bool, error) {
	if repair {
		if c, ok := FastSnapshotCheck(fsys, statePath); ok {
			return &core.State{}, c, false, nil
		}
	}
	snap, damaged, err := ReadSnapshot(fsys, statePath)
	switch {
	case err != nil:
		return nil, snapshotCheck{}, false, err
	case snap == nil:
		return &core.State{}, snapshotCheck{}, damaged, nil
	case !repair:
		return snap, snapshotCheck{present: true, seq: snap.Seq}, damaged, nil
	}
	return &core.State{}, newSnapshotCheck(snap), damaged, nil
}

// newSnapshotCheck is the check of a decoded snapshot.
func newSnapshotCheck(snap *core.State) snapshotCheck {
	c := snapshotCheck{present: true, seq: snap.Seq}
	c.sum, c.encoded = Digest(snap)
	c.setRunner(snap.Runner)
	return c
}

// readSnapshot reads run_state.json: nil when there is none, and
// damaged when it is not a run's state.
func ReadSnapshot(fsys afero.Fs, path string) (st *core.State, damaged bool, err error) {
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

// snapshotDigest is the SHA-256 of run_state.json as a runner writes
// it for st, with heartbeat as the runner's heartbeat. The encoding
// streams through the hash a step at a time.
func snapshotDigest(st *core.State, heartbeat *core.Time) (sum [sha256.Size]byte, ok bool) {
	if st.Runner != nil {
		hb := st.Runner.HeartbeatAt
		st.Runner.HeartbeatAt = heartbeat
		defer func() { st.Runner.HeartbeatAt = hb }()
	}
	h := sha256.New()
	if err := st.WriteIndented(h); err != nil {
		return sum, false
	}
	h.Write([]byte{'\n'})
	h.Sum(sum[:0])
	return sum, true
}

// digest is the SHA-256 of a state's snapshot without the heartbeat,
// which only the snapshot records: two states with the same digest
// write the same run_state.json but for the heartbeat. A state that
// cannot be encoded has none (ok is false), and matches nothing.
func Digest(st *core.State) (sum [sha256.Size]byte, ok bool) {
	return snapshotDigest(st, nil)
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
func WriteSnapshot(fsys afero.Fs, runDir string, st *core.State) error {
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
	State *core.State
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

// runHead is what the head of a run's first event says — when the run
// was created, and of which workflow — and when it was last active.
type runHead struct {
	id       string
	created  time.Time
	active   time.Time
	workflow string
}

var (
	headAt       = regexp.MustCompile(`"at":"([^"]+)"`)
	headWorkflow = regexp.MustCompile(`"workflow_name":"([^"\\]*)"`)
)

// runHeads lists the runs of repo, most recently active first, from
// the first bytes of each run's events.jsonl — a run's run_created
// event comes first and begins with its time and workflow — and the
// times its events.jsonl and run_state.json were last written (every
// change appends an event; a live runner rewrites the snapshot with
// its heartbeat): a run restarted yesterday that runs now comes before
// one created today that ended. Runs as active are ordered by creation,
// newest first. Reading a few kilobytes per run instead of every run's
// whole record keeps finding the run fast in a repository with hundreds
// of runs. A run whose head cannot be read sorts last.
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
		for _, name := range []string{EventsFile, StateFile} {
			if fi, err := fsys.Stat(filepath.Join(dir, id, name)); err == nil && fi.ModTime().After(h.active) {
				h.active = fi.ModTime()
			}
		}
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
		if c := b.active.Compare(a.active); c != 0 {
			return c
		}
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

// FindRun returns the run with id, or the most recently active run when
// id is "" (see runHeads); with workflow set, the most recently active
// run of that workflow.
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
