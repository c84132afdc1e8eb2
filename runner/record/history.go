package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/runner/core"
)

// HistoryFile is the history of a repository's finished runs, in its
// .agents directory: one JSON line per run that ended, which outlives
// the run's directory when flow prune removes it.
const HistoryFile = "history.jsonl"

// HistoryPath returns the history file of repo.
func HistoryPath(repo string) string { return filepath.Join(repo, ".agents", HistoryFile) }

// HistoryEntry is a line of the history: a run as it ended.
type HistoryEntry struct {
	RunID    string         `json:"run_id"`
	Workflow string         `json:"workflow_name"`
	Status   core.RunStatus `json:"status"`
	ExitCode int            `json:"exit_code"`
	// CreatedAt is when the run was created; EndedAt when it last
	// changed (its end, for a run that ended).
	CreatedAt *core.Time `json:"created_at"`
	EndedAt   *core.Time `json:"ended_at"`
	// Usage is what its agents consumed, when they reported it;
	// Sessions counts every session it started.
	Usage    *core.AgentUsage `json:"usage,omitempty"`
	Sessions int              `json:"sessions,omitempty"`
	// WorkflowFile is the workflow file the run ran.
	WorkflowFile string `json:"workflow_file,omitempty"`
}

// HistoryOf returns the history line of the run whose state is st.
func HistoryOf(st *core.State) HistoryEntry {
	return HistoryEntry{RunID: st.RunID, Workflow: st.WorkflowName, Status: st.Status, ExitCode: st.ExitCode,
		CreatedAt: st.CreatedAt, EndedAt: st.UpdatedAt, Usage: st.Usage, Sessions: st.Sessions, WorkflowFile: st.WorkflowFile}
}

// maxHistoryLine bounds a line of the history that is read; a longer
// one (no line flow writes is) is skipped.
const maxHistoryLine = 64 << 10

// AppendHistory appends a line for each entry to the history of repo,
// through fsys, with one write. It does not sync the file: while a
// run's directory exists it is the truth, and its line only a copy that
// a crash of the machine may take; whatever removes a run's directory
// calls SyncHistory first, so that no run is ever left with neither.
// The file is opened for
// appending (O_APPEND), so that writers that append at once — runs
// that end together, flow prune — never overwrite each other's lines;
// on the operating system's files fsys is to open beneath the
// repository following no link (internal/safefs). A last line left
// without its newline (a writer that died) is ended first, so that the
// new lines stand on their own.
func AppendHistory(fsys afero.Fs, repo string, entries ...HistoryEntry) error {
	if len(entries) == 0 {
		return nil
	}
	path := HistoryPath(repo)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("encode history of run %s: %w", e.RunID, err)
		}
	}
	if err := fsys.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	data := buf.Bytes()
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			data = append([]byte{'\n'}, data...)
		}
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return nil
}

// SyncHistory makes every line appended to the history of repo so far
// durable, by whichever process appended it: a sync of the file writes
// all of its data. A missing history has nothing to sync.
func SyncHistory(fsys afero.Fs, repo string) error {
	path := HistoryPath(repo)
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

// ReadHistory returns the history of repo: one entry per run, the last
// line of each run (a run that ended again after a retry has a line for
// each end), in the order of those lines. A missing history is an
// empty one; lines that cannot be read (a writer that died half way, a
// hand edit) are skipped. The file is read as a regular file inside
// .agents, following no link out of it.
func ReadHistory(fsys afero.Fs, repo string) ([]HistoryEntry, error) {
	path := HistoryPath(repo)
	f, err := confine.Open(fsys, path, filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	defer f.Close()
	var out []HistoryEntry
	at := map[string]int{}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := readLine(r)
		if len(line) > 0 {
			var e HistoryEntry
			if json.Unmarshal(line, &e) == nil && e.RunID != "" {
				if i, ok := at[e.RunID]; ok {
					out[i].RunID = "" // superseded
				}
				at[e.RunID] = len(out)
				out = append(out, e)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read history %s: %w", path, err)
		}
	}
	kept := out[:0]
	for _, e := range out {
		if e.RunID != "" {
			kept = append(kept, e)
		}
	}
	return kept, nil
}

// readLine returns the next line of r without its newline, or nil for
// a line longer than maxHistoryLine (which is skipped).
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	long := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !long {
			line = append(line, chunk...)
			if len(line) > maxHistoryLine {
				line, long = nil, true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte{'\n'}), err
	}
}
