package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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
// snapshot's head, the fields before "steps" (run_state.json writes the
// steps last), and checks the order of every line of events.jsonl
// without decoding them; LoadState would return the snapshot as it is.
// A run whose snapshot is missing, damaged, not in the indented form
// flow writes, or behind its log (a live runner's between two
// snapshots, a dead runner's) is read whole with LoadState, so a list
// says what status says of every run.
func ListRunHeads(fsys afero.Fs, repo string) ([]RunHead, error) {
	dir := RunsDir(repo)
	ids, err := runIDs(fsys, dir)
	if err != nil {
		return nil, err
	}
	runs := make([]RunHead, len(ids))
	// Reading a run is mostly system calls (open, read, close of two
	// files), so the runs are read by a few goroutines, one per CPU.
	workers := min(runtime.GOMAXPROCS(0), maxHeadReaders, len(ids))
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range workers {
		wg.Go(func() {
			var r headReader
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) {
					return
				}
				rd := filepath.Join(dir, ids[i])
				st, err := r.read(fsys, rd)
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

// maxHeadReaders bounds the goroutines of ListRunHeads.
const maxHeadReaders = 8

// headReader reads the heads of runs, reusing one buffer.
type headReader struct {
	buf []byte
}

// read returns the state of the run in runDir without its steps, as
// LoadState(fsys, runDir, false, …) returns it.
func (r *headReader) read(fsys afero.Fs, runDir string) (*core.State, error) {
	if st := r.snapshotHead(fsys, filepath.Join(runDir, StateFile)); st != nil {
		// Every line is checked for order; only events after the
		// snapshot's seq are decoded, and there are none unless the
		// snapshot is behind.
		events, err := eventlog.Read(fsys, filepath.Join(runDir, EventsFile), st.Seq)
		if (err == nil || errors.Is(err, fs.ErrNotExist)) && len(events) == 0 {
			return st, nil
		}
	}
	st, _, err := LoadState(fsys, runDir, false, time.Time{})
	if st != nil {
		head := *st
		head.StepOrder, head.Steps = nil, nil
		st = &head
	}
	return st, err
}

// stepsKey begins the last field of run_state.json as State.Indented
// writes it, and as every earlier version of flow wrote it: a key at the
// top level, indented by two spaces. A JSON string holds no raw newline,
// so the bytes occur nowhere else in such a file.
const stepsKey = "\n  \"steps\": "

// headTail is how much of the end of run_state.json snapshotHead reads
// to check that "steps" is its last field.
const headTail = 4 << 10

// snapshotHead decodes the fields of the run_state.json at path that
// come before its steps, and returns them when the file is a snapshot as
// flow writes it: those fields decode, name a run, and are followed by a
// steps object that ends the file. Otherwise — no file, a damaged one,
// another layout — it returns nil, and the caller reads the run whole.
//
// It does not decode the steps: a snapshot is replaced atomically, never
// torn, so a damaged steps object is a hand edit, which LoadState finds
// when the run is shown.
func (r *headReader) snapshotHead(fsys afero.Fs, path string) *core.State {
	f, err := fsys.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	size := fi.Size()
	if r.buf == nil {
		r.buf = make([]byte, 0, 32<<10)
	}
	// The file is read in chunks up to the steps key. A snapshot is
	// never written in place (it is replaced by a rename), so the size
	// read before holds for the file opened.
	buf := r.buf[:0]
	at := -1
	for at < 0 {
		if int64(len(buf)) >= size {
			r.buf = buf
			return nil // no steps field in flow's layout
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		from := max(0, len(buf)-len(stepsKey))
		chunk := buf[len(buf):min(int64(cap(buf)), size)]
		n, err := io.ReadFull(f, chunk)
		buf = buf[:len(buf)+n]
		if err != nil {
			r.buf = buf
			return nil
		}
		// The key must be followed by at least one byte, the value's.
		if i := bytes.Index(buf[from:], []byte(stepsKey)); i >= 0 && from+i+len(stepsKey) < len(buf) {
			at = from + i
		}
	}
	r.buf = buf
	stepsAt := at + len(stepsKey)
	if buf[stepsAt] != '{' {
		return nil // "steps": null, or not an object
	}
	// The tail of the file, from the last headTail bytes (at most) but
	// after the steps' opening brace, is what stepsLast checks: read
	// already when the file was read whole.
	tailAt := max(int64(stepsAt+1), size-headTail)
	var tail []byte
	if int64(len(buf)) == size {
		tail = buf[min(tailAt, size):]
	} else {
		tail = make([]byte, size-tailAt)
		if n, _ := f.ReadAt(tail, tailAt); n < len(tail) {
			return nil
		}
	}
	if !stepsLast(tail) {
		return nil
	}
	// The head, closed where the steps begin (in place of the comma
	// after the field before them), must be a whole object: the key was
	// at the top level.
	if at == 0 || buf[at-1] != ',' {
		return nil
	}
	buf[at-1] = '}'
	var st core.State
	if json.Unmarshal(withoutStepOrder(buf[:at]), &st) != nil || st.RunID == "" {
		return nil
	}
	st.StepOrder, st.Steps = nil, nil
	return &st
}

// stepOrderKey begins the field of a snapshot that lists its steps.
const stepOrderKey = "\n  \"step_order\": "

// withoutStepOrder returns head, the fields of a snapshot before its
// steps, with the step_order field cut out in place when another field
// follows it or the comma before it can close the head: a list of
// thousands of step ids is not worth decoding for the head.
func withoutStepOrder(head []byte) []byte {
	i := bytes.Index(head, []byte(stepOrderKey))
	if i < 0 {
		return head
	}
	j := bytes.Index(head[i+len(stepOrderKey):], []byte("\n  \""))
	if j < 0 {
		// The last field: the comma before it closes the head.
		if i == 0 || head[i-1] != ',' {
			return head
		}
		head[i-1] = '}'
		return head[:i]
	}
	j += i + len(stepOrderKey)
	// head[i:j] is the field's line, its value and its comma: the
	// comma before it stays for the field after it.
	n := copy(head[i:], head[j:])
	return head[:i+n]
}

// stepsLast reports whether tail, the end of a snapshot after the
// opening brace of its steps, ends the steps and the state: it ends in
// their closing braces and starts no other field at the top level.
func stepsLast(tail []byte) bool {
	if len(tail) == 0 || bytes.Contains(tail, []byte("\n  \"")) {
		return false
	}
	t := bytes.TrimRight(tail, " \t\r\n")
	t, ok := bytes.CutSuffix(t, []byte("}"))
	if !ok {
		return false
	}
	return bytes.HasSuffix(bytes.TrimRight(t, " \t\r\n"), []byte("}"))
}
