package confine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/afero"
)

// maxLinks bounds how many symlinks one resolution follows, as the
// kernel's own limit (ELOOP) does.
const maxLinks = 40

// EscapeError says a path's real location lies outside every allowed
// root.
type EscapeError struct {
	Path string
	// Real is where the path leads once symlinks are resolved.
	Real  string
	Roots []string
}

func (e *EscapeError) Error() string {
	if e.Real != "" && e.Real != filepath.Clean(e.Path) {
		return fmt.Sprintf("%s resolves to %s, outside %s", e.Path, e.Real, strings.Join(e.Roots, " and "))
	}
	return fmt.Sprintf("%s is outside %s", e.Path, strings.Join(e.Roots, " and "))
}

// NotRegularError says a path names something other than a regular
// file: a directory, a FIFO, a device or a socket.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, describe(e.Mode))
}

func describe(m fs.FileMode) string {
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
	return "not a regular file (" + m.Type().String() + ")"
}

// TooLargeError says a file is larger than the reader's limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s", e.Path, Size(e.Limit))
}

// Size formats a byte count the way flow's limits are written: 4 KiB,
// 1 MiB, 64 MiB, or bytes when it is not a whole number of KiB.
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Resolve returns the real location of path (absolute, or relative to
// the working directory) with every symlink resolved, and checks that
// it lies inside one of roots (themselves resolved first). A path
// whose tail does not exist resolves as far as it exists; the rest is
// joined as written, so that a missing file inside a root is reported
// by the caller's open as fs.ErrNotExist, while a missing file behind a
// symlink that leaves the roots is an *EscapeError.
func Resolve(fsys afero.Fs, path string, roots ...string) (string, error) {
	real, err := realPath(fsys, path)
	if err != nil {
		return "", err
	}
	resolved := make([]string, 0, len(roots))
	for _, r := range roots {
		rr, err := realPath(fsys, r)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", r, err)
		}
		if within(rr, real) {
			return real, nil
		}
		resolved = append(resolved, r)
	}
	return "", &EscapeError{Path: path, Real: real, Roots: resolved}
}

// within reports whether p is root or lies below it; both are clean
// absolute paths.
func within(root, p string) bool {
	if root == p || root == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// realPath resolves the symlinks of path through fsys, as
// filepath.EvalSymlinks does through the os package, but stops without
// error at the first component that does not exist.
func realPath(fsys afero.Fs, path string) (string, error) {
	abs := path
	if !filepath.IsAbs(path) {
		// Not filepath.Abs: it cleans "link/.." lexically, and the
		// kernel resolves the link first.
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", path, err)
		}
		abs = wd + string(filepath.Separator) + path
	}
	return walk(fsys, string(filepath.Separator), strings.TrimPrefix(abs, string(filepath.Separator)), path)
}

// walk resolves rest, a relative path, below done, a real location,
// component by component; path is what to name in errors.
func walk(fsys afero.Fs, done, rest, path string) (string, error) {
	real, _, err := walkTo(fsys, done, rest, path)
	return real, err
}

// walkTo is walk, and also reports whether it found a component of the
// path missing: then nothing exists at the returned location (as of
// the walk), and a reader need not try to open it.
func walkTo(fsys afero.Fs, done, rest, path string) (real string, missing bool, err error) {
	lst, canLstat := fsys.(afero.Lstater)
	rl, canRead := fsys.(afero.LinkReader)
	if !canLstat || !canRead {
		return filepath.Join(done, rest), false, nil // no symlinks on this file system
	}
	links := 0
	for rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, string(filepath.Separator))
		switch part {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, part)
		fi, lstatCalled, err := lst.LstatIfPossible(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return filepath.Join(next, rest), errors.Is(err, fs.ErrNotExist), nil
		}
		if err != nil {
			return "", false, fmt.Errorf("resolve %s: %w", path, err)
		}
		if !lstatCalled || fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		links++
		if links > maxLinks {
			return "", false, fmt.Errorf("resolve %s: too many levels of symbolic links", path)
		}
		target, err := rl.ReadlinkIfPossible(next)
		if err != nil {
			return "", false, fmt.Errorf("resolve %s: %w", path, err)
		}
		if filepath.IsAbs(target) {
			done = string(filepath.Separator)
			target = strings.TrimPrefix(target, string(filepath.Separator))
		}
		if rest == "" {
			rest = target
		} else {
			rest = target + string(filepath.Separator) + rest
		}
	}
	return done, false, nil
}

