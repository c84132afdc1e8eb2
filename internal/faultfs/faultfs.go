package faultfs

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/afero"
)

// ErrInjected is the error, wrapped in an *os.PathError or
// *os.LinkError, of every operation that faultfs makes fail.
var ErrInjected = errors.New("faultfs: injected fault")

// Op is a kind of mutating file system operation.
type Op int

// The kinds of operation that a Plan can fail. Truncate counts as a
// write; OpenFile counts as a create when its flags include O_CREATE.
const (
	OpNone Op = iota
	OpWrite
	OpSync
	OpRename
	OpCreate
	OpRemove
	OpMkdir
	numOps
)

// String returns the operation's name, such as "write".
func (o Op) String() string {
	switch o {
	case OpNone:
		return "none"
	case OpWrite:
		return "write"
	case OpSync:
		return "sync"
	case OpRename:
		return "rename"
	case OpCreate:
		return "create"
	case OpRemove:
		return "remove"
	case OpMkdir:
		return "mkdir"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Plan says which operation fails. The zero Plan never fails, which lets
// a test count operations first.
type Plan struct {
	// Op is the kind of operation to fail.
	Op Op
	// N is the 1-based number of the operation of kind Op, counted across
	// all files, that fails. Zero means no fault.
	N int
	// Sticky makes every mutating operation after the fault fail too, as
	// on a dead disk.
	Sticky bool
	// Partial makes a failing write store the first half of its data
	// before it returns the error, as a torn write after a crash would.
	Partial bool
}

// FS is an afero.Fs that injects the fault described by its Plan. It is
// safe for concurrent use.
type FS struct {
	base afero.Fs
	plan Plan

	mu     sync.Mutex
	counts [numOps]int
	failed bool
}

var _ afero.Fs = (*FS)(nil)

// New returns an FS that forwards to base and fails as plan says.
func New(base afero.Fs, plan Plan) *FS { return &FS{base: base, plan: plan} }

// Count returns how many operations of kind op have been attempted,
// including any that were failed.
func (f *FS) Count(op Op) int {
	if op < 0 || op >= numOps {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

// Failed reports whether the planned fault has fired.
func (f *FS) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// check counts one operation of kind op and reports whether it must fail.
func (f *FS) check(op Op) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if op > OpNone && op < numOps {
		f.counts[op]++
	}
	if f.failed {
		return f.plan.Sticky
	}
	if f.plan.N > 0 && op == f.plan.Op && f.counts[op] == f.plan.N {
		f.failed = true
		return true
	}
	return false
}

// dead reports whether a sticky fault has fired; uncounted mutations
// (Chmod, Chtimes, Chown) fail then.
func (f *FS) dead() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed && f.plan.Sticky
}

func pathErr(op, name string) error {
	return &os.PathError{Op: op, Path: name, Err: ErrInjected}
}

// Name returns "faultfs".
func (f *FS) Name() string { return "faultfs" }

// Create counts as OpCreate.
func (f *FS) Create(name string) (afero.File, error) {
	if f.check(OpCreate) {
		return nil, pathErr("create", name)
	}
	file, err := f.base.Create(name)
	if err != nil {
		return nil, err
	}
	return &File{File: file, fs: f}, nil
}

// Mkdir counts as OpMkdir.
func (f *FS) Mkdir(name string, perm os.FileMode) error {
	if f.check(OpMkdir) {
		return pathErr("mkdir", name)
	}
	return f.base.Mkdir(name, perm)
}

// MkdirAll counts as one OpMkdir.
func (f *FS) MkdirAll(path string, perm os.FileMode) error {
	if f.check(OpMkdir) {
		return pathErr("mkdir", path)
	}
	return f.base.MkdirAll(path, perm)
}

// Open is never failed; the file it returns counts its mutations.
func (f *FS) Open(name string) (afero.File, error) {
	file, err := f.base.Open(name)
	if err != nil {
		return nil, err
	}
	return &File{File: file, fs: f}, nil
}

// OpenFile counts as OpCreate when flag includes os.O_CREATE.
func (f *FS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if flag&os.O_CREATE != 0 && f.check(OpCreate) {
		return nil, pathErr("open", name)
	}
	file, err := f.base.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &File{File: file, fs: f}, nil
}

// Remove counts as OpRemove.
func (f *FS) Remove(name string) error {
	if f.check(OpRemove) {
		return pathErr("remove", name)
	}
	return f.base.Remove(name)
}

// RemoveAll counts as one OpRemove.
func (f *FS) RemoveAll(path string) error {
	if f.check(OpRemove) {
		return pathErr("removeall", path)
	}
	return f.base.RemoveAll(path)
}

// Rename counts as OpRename.
func (f *FS) Rename(oldname, newname string) error {
	if f.check(OpRename) {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: ErrInjected}
	}
	return f.base.Rename(oldname, newname)
}

// Stat is never failed.
func (f *FS) Stat(name string) (os.FileInfo, error) { return f.base.Stat(name) }

// Chmod fails only after a sticky fault.
func (f *FS) Chmod(name string, mode os.FileMode) error {
	if f.dead() {
		return pathErr("chmod", name)
	}
	return f.base.Chmod(name, mode)
}

// Chown fails only after a sticky fault.
func (f *FS) Chown(name string, uid, gid int) error {
	if f.dead() {
		return pathErr("chown", name)
	}
	return f.base.Chown(name, uid, gid)
}

// Chtimes fails only after a sticky fault.
func (f *FS) Chtimes(name string, atime, mtime time.Time) error {
	if f.dead() {
		return pathErr("chtimes", name)
	}
	return f.base.Chtimes(name, atime, mtime)
}

// File is a file opened through an FS. Write, WriteAt, WriteString and
// Truncate count as OpWrite, Sync as OpSync; everything else is passed
// through.
type File struct {
	afero.File
	fs *FS
}

func (f *File) partial(p []byte, write func([]byte) (int, error)) (int, error) {
	n := 0
	if f.fs.plan.Partial && len(p) > 1 {
		n, _ = write(p[:len(p)/2])
	}
	return n, pathErr("write", f.Name())
}

// Write counts as OpWrite.
func (f *File) Write(p []byte) (int, error) {
	if f.fs.check(OpWrite) {
		return f.partial(p, f.File.Write)
	}
	return f.File.Write(p)
}

// WriteAt counts as OpWrite.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.check(OpWrite) {
		return f.partial(p, func(b []byte) (int, error) { return f.File.WriteAt(b, off) })
	}
	return f.File.WriteAt(p, off)
}

// WriteString counts as OpWrite.
func (f *File) WriteString(s string) (int, error) {
	if f.fs.check(OpWrite) {
		return f.partial([]byte(s), f.File.Write)
	}
	return f.File.WriteString(s)
}

// Truncate counts as OpWrite.
func (f *File) Truncate(size int64) error {
	if f.fs.check(OpWrite) {
		return pathErr("truncate", f.Name())
	}
	return f.File.Truncate(size)
}

// Sync counts as OpSync.
func (f *File) Sync() error {
	if f.fs.check(OpSync) {
		return pathErr("sync", f.Name())
	}
	return f.File.Sync()
}
