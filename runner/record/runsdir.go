package record

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/afero"
)

// runsDir is the runs directory of a repository, opened to list its
// runs and to look at each one's run_state.json.
type runsDir struct {
	fsys afero.Fs
	path string
	f    afero.File
	// rc is the directory's descriptor on the operating system's file
	// system (see statState), or nil.
	rc syscall.RawConn
}

// openRunsDir opens the runs directory at path; a missing one is nil
// with no error.
func openRunsDir(fsys afero.Fs, path string) (*runsDir, error) {
	f, err := fsys.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs in %s: %w", path, err)
	}
	d := &runsDir{fsys: fsys, path: path, f: f}
	if c, ok := f.(syscall.Conn); ok {
		if rc, err := c.SyscallConn(); err == nil {
			d.rc = rc
		}
	}
	return d, nil
}

// names lists the names in the directory that may be runs: every name
// but the hidden ones. It does not ask what each name is (a stat per
// name): ListRunEntries stats each run's run_state.json anyway, and
// looks at the name itself only when that fails.
func (d *runsDir) names() ([]string, error) {
	names, err := d.f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list runs in %s: %w", d.path, err)
	}
	return slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, ".") }), nil
}

// stater returns a function that returns the size and modification
// time (Unix nanoseconds) of the run_state.json of a run, for one
// goroutine: on the operating system's file system it asks relative to
// the directory's descriptor (statAt), which walks two names rather
// than the whole path, reusing what it asks with — flow runs does it
// once per run.
func (d *runsDir) stater() func(id string) (size, mtime int64, err error) {
	var at func(rel string) (size, mtime int64, err error, ok bool)
	if d.rc != nil {
		at = statAt(d.rc)
	}
	return func(id string) (int64, int64, error) {
		rel := id + string(filepath.Separator) + StateFile
		if at != nil {
			if size, mtime, err, ok := at(rel); ok {
				return size, mtime, err
			}
		}
		fi, err := d.fsys.Stat(d.path + string(filepath.Separator) + rel)
		if err != nil {
			return 0, 0, err
		}
		return fi.Size(), fi.ModTime().UnixNano(), nil
	}
}

func (d *runsDir) close() { _ = d.f.Close() }
