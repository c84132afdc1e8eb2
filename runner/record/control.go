package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/runner/core"
)

// Control is control.json: what humans want (DesiredState) and what the
// runner does (CurrentState), with the fields of the agent_state.json control file.
type Control struct {
	DesiredState core.ControlState `json:"desired_state"`
	CurrentState core.ControlState `json:"current_state"`
	Timestamp    string            `json:"timestamp"`
	SetBy        string            `json:"setBy"`
	Note         string            `json:"note"`
}

// validControl reports whether s is one of the four states.
func ValidControl(s core.ControlState) bool {
	switch s {
	case core.Continuous, core.Pause, core.RunOnce, core.RunCleanup:
		return true
	}
	return false
}

// maxControl caps control.json: a few short fields, never data.
const maxControl = 64 << 10

// ReadControl reads control.json. A missing file is (nil, nil); a file
// that is not valid JSON, or names an unknown state, is an error. It
// reads only a regular file in the run directory, at most 64 KiB of it,
// without blocking: a FIFO or a link to a device is an error too (and
// so, for the runner, a pause).
func ReadControl(fsys afero.Fs, runDir string) (*Control, error) {
	root, err := confine.NewRoot(fsys, runDir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ControlFile, err)
	}
	return ReadControlIn(root)
}

// readControlIn is ReadControl in a run directory resolved once.
func ReadControlIn(root *confine.Root) (*Control, error) {
	path := filepath.Join(root.Dir(), ControlFile)
	b, err := root.ReadFile(path, maxControl)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var c Control
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s is malformed: %w", path, err)
	}
	if !ValidControl(c.DesiredState) {
		return &c, fmt.Errorf("%s: unknown desired_state %q", path, c.DesiredState)
	}
	return &c, nil
}

// UpdateControl changes control.json under its lock: fn gets the
// current content (the zero Control when the file is missing or
// unreadable) and changes it. Humans and the runner both write the file;
// the lock makes each read-modify-write whole, so neither side's update
// is lost.
func UpdateControl(fsys afero.Fs, runDir string, now time.Time, fn func(c *Control)) error {
	return updateControl(fsys, runDir, now, atomicfile.WriteFile, fn)
}

// ReportControl is UpdateControl for a runner's report of what it does
// (current_state) as it starts or stops: the new file is synced but not
// its rename, so that a crash of the machine may undo the report, and
// leave the file as it was before, with the humans' desired_state as
// they made it durable. A runner that crashed reports nothing true
// anyway: liveness comes from the run's lock (docs/operating-runs.md).
func ReportControl(fsys afero.Fs, runDir string, now time.Time, fn func(c *Control)) error {
	return updateControl(fsys, runDir, now, atomicfile.Swap, fn)
}

// updateControl is UpdateControl, replacing the file with write.
func updateControl(fsys afero.Fs, runDir string, now time.Time, write func(afero.Fs, string, []byte, os.FileMode) error, fn func(c *Control)) error {
	path := filepath.Join(runDir, ControlFile)
	unlock, err := lockFile(fsys, path+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	c, _ := ReadControl(fsys, runDir)
	if c == nil {
		c = &Control{}
	}
	fn(c)
	c.Timestamp = core.Time{Time: now.UTC()}.String()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := write(fsys, path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SetDesired records what a human wants the runner to do: it writes
// desired_state (and who set it, and the note) and never current_state,
// which only the runner writes — except in a file that has none, where
// idle (no live runner holds the run) makes it pause, the truth of a
// run in which nothing runs.
func SetDesired(fsys afero.Fs, runDir string, desired core.ControlState, by, note string, now time.Time, idle bool) error {
	if !ValidControl(desired) {
		return fmt.Errorf("unknown control state %q", desired)
	}
	return UpdateControl(fsys, runDir, now, func(c *Control) {
		c.DesiredState = desired
		c.SetBy = by
		c.Note = note
		if c.CurrentState == "" && idle {
			c.CurrentState = core.Pause
		}
	})
}

// lockFile takes an exclusive lock on path. On a real file system it
// is an flock(2) on the file, which the kernel releases when the holder
// dies, so a crash never leaves it held. Elsewhere (in-memory file
// systems in tests) the lock is a directory's existence, and one older
// than a second is taken to be left over from a crash.
func lockFile(fsys afero.Fs, path string) (func(), error) {
	deadline := time.Now().Add(10 * time.Second)
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if fd, ok := f.(interface{ Fd() uintptr }); ok {
		for {
			err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				return func() { _ = syscall.Flock(int(fd.Fd()), syscall.LOCK_UN); f.Close() }, nil
			}
			if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
				f.Close()
				return nil, fmt.Errorf("lock %s: %w", path, err)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	f.Close()
	// Making a directory is atomic where creating a file exclusively may
	// not be (afero's MemMapFs checks, then creates).
	path += ".held"
	for {
		err := fsys.Mkdir(path, 0o755)
		if err == nil {
			return func() { _ = fsys.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if fi, err := fsys.Stat(path); err == nil && time.Since(fi.ModTime()) > time.Second {
			_ = fsys.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock %s: held for too long", path)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
