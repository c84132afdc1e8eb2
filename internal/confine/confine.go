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

	"github.com/flow-run/flow/internal/safefs"
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
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, safefs.Describe(e.Mode))
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
//
// Resolve only names a location: what is there may change before it is
// used. Open, ReadFile, Exists and OpenDir open what they resolve
// without following any link, and fail rather than read elsewhere.
func Resolve(fsys afero.Fs, path string, roots ...string) (string, error) {
	t, err := resolveIn(fsys, path, roots)
	return t.real, err
}

// target is where a path leads, as its resolution found it.
type target struct {
	real string
	// missing says a component of the path was missing: nothing is at
	// real, and a reader need not try to open it.
	missing bool
	// mode is the type of the file at real, if the resolution looked at
	// it (zero, a regular file, otherwise).
	mode   fs.FileMode
	looked bool
}

// resolveIn is Resolve, with what the resolution found.
func resolveIn(fsys afero.Fs, path string, roots []string) (target, error) {
	t, err := realPath(fsys, path)
	if err != nil {
		return target{}, err
	}
	resolved := make([]string, 0, len(roots))
	for _, r := range roots {
		rt, err := realPath(fsys, r)
		if err != nil {
			return target{}, fmt.Errorf("resolve %s: %w", r, err)
		}
		if within(rt.real, t.real) {
			return t, nil
		}
		resolved = append(resolved, r)
	}
	return target{}, &EscapeError{Path: path, Real: t.real, Roots: resolved}
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
func realPath(fsys afero.Fs, path string) (target, error) {
	abs := path
	if !filepath.IsAbs(path) {
		// Not filepath.Abs: it cleans "link/.." lexically, and the
		// kernel resolves the link first.
		wd, err := os.Getwd()
		if err != nil {
			return target{}, fmt.Errorf("resolve %s: %w", path, err)
		}
		abs = wd + string(filepath.Separator) + path
	}
	return walkTo(fsys, string(filepath.Separator), strings.TrimPrefix(abs, string(filepath.Separator)), path)
}

// walkTo resolves rest, a relative path, below done, a real location,
// component by component; path is what to name in errors.
func walkTo(fsys afero.Fs, done, rest, path string) (target, error) {
	lst, canLstat := fsys.(afero.Lstater)
	rl, canRead := fsys.(afero.LinkReader)
	if !canLstat || !canRead {
		return target{real: filepath.Join(done, rest)}, nil // no symlinks on this file system
	}
	links := 0
	var last fs.FileInfo // what is at done, if known
	for rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, string(filepath.Separator))
		switch part {
		case "", ".":
			continue
		case "..":
			done, last = filepath.Dir(done), nil
			continue
		}
		next := filepath.Join(done, part)
		fi, lstatCalled, err := lst.LstatIfPossible(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return target{real: filepath.Join(next, rest), missing: errors.Is(err, fs.ErrNotExist)}, nil
		}
		if err != nil {
			return target{}, fmt.Errorf("resolve %s: %w", path, err)
		}
		if !lstatCalled || fi.Mode()&fs.ModeSymlink == 0 {
			done, last = next, nil
			if lstatCalled {
				last = fi
			}
			continue
		}
		links++
		if links > maxLinks {
			return target{}, fmt.Errorf("resolve %s: too many levels of symbolic links", path)
		}
		dest, err := rl.ReadlinkIfPossible(next)
		if err != nil {
			return target{}, fmt.Errorf("resolve %s: %w", path, err)
		}
		if filepath.IsAbs(dest) {
			done = string(filepath.Separator)
			dest = strings.TrimPrefix(dest, string(filepath.Separator))
		}
		last = nil
		if rest == "" {
			rest = dest
		} else {
			rest = dest + string(filepath.Separator) + rest
		}
	}
	t := target{real: done}
	if last != nil {
		t.mode, t.looked = last.Mode().Type(), true
	}
	return t, nil
}

// onDisk reports whether fsys is the operating system's file system,
// whose files are opened through safefs: relative to an open
// directory, following no link, so that nothing swapped in after the
// resolution is read. Other file systems (in memory, in tests) are
// opened by name.
func onDisk(fsys afero.Fs) bool {
	_, ok := fsys.(*afero.OsFs)
	return ok
}