// Open resolves path, checks it lies inside one of roots, and opens it
// for reading without following a final symlink and without blocking.
// The open file must be a regular file. The caller closes it.
func Open(fsys afero.Fs, path string, roots ...string) (afero.File, error) {
	real, err := Resolve(fsys, path, roots...)
	if err != nil {
		return nil, err
	}
	return openResolved(fsys, path, real)
}

// openResolved opens real, the resolved location of path.
func openResolved(fsys afero.Fs, path, real string) (afero.File, error) {
	f, err := fsys.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &NotRegularError{Path: path, Mode: fs.ModeSymlink}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, nil
}

// ReadFile reads the regular file at path, confined to roots, refusing
// one larger than limit bytes with a *TooLargeError. It reads at most
// limit+1 bytes, however large the file claims or grows to be.
func ReadFile(fsys afero.Fs, path string, limit int64, roots ...string) ([]byte, error) {
	real, err := Resolve(fsys, path, roots...)
	if err != nil {
		return nil, err
	}
	return readResolved(fsys, path, real, limit)
}

// readResolved reads real, the resolved location of path, as ReadFile
// does. The buffer is sized from the file's size, so that a read costs
// one allocation of the file's size, not a doubling series.
func readResolved(fsys afero.Fs, path, real string, limit int64) ([]byte, error) {
	f, err := openResolved(fsys, path, real)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		if fi.Size() > limit {
			return nil, &TooLargeError{Path: path, Limit: limit}
		}
		size = fi.Size()
	}
	// One byte more than the size, to see the end without growing the
	// buffer; a file that grows meanwhile grows it, up to the limit.
	data := make([]byte, 0, size+1)
	r := io.LimitReader(f, limit+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, nil
}

// Exists reports whether path exists, confined to roots: a path that
// escapes them is an error, not false. It follows no symlink out of
// the roots and opens nothing, so it never blocks.
func Exists(fsys afero.Fs, path string, roots ...string) (bool, error) {
	real, err := Resolve(fsys, path, roots...)
	if err != nil {
		return false, err
	}
	_, err = fsys.Stat(real)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// Root is a directory whose real location is resolved once, for many
// confined reads of files below it: a read then resolves only the part
// of its path below the root. It assumes the root itself is not moved
// or replaced by a symlink meanwhile, as a run directory is not while
// its runner runs.
type Root struct {
	fs   afero.Fs
	dir  string // absolute and clean
	real string // dir with its symlinks resolved
}

// NewRoot resolves dir for confined reads below it.
func NewRoot(fsys afero.Fs, dir string) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", dir, err)
	}
	real, err := realPath(fsys, abs)
	if err != nil {
		return nil, err
	}
	return &Root{fs: fsys, dir: abs, real: real}, nil
}

// Dir returns the root as it was given, made absolute.
func (r *Root) Dir() string { return r.dir }

// Resolve is the package's Resolve with r as the only root.
func (r *Root) Resolve(path string) (string, error) {
	real, _, err := r.resolve(path)
	return real, err
}

// resolve is Resolve, and reports whether a component of the path was
// found missing.
func (r *Root) resolve(path string) (string, bool, error) {
	rel, err := filepath.Rel(r.dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		if filepath.Clean(path) == r.dir {
			return r.real, false, nil
		}
		return "", false, &EscapeError{Path: path, Roots: []string{r.dir}}
	}
	real, missing, err := walkTo(r.fs, r.real, rel, path)
	if err != nil {
		return "", false, err
	}
	if !within(r.real, real) {
		return "", false, &EscapeError{Path: path, Real: real, Roots: []string{r.dir}}
	}
	return real, missing, nil
}

// ReadFile is the package's ReadFile with r as the only root. A file
// that the resolution finds missing is not opened: the error wraps
// fs.ErrNotExist, as an open's would.
func (r *Root) ReadFile(path string, limit int64) ([]byte, error) {
	real, missing, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	if missing {
		return nil, &fs.PathError{Op: "open", Path: real, Err: syscall.ENOENT}
	}
	return readResolved(r.fs, path, real, limit)
}

// ReadLimited reads the regular file at path, without blocking, and at
// most limit bytes of it (a *TooLargeError beyond), but without
// confining where the path leads: it is for files of the system whose
// names no user or session chooses, such as the kernel's /proc.
func ReadLimited(fsys afero.Fs, path string, limit int64) ([]byte, error) {
	return readResolved(fsys, path, path, limit)
}
