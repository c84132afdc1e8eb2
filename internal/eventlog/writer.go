package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/flow-run/flow/internal/runlock"
	"github.com/spf13/afero"
)

// ErrLocked is wrapped by the error of Open when another writer has the
// log open.
var ErrLocked = errors.New("another writer has the event log open")

// LockedError is returned by Open when another writer — another process,
// or another Log in this one — has the log open for appending. It wraps
// ErrLocked.
type LockedError struct {
	Path string
	// PID and Host name the other writer when the file system tells
	// (a writer marker does; a kernel lock does not). PID is 0 otherwise.
	PID  int
	Host string
}

// Error says which log is taken and, when known, by whom, as in "event
// log /r/events.jsonl is open for writing by another runner (pid 12 on
// host h)".
func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("event log %s is open for writing by another runner (pid %d on host %s)", e.Path, e.PID, e.Host)
	}
	return fmt.Sprintf("event log %s is open for writing by another runner", e.Path)
}

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

// markerSuffix names the directory beside the log that marks its writer
// on a file system without descriptor locks; holderFile, inside it,
// names the writer.
const (
	markerSuffix = ".writer"
	holderFile   = "holder.json"
)

// settleRetries and settleDelay bound how long Open waits for a marker
// whose holder file is missing or unparsable — its writer may be between
// making the directory and writing the file — before it takes the
// marker to be left over from a crash.
const (
	settleRetries = 5
	settleDelay   = 20 * time.Millisecond
)

// writer identifies the holder of a writer marker.
type writer struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// FS names the afero.Fs value the log was opened through (its type
	// and address), which tells two writers of one process apart.
	FS string `json:"fs"`
	// Token is random and identifies one Log.
	Token string `json:"token"`
}

// marker is a claimed writer marker: a directory made exclusively beside
// the log, holding a file that names its writer, and removed by release.
type marker struct {
	fs   afero.Fs
	dir  string
	self writer
}

// claimMarker marks this process as the writer of the log at path. A
// marker that already exists refuses the claim with a *LockedError while
// its writer may still have the log open:
//
//   - a writer in this process (same pid and host) has it open if it
//     opened it through the same afero.Fs value. A Log whose Close could
//     not remove its marker (a dead disk) thus blocks that Fs value
//     only, and a fresh Fs over the same storage — how tests model the
//     process that comes after a crash — takes the marker over;
//   - a writer in another process has it open while alive says that
//     process may be running (runlock.ProcessAlive: always, for another
//     host).
//
// A marker whose holder file stays missing or unparsable is left over
// from a crash between its two steps and is taken over too.
func claimMarker(fs afero.Fs, path string, alive func(runlock.Holder) bool) (*marker, error) {
	token, err := runlock.NewToken()
	if err != nil {
		return nil, fmt.Errorf("mark writer of event log %s: %w", path, err)
	}
	host, _ := os.Hostname()
	m := &marker{fs: fs, dir: path + markerSuffix,
		self: writer{PID: os.Getpid(), Host: host, FS: fsInstance(fs), Token: token}}
	data, err := json.Marshal(m.self)
	if err != nil {
		return nil, fmt.Errorf("mark writer of event log %s: %w", path, err)
	}
	for range 3 {
		// Making a directory is atomic where an exclusive create may not
		// be (afero's MemMapFs checks, then creates).
		err := fs.Mkdir(m.dir, 0o755)
		if err == nil {
			if err := m.writeHolder(data); err != nil {
				_ = fs.RemoveAll(m.dir)
				return nil, fmt.Errorf("mark writer of event log %s: %w", path, err)
			}
			return m, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("mark writer of event log %s: %w", path, err)
		}
		other, raw, err := m.readSettled()
		if err == nil && m.heldBy(other, alive) {
			return nil, &LockedError{Path: path, PID: other.PID, Host: other.Host}
		}
		// Stale. Remove it unless it changed since it was judged, so that
		// a marker just made by another opener is not removed.
		if again, _ := afero.ReadFile(fs, filepath.Join(m.dir, holderFile)); !bytes.Equal(again, raw) {
			continue
		}
		if err := fs.RemoveAll(m.dir); err != nil {
			return nil, fmt.Errorf("remove stale writer marker %s: %w", m.dir, err)
		}
	}
	return nil, &LockedError{Path: path}
}

// writeHolder writes the holder file of a marker directory just made.
func (m *marker) writeHolder(data []byte) error {
	f, err := m.fs.OpenFile(filepath.Join(m.dir, holderFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readSettled reads the holder file of an existing marker, rereading a
// missing or unparsable one a few times in case its writer is still
// making it. It returns the bytes read along with the holder.
func (m *marker) readSettled() (writer, []byte, error) {
	var (
		w   writer
		raw []byte
		err error
	)
	for i := range settleRetries {
		if i > 0 {
			time.Sleep(settleDelay)
		}
		raw, err = afero.ReadFile(m.fs, filepath.Join(m.dir, holderFile))
		if err != nil {
			continue
		}
		if err = json.Unmarshal(raw, &w); err == nil && (w.PID <= 0 || w.Token == "") {
			err = errors.New("no pid or token")
		}
		if err == nil {
			return w, raw, nil
		}
	}
	if errors.Is(err, os.ErrNotExist) {
		_, err = m.fs.Stat(m.dir)
		if errors.Is(err, os.ErrNotExist) {
			raw = nil // the whole marker went away: nothing to remove
		}
	}
	return writer{}, raw, fmt.Errorf("read writer marker %s: %w", m.dir, err)
}

// heldBy reports whether other, the writer named by an existing marker,
// may still have the log open. See claimMarker.
func (m *marker) heldBy(other writer, alive func(runlock.Holder) bool) bool {
	if other.PID == m.self.PID && other.Host == m.self.Host {
		return other.FS == m.self.FS
	}
	return alive(runlock.Holder{PID: other.PID, Host: other.Host})
}

// release removes the marker if it still names this writer. A marker
// that is gone or names another writer is left alone; the latter is an
// error, since another writer judged this one dead.
func (m *marker) release() error {
	raw, err := afero.ReadFile(m.fs, filepath.Join(m.dir, holderFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release writer marker %s: %w", m.dir, err)
	}
	var w writer
	if err := json.Unmarshal(raw, &w); err != nil || w.Token != m.self.Token {
		return fmt.Errorf("release writer marker %s: taken over by pid %d on host %s", m.dir, w.PID, w.Host)
	}
	if err := m.fs.RemoveAll(m.dir); err != nil {
		return fmt.Errorf("release writer marker %s: %w", m.dir, err)
	}
	return nil
}

// fsInstance names the afero.Fs value fs: its type and, for a pointer,
// its address, which is unique among live values (Go's collector does
// not move objects, and an open Log keeps its Fs alive).
func fsInstance(fs afero.Fs) string {
	if v := reflect.ValueOf(fs); v.Kind() == reflect.Pointer {
		return fmt.Sprintf("%T@%#x", fs, v.Pointer())
	}
	return fmt.Sprintf("%T", fs)
}
