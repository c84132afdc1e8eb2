//go:build unix

package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

var (
	// ErrSymlink says a path crosses a symbolic link, in a directory on
	// the way or at its end, which this package never follows.
	ErrSymlink = errors.New("path crosses a symbolic link")
	// ErrOutside says a path leads outside the root.
	ErrOutside = errors.New("path leads outside the root")
	// ErrHardLinked says a file to be written has other hard links, so
	// that writing it would write a file elsewhere too.
	ErrHardLinked = errors.New("file has other hard links")
	// ErrRoot says an operation would remove or rename the root itself.
	ErrRoot = errors.New("operation on the root itself")
)

// NotRegularError says an open found something other than a regular
// file (or a directory, for a read-only open): a FIFO, a device, a
// socket, or a directory opened for writing.
type NotRegularError struct {
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return Describe(e.Mode) + ", not a regular file"
}

// Describe names the kind of file mode m is ("a FIFO", "a device").
func Describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "a file of type " + m.Type().String()
}

// local checks that rel is a relative path that stays below the
// directory it is resolved in, and returns it cleaned ("." for the
// directory itself).
func local(rel string) (string, error) {
	if rel == "" {
		return "", unix.ENOENT
	}
	c := filepath.Clean(rel)
	if c != "." && !filepath.IsLocal(c) {
		return "", ErrOutside
	}
	return c, nil
}

// openBeneath opens rel, a clean local path, beneath the directory
// dirfd without following any symlink, with flag plus O_NOFOLLOW and
// O_CLOEXEC. Unless walk is set it first tries openat2; walk forces the
// component-by-component walk (for tests of it on Linux).
func openBeneath(dirfd int, rel string, flag int, perm uint32, walk bool) (int, error) {
	if !walk {
		if fd, err, ok := openat2Beneath(dirfd, rel, flag, perm); ok {
			return fd, err
		}
	}
	return walkBeneath(dirfd, rel, flag, perm)
}

// walkBeneath is openBeneath by openat, one component at a time.
func walkBeneath(dirfd int, rel string, flag int, perm uint32) (int, error) {
	dir, last := filepath.Split(rel)
	cur := dirfd
	closeCur := func() {
		if cur != dirfd {
			_ = unix.Close(cur)
		}
	}
	defer func() { closeCur() }()
	for part := range strings.SplitSeq(strings.TrimSuffix(dir, "/"), "/") {
		if part == "" {
			continue
		}
		fd, err := openat(cur, part, dirFlag|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, classify(cur, part, err)
		}
		closeCur()
		cur = fd
	}
	fd, err := openat(cur, last, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return -1, classify(cur, last, err)
	}
	return fd, nil
}

// classify turns the error of an O_NOFOLLOW open of name in dirfd into
// ErrSymlink if name is a symlink: systems differ in the error they
// give (ELOOP on Linux, EMLINK on FreeBSD, EFTYPE on NetBSD).
func classify(dirfd int, name string, err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EEXIST) {
		return err
	}
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return ErrSymlink
	}
	return err
}

