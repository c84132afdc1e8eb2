//go:build unix

package safefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// FS is an afero.Fs over the files beneath a root directory that
// follows no symlink and opens only regular files and directories,
// without blocking (see the package documentation). Its zero value is
// not usable; make one with New.
type FS struct {
	root string // absolute and clean
	// walk makes every open walk the path component by component
	// instead of trying openat2 first, so that tests cover the walk on
	// Linux too.
	walk bool
}

var (
	_ afero.Fs      = (*FS)(nil)
	_ afero.Lstater = (*FS)(nil)
)

// New returns an FS over the directory root. Paths given to it are
// absolute paths inside root, or paths relative to root.
func New(root string) *FS {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	return &FS{root: filepath.Clean(root)}
}

// Root returns the root directory, absolute and clean.
func (s *FS) Root() string { return s.root }

// Name returns the name of the file system, "safefs".
func (s *FS) Name() string { return "safefs" }

// rel returns name relative to the root, clean ("." for the root), or
// ErrOutside.
func (s *FS) rel(name string) (string, error) {
	if !filepath.IsAbs(name) {
		return local(name)
	}
	r, err := filepath.Rel(s.root, filepath.Clean(name))
	if err != nil {
		return "", ErrOutside
	}
	return local(r)
}

// path returns the name of rel as the caller sees it: absolute.
func (s *FS) path(rel string) string {
	return filepath.Join(s.root, rel)
}

// at runs fn with the root opened and name relative to it. Errors from
// resolving name or opening the root are *fs.PathError values of op.
func (s *FS) at(op, name string, fn func(rootfd int, rel string) error) error {
	rel, err := s.rel(name)
	if err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	rootfd, err := openDir(s.root)
	if err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	defer unix.Close(rootfd)
	return fn(rootfd, rel)
}

// inParent is at, with fn given the directory holding name's last
// component, opened without following links, and that component's name.
// The root itself has no parent here: op fails with ErrRoot.
func (s *FS) inParent(op, name string, fn func(pfd int, base string) error) error {
	return s.at(op, name, func(rootfd int, rel string) error {
		if rel == "." {
			return &fs.PathError{Op: op, Path: name, Err: ErrRoot}
		}
		return pathError(op, name, inParent(rootfd, rel, s.walk, fn))
	})
}