// fromSlash returns the file system that opens the real locations of
// paths on disk: below /, following no link, as a resolved location has
// none.
func fromSlash() *safefs.FS {
	return safefs.New(string(filepath.Separator))
}

// Open resolves path, checks it lies inside one of roots, and opens it
// for reading without blocking. The open file must be a regular file.
// On disk the resolved location is opened without following any link,
// so that a directory swapped for a symlink meanwhile fails the open
// instead of leading out of the roots. The caller closes the file.
func Open(fsys afero.Fs, path string, roots ...string) (afero.File, error) {
	t, err := resolveIn(fsys, path, roots)
	if err != nil {
		return nil, err
	}
	return openTarget(fsys, path, t, nil)
}

// missingError is the error of opening path, found missing at real.
func missingError(real string) error {
	return &fs.PathError{Op: "open", Path: real, Err: syscall.ENOENT}
}

// openTarget opens t, the resolved location of path, for reading: on
// disk relative to the open directory of in, if it has one, and
// otherwise below /, following no link; elsewhere by name. Anything but
// a regular file is refused, before the open if the resolution saw it.
func openTarget(fsys afero.Fs, path string, t target, in *Root) (afero.File, error) {
	if t.missing {
		return nil, missingError(t.real)
	}
	if t.looked && !t.mode.IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: t.mode}
	}
	if !onDisk(fsys) {
		return openByName(fsys, path, t.real)
	}
	var f *os.File
	var err error
	if in != nil && in.open != nil {
		rel, rerr := filepath.Rel(in.real, t.real)
		if rerr != nil {
			return nil, fmt.Errorf("open %s: %w", path, rerr)
		}
		f, err = safefs.OpenBeneath(in.open, rel, os.O_RDONLY, 0)
	} else {
		var af afero.File
		if af, err = fromSlash().OpenFile(t.real, os.O_RDONLY, 0); err == nil {
			f = af.(*os.File)
		}
	}
	var nr *safefs.NotRegularError
	if errors.As(err, &nr) {
		return nil, &NotRegularError{Path: path, Mode: nr.Mode}
	}
	if err != nil {
		return nil, err
	}
	return checkRegular(path, f)
}

// checkRegular returns f if it is a regular file, and otherwise closes
// it.
func checkRegular(path string, f afero.File) (afero.File, error) {
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

// openByName opens real, the resolved location of path, by name
// through fsys, without following a final symlink and without
// blocking.
func openByName(fsys afero.Fs, path, real string) (afero.File, error) {
	f, err := fsys.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &NotRegularError{Path: path, Mode: fs.ModeSymlink}
		}
		return nil, err
	}
	return checkRegular(path, f)
}

// ReadFile reads the regular file at path, confined to roots, refusing
// one larger than limit bytes with a *TooLargeError. It reads at most
// limit+1 bytes, however large the file claims or grows to be. On disk
// it opens what it resolved without following any link (see Open).
func ReadFile(fsys afero.Fs, path string, limit int64, roots ...string) ([]byte, error) {
	t, err := resolveIn(fsys, path, roots)
	if err != nil {
		return nil, err
	}
	f, err := openTarget(fsys, path, t, nil)
	if err != nil {
		return nil, err
	}
	return readLimited(f, path, limit)
}