// openat is unix.Openat, retried when a signal interrupts it.
func openat(dirfd int, name string, flag int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flag, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openDir opens the directory at path, following symlinks: it is a
// root that the caller trusts.
func openDir(path string) (int, error) {
	for {
		fd, err := unix.Open(path, dirFlag|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// openFile opens rel beneath dirfd under the package's rules: no
// symlink followed, never blocking, only a regular file (or a directory
// when read-only), an existing file written only if it has no other
// hard link. name is what the file is called in errors and by
// (*os.File).Name.
func openFile(dirfd int, rel, name string, flag int, perm fs.FileMode, walk bool) (*os.File, error) {
	rel, err := local(rel)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	trunc := flag&os.O_TRUNC != 0
	flag &^= os.O_TRUNC
	mode := sysMode(perm)
	for range 10 {
		fd, created, again, err := openOnce(dirfd, rel, flag, mode, walk)
		if again {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		if err := accept(fd, flag, created); err != nil {
			_ = unix.Close(fd)
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		if trunc && !created && writing(flag) {
			if err := unix.Ftruncate(fd, 0); err != nil {
				_ = unix.Close(fd)
				return nil, &fs.PathError{Op: "truncate", Path: name, Err: err}
			}
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			_ = unix.Close(fd)
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("created and removed again, ten times: %w", unix.ENOENT)}
}

// openOnce opens rel once: with O_CREATE, first exclusively, then, if
// it exists and O_EXCL was not asked for, as an existing file. It
// reports whether it created the file, and whether to try again: the
// file existed, then was removed before it could be opened.
func openOnce(dirfd int, rel string, flag int, mode uint32, walk bool) (fd int, created, again bool, err error) {
	flag |= unix.O_NONBLOCK
	if flag&os.O_CREATE == 0 {
		fd, err = openBeneath(dirfd, rel, flag, 0, walk)
		return fd, false, false, err
	}
	fd, err = openBeneath(dirfd, rel, flag|os.O_EXCL, mode, walk)
	if err == nil {
		return fd, true, false, nil
	}
	if !errors.Is(err, unix.EEXIST) || flag&os.O_EXCL != 0 {
		return -1, false, false, err
	}
	fd, err = openBeneath(dirfd, rel, flag&^os.O_CREATE, 0, walk)
	return fd, false, errors.Is(err, unix.ENOENT), err
}

// writing reports whether flag opens for writing.
func writing(flag int) bool {
	return flag&(os.O_WRONLY|os.O_RDWR) != 0
}

// accept checks that the open file fd, opened with flag, is a kind of
// file the open may return.
func accept(fd, flag int, created bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFREG:
		if flag&unix.O_DIRECTORY != 0 {
			return unix.ENOTDIR
		}
		if writing(flag) && !created && st.Nlink > 1 {
			return ErrHardLinked
		}
		return nil
	case unix.S_IFDIR:
		if !writing(flag) {
			return nil
		}
	}
	return &NotRegularError{Mode: fileMode(uint32(st.Mode))}
}

// sysMode converts perm to the mode bits of open and mkdir.
func sysMode(perm fs.FileMode) uint32 {
	m := uint32(perm.Perm())
	if perm&fs.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	if perm&fs.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if perm&fs.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return m
}

// withFd runs fn with the descriptor of the open file f, keeping f
// open meanwhile.
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// OpenBeneath opens rel, a path relative to the open directory dir,
// under the rules of FS.OpenFile: no symlink followed on the way or at
// the end, never blocking, only a regular file or (read-only) a
// directory, an existing file written only if it has no other hard
// link. The file's name is rel joined to dir's name.
func OpenBeneath(dir *os.File, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	name := filepath.Join(dir.Name(), rel)
	var f *os.File
	err := withFd(dir, func(fd int) error {
		var err error
		f, err = openFile(fd, rel, name, flag, perm, false)
		return err
	})
	return f, err
}

// LstatBeneath describes rel, a path relative to the open directory
// dir, without following a symlink on the way (ErrSymlink) or at the
// end (it describes the link).
func LstatBeneath(dir *os.File, rel string) (fs.FileInfo, error) {
	name := filepath.Join(dir.Name(), rel)
	var fi fs.FileInfo
	err := withFd(dir, func(fd int) error {
		var err error
		fi, err = lstatAt(fd, rel, name, false)
		return err
	})
	return fi, err
}

// lstatAt is LstatBeneath on a descriptor.
func lstatAt(dirfd int, rel, name string, walk bool) (fs.FileInfo, error) {
	rel, err := local(rel)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	var st unix.Stat_t
	err = inParent(dirfd, rel, walk, func(pfd int, base string) error {
		return fstatat(pfd, base, &st)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return newFileInfo(filepath.Base(name), &st), nil
}

// fstatat is unix.Fstatat without following a final symlink, retried
// when a signal interrupts it.
func fstatat(dirfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

// inParent runs fn with the directory holding rel's last component,
// opened beneath dirfd without following links, and that component's
// name. rel is clean and local; "." is dirfd itself, named ".".
func inParent(dirfd int, rel string, walk bool, fn func(pfd int, base string) error) error {
	dir, base := filepath.Split(rel)
	if dir == "" {
		return fn(dirfd, base)
	}
	pfd, err := openBeneath(dirfd, filepath.Clean(dir), dirFlag, 0, walk)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	return fn(pfd, base)
}