// pathError wraps err, if it is not nil or a *fs.PathError already, in
// a *fs.PathError of op on name.
func pathError(op, name string, err error) error {
	var pe *fs.PathError
	if err == nil || errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// OpenFile opens name with flag and, when it creates the file, perm.
// It follows no symlink, never blocks on a FIFO, opens only a regular
// file or, read-only, a directory, and writes an existing file only if
// it has no other hard link. O_CREATE without O_EXCL creates the file
// exclusively if it can and otherwise opens the existing file.
func (s *FS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	var f *os.File
	err := s.at("open", name, func(rootfd int, rel string) error {
		var err error
		f, err = openFile(rootfd, rel, s.path(rel), flag, perm, s.walk)
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Open opens name for reading: a regular file or a directory.
func (s *FS) Open(name string) (afero.File, error) {
	return s.OpenFile(name, os.O_RDONLY, 0)
}

// Create creates name, or truncates it if it exists as a regular file
// with no other hard link, and opens it for reading and writing.
func (s *FS) Create(name string) (afero.File, error) {
	return s.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Mkdir creates the directory name.
func (s *FS) Mkdir(name string, perm os.FileMode) error {
	return s.inParent("mkdir", name, func(pfd int, base string) error {
		return unix.Mkdirat(pfd, base, sysMode(perm))
	})
}

// MkdirAll creates the directory name and the directories above it
// that are missing, below the root, which must exist. A symlink on the
// way is an error, even to a directory.
func (s *FS) MkdirAll(name string, perm os.FileMode) error {
	return s.at("mkdir", name, func(rootfd int, rel string) error {
		if rel == "." {
			return nil
		}
		cur := rootfd
		defer func() {
			if cur != rootfd {
				_ = unix.Close(cur)
			}
		}()
		done := ""
		for part := range strings.SplitSeq(rel, string(filepath.Separator)) {
			done = filepath.Join(done, part)
			fd, err := openBeneath(cur, part, dirFlag, 0, true)
			if errors.Is(err, unix.ENOENT) {
				if err := unix.Mkdirat(cur, part, sysMode(perm)); err != nil && !errors.Is(err, unix.EEXIST) {
					return &fs.PathError{Op: "mkdir", Path: s.path(done), Err: err}
				}
				fd, err = openBeneath(cur, part, dirFlag, 0, true)
			}
			if err != nil {
				return &fs.PathError{Op: "mkdir", Path: s.path(done), Err: err}
			}
			if cur != rootfd {
				_ = unix.Close(cur)
			}
			cur = fd
		}
		return nil
	})
}

// Remove removes the file or empty directory name. A symlink is
// removed itself, never what it points to.
func (s *FS) Remove(name string) error {
	return s.inParent("remove", name, func(pfd int, base string) error {
		return removeAt(pfd, base)
	})
}

// removeAt removes the entry base of the directory pfd, as os.Remove
// does: as a file, else as an empty directory.
func removeAt(pfd int, base string) error {
	err := unix.Unlinkat(pfd, base, 0)
	if err == nil {
		return nil
	}
	err1 := unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR)
	if err1 == nil {
		return nil
	}
	if !errors.Is(err1, unix.ENOTDIR) {
		err = err1
	}
	return err
}

// RemoveAll removes name and everything below it. It descends only
// into directories, never through a symlink (a symlink is removed
// itself), and succeeds if name does not exist.
func (s *FS) RemoveAll(name string) error {
	err := s.inParent("removeall", name, func(pfd int, base string) error {
		return removeAllAt(pfd, base)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// removeAllAt removes the entry base of the directory pfd and, if it
// is a directory, everything in it.
func removeAllAt(pfd int, base string) error {
	err := unix.Unlinkat(pfd, base, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	fd, oerr := openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if oerr != nil {
		if errors.Is(oerr, unix.ENOENT) {
			return nil
		}
		return err // not a directory: the unlink's error says why
	}
	dir := os.NewFile(uintptr(fd), base)
	defer dir.Close()
	for {
		names, rerr := dir.Readdirnames(1024)
		for _, n := range names {
			if err := removeAllAt(fd, n); err != nil {
				return err
			}
		}
		if rerr != nil || len(names) == 0 {
			break
		}
		// Entries were removed: read the directory from its start.
		if _, err := dir.Seek(0, 0); err != nil {
			return err
		}
	}
	err = unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// Rename renames oldname to newname. Neither path may cross a symlink
// on the way; the entries themselves are moved or replaced as they are
// (a symlink at newname is replaced, not followed).
func (s *FS) Rename(oldname, newname string) error {
	return s.inParent("rename", oldname, func(opfd int, obase string) error {
		return s.inParent("rename", newname, func(npfd int, nbase string) error {
			return unix.Renameat(opfd, obase, npfd, nbase)
		})
	})
}

// Stat describes name. A symlink, on the way or at the end, is an
// error (ErrSymlink): Stat never follows one.
func (s *FS) Stat(name string) (os.FileInfo, error) {
	fi, err := s.lstat("stat", name)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: ErrSymlink}
	}
	return fi, err
}

// LstatIfPossible describes name without following a symlink at its
// end; a symlink on the way is an error (ErrSymlink). It always
// reports that it called lstat.
func (s *FS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	fi, err := s.lstat("lstat", name)
	return fi, true, err
}

// lstat is LstatIfPossible, with errors of op.
func (s *FS) lstat(op, name string) (fs.FileInfo, error) {
	var st unix.Stat_t
	var rel string
	err := s.at(op, name, func(rootfd int, r string) error {
		rel = r
		return pathError(op, name, inParent(rootfd, r, s.walk, func(pfd int, base string) error {
			return fstatat(pfd, base, &st)
		}))
	})
	if err != nil {
		return nil, err
	}
	return newFileInfo(filepath.Base(s.path(rel)), &st), nil
}

// Chmod changes the mode of the regular file or directory name, opened
// without following a symlink.
func (s *FS) Chmod(name string, mode os.FileMode) error {
	f, err := s.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return &fs.PathError{Op: "chmod", Path: name, Err: errors.Unwrap(err)}
	}
	defer f.Close()
	return f.(*os.File).Chmod(mode)
}

// Chown changes the owner of name; a symlink at its end is changed
// itself, never what it points to.
func (s *FS) Chown(name string, uid, gid int) error {
	return s.inParent("chown", name, func(pfd int, base string) error {
		return unix.Fchownat(pfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// Chtimes changes the access and modification times of name; a
// symlink at its end is changed itself. A zero time leaves that time
// as it is.
func (s *FS) Chtimes(name string, atime, mtime time.Time) error {
	return s.inParent("chtimes", name, func(pfd int, base string) error {
		var st unix.Stat_t
		if atime.IsZero() || mtime.IsZero() {
			if err := fstatat(pfd, base, &st); err != nil {
				return err
			}
		}
		ts := []unix.Timespec{st.Atim, st.Mtim}
		if !atime.IsZero() {
			ts[0] = unix.NsecToTimespec(atime.UnixNano())
		}
		if !mtime.IsZero() {
			ts[1] = unix.NsecToTimespec(mtime.UnixNano())
		}
		return unix.UtimesNanoAt(pfd, base, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
}
