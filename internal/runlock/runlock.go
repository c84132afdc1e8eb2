package runlock

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/spf13/afero"
)

// Holder identifies the runner that holds a lock.
type Holder struct {
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	StartedAt time.Time `json:"started_at"`
	// Token is random and identifies one acquisition.
	Token string `json:"token"`
}

// HeldError is returned by Acquire when a live runner holds the lock.
type HeldError struct{ Holder Holder }

// Error describes the holder, as in "run is held by pid 123 on host h
// since 2025-01-15T14:30:00Z".
func (e *HeldError) Error() string {
	return fmt.Sprintf("run is held by pid %d on host %s since %s",
		e.Holder.PID, e.Holder.Host, e.Holder.StartedAt.UTC().Format(time.RFC3339))
}

// ErrNotHeld is wrapped by the errors of Release and Verify when the lock
// file no longer holds the lock's token: it was removed or taken over.
var ErrNotHeld = errors.New("lock is no longer held")

// garbageRetries and garbageDelay bound how long Acquire waits for an
// unparsable lock file to become valid before it takes it over.
const (
	garbageRetries = 5
	garbageDelay   = 20 * time.Millisecond
)

// Lock is an acquired run lock.
type Lock struct {
	fs     afero.Fs
	path   string
	holder Holder
}

// Acquire takes the lock at path for h. If h.Token is empty a random one
// is set. If the file exists and alive reports its holder alive, Acquire
// returns a *HeldError; if the holder is dead or the file is garbage, the
// lock is taken over.
func Acquire(fs afero.Fs, path string, h Holder, alive func(Holder) bool) (*Lock, error) {
	if h.Token == "" {
		tok, err := NewToken()
		if err != nil {
			return nil, fmt.Errorf("acquire lock %s: %w", path, err)
		}
		h.Token = tok
	}
	data, err := encode(h)
	if err != nil {
		return nil, fmt.Errorf("acquire lock %s: %w", path, err)
	}
	if err := fs.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("acquire lock %s: create directory: %w", path, err)
	}
	l := &Lock{fs: fs, path: path, holder: h}

	created, err := createExclusive(fs, path, data)
	if err != nil {
		return nil, fmt.Errorf("acquire lock %s: %w", path, err)
	}
	if created {
		return l, nil
	}

	current, err := readSettled(fs, path)
	if err == nil && alive(current) {
		return nil, &HeldError{Holder: current}
	}
	if err := atomicfile.WriteFile(fs, path, data, 0o644); err != nil {
		return nil, fmt.Errorf("take over lock %s: %w", path, err)
	}
	after, err := Read(fs, path)
	if err != nil {
		return nil, fmt.Errorf("take over lock %s: read back: %w", path, err)
	}
	if after.Token != h.Token {
		return nil, &HeldError{Holder: after}
	}
	return l, nil
}

// encode returns the content of a lock file naming h.
func encode(h Holder) ([]byte, error) {
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// createExclusive creates path with data unless it exists. It reports
// whether it created the file.
func createExclusive(fs afero.Fs, path string, data []byte) (bool, error) {
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// No sync: the lock speaks of live processes, and after a crash of
	// the machine every holder is dead anyway.
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fs.Remove(path)
		return false, err
	}
	return true, nil
}

// readSettled reads the lock file, rereading an unparsable one a few
// times in case its creator has not written it yet.
func readSettled(fs afero.Fs, path string) (Holder, error) {
	var (
		h   Holder
		err error
	)
	for i := 0; i < garbageRetries; i++ {
		h, err = Read(fs, path)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return h, err
		}
		time.Sleep(garbageDelay)
	}
	return h, err
}

// Holder returns the holder this lock was acquired for.
func (l *Lock) Holder() Holder { return l.holder }

// Verify checks that the lock file still holds this lock's token.
func (l *Lock) Verify() error {
	h, err := Read(l.fs, l.path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("verify lock %s: %w: file removed", l.path, ErrNotHeld)
	}
	if err != nil {
		return fmt.Errorf("verify lock %s: %w", l.path, err)
	}
	if h.Token != l.holder.Token {
		return fmt.Errorf("verify lock %s: %w: %w", l.path, ErrNotHeld, &HeldError{Holder: h})
	}
	return nil
}

// Restore writes the lock file again if it was removed while this lock
// was held (by hand, or by a runner that was refused after it found the
// file missing and released its own), so that readers and takeover
// checks see the live holder again. A file that holds this lock's token
// is left alone. A file that names another holder is left alone too,
// and the error wraps ErrNotHeld and that holder's *HeldError; an
// unreadable one is an error and is not replaced either.
func (l *Lock) Restore() error {
	err := l.Verify()
	if err == nil {
		return nil
	}
	if _, rerr := l.fs.Stat(l.path); !errors.Is(rerr, os.ErrNotExist) {
		return fmt.Errorf("restore: %w", err)
	}
	data, err := encode(l.holder)
	if err != nil {
		return fmt.Errorf("restore lock %s: %w", l.path, err)
	}
	if _, err := createExclusive(l.fs, l.path, data); err != nil {
		return fmt.Errorf("restore lock %s: %w", l.path, err)
	}
	// Another runner may have created the file first.
	if err := l.Verify(); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

// Release removes the lock file if it still holds this lock's token. If
// it does not, the file is left alone and the error wraps ErrNotHeld.
func (l *Lock) Release() error {
	if err := l.Verify(); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if err := l.fs.Remove(l.path); err != nil {
		return fmt.Errorf("release lock %s: %w", l.path, err)
	}
	return nil
}

// Read returns the holder named by the lock file at path. A missing file
// is an error wrapping os.ErrNotExist.
func Read(fs afero.Fs, path string) (Holder, error) {
	data, err := afero.ReadFile(fs, path)
	if err != nil {
		return Holder{}, fmt.Errorf("read lock: %w", err)
	}
	var h Holder
	if err := json.Unmarshal(data, &h); err != nil {
		return Holder{}, fmt.Errorf("read lock %s: %w", path, err)
	}
	if h.Token == "" || h.PID <= 0 {
		return Holder{}, fmt.Errorf("read lock %s: no pid or token", path)
	}
	return h, nil
}

// NewToken returns a random token for a Holder.
func NewToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate lock token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