// readLimited reads the open file f, named path, as ReadFile does, and
// closes it. The buffer is sized from the file's size, so that a read
// costs one allocation of the file's size, not a doubling series.
func readLimited(f afero.File, path string, limit int64) ([]byte, error) {
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
// the roots and opens nothing, so it never blocks; on disk it looks at
// what it resolved without following any link.
func Exists(fsys afero.Fs, path string, roots ...string) (bool, error) {
	t, err := resolveIn(fsys, path, roots)
	if err != nil {
		return false, err
	}
	if t.missing {
		return false, nil
	}
	if onDisk(fsys) {
		_, _, err = fromSlash().LstatIfPossible(t.real)
	} else {
		_, err = fsys.Stat(t.real)
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// OpenDir resolves path, checks it lies inside one of roots, and opens
// it for listing. It must be a directory (an error wrapping
// syscall.ENOTDIR otherwise). On disk the resolved location is opened
// without following any link (see Open). The caller closes it.
func OpenDir(fsys afero.Fs, path string, roots ...string) (afero.File, error) {
	t, err := resolveIn(fsys, path, roots)
	if err != nil {
		return nil, err
	}
	if t.missing {
		return nil, missingError(t.real)
	}
	notDir := &fs.PathError{Op: "open", Path: path, Err: syscall.ENOTDIR}
	if t.looked && !t.mode.IsDir() {
		return nil, notDir
	}
	var f afero.File
	if onDisk(fsys) {
		f, err = fromSlash().OpenFile(t.real, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	} else {
		f, err = fsys.OpenFile(t.real, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		_ = f.Close()
		return nil, notDir
	}
	return f, nil
}

// Root is a directory whose real location is resolved once, for many
// confined reads of files below it: a read then resolves only the part
// of its path below the root. On disk each read opens its file
// following no link: below the directory that OpenRoot opened, or, for
// a Root from NewRoot, below the root's real location, itself opened
// from / following no link.
type Root struct {
	fs   afero.Fs
	dir  string   // absolute and clean
	real string   // dir with its symlinks resolved
	open *os.File // real, held open by OpenRoot on disk; nil otherwise
}

// NewRoot resolves dir for confined reads below it. It holds nothing
// open (Close is not needed): a directory that is renamed and replaced
// by another one at its real location meanwhile is read in its new
// form, but one replaced by a symlink fails the reads.
func NewRoot(fsys afero.Fs, dir string) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", dir, err)
	}
	t, err := realPath(fsys, abs)
	if err != nil {
		return nil, err
	}
	return &Root{fs: fsys, dir: abs, real: t.real}, nil
}

// OpenRoot is NewRoot, and on disk it also opens dir, which must exist,
// once: every read then opens its file relative to that directory, so
// that moving the directory or putting a symlink in its place later
// changes nothing. The caller closes the Root.
func OpenRoot(fsys afero.Fs, dir string) (*Root, error) {
	r, err := NewRoot(fsys, dir)
	if err != nil || !onDisk(fsys) {
		return r, err
	}
	f, err := fromSlash().OpenFile(r.real, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("open root %s: %w", dir, err)
	}
	r.open = f.(*os.File)
	return r, nil
}

// Close releases the directory that OpenRoot opened; reads after it
// fail. For a Root from NewRoot it does nothing.
func (r *Root) Close() error {
	if r.open == nil {
		return nil
	}
	return r.open.Close()
}

// Dir returns the root as it was given, made absolute.
func (r *Root) Dir() string { return r.dir }

// Resolve is the package's Resolve with r as the only root.
func (r *Root) Resolve(path string) (string, error) {
	t, err := r.resolve(path)
	return t.real, err
}

// resolve is Resolve, with what the resolution found.
func (r *Root) resolve(path string) (target, error) {
	rel, err := filepath.Rel(r.dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		if filepath.Clean(path) == r.dir {
			return target{real: r.real}, nil
		}
		return target{}, &EscapeError{Path: path, Roots: []string{r.dir}}
	}
	t, err := walkTo(r.fs, r.real, rel, path)
	if err != nil {
		return target{}, err
	}
	if !within(r.real, t.real) {
		return target{}, &EscapeError{Path: path, Real: t.real, Roots: []string{r.dir}}
	}
	return t, nil
}

// ReadFile is the package's ReadFile with r as the only root. A file
// that the resolution finds missing is not opened: the error wraps
// fs.ErrNotExist, as an open's would. On disk the file is opened
// relative to the root's open directory, following no link.
func (r *Root) ReadFile(path string, limit int64) ([]byte, error) {
	t, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	f, err := openTarget(r.fs, path, t, r)
	if err != nil {
		return nil, err
	}
	return readLimited(f, path, limit)
}

// ReadLimited reads the regular file at path, without blocking, and at
// most limit bytes of it (a *TooLargeError beyond), but without
// confining where the path leads: it is for files of the system whose
// names no user or session chooses, such as the kernel's /proc.
func ReadLimited(fsys afero.Fs, path string, limit int64) ([]byte, error) {
	f, err := openByName(fsys, path, path)
	if err != nil {
		return nil, err
	}
	return readLimited(f, path, limit)
}
