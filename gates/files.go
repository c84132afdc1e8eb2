package gates

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/confine"
)

// Limits of the file functions.
const (
	// MaxReadFile is the largest file read_file and read_json read.
	MaxReadFile = 4 << 20
	// MaxGlob is the largest number of paths glob returns.
	MaxGlob = 10000
	// MaxGlobScan is the largest number of directory entries one glob
	// reads, so that a pattern such as */*/* over a large tree fails
	// rather than walks it all.
	MaxGlobScan = 100 * MaxGlob
)

// fileFuncs implements file_exists, read_file, read_json and glob over
// fs, confined to the directory dir: the real location of every path,
// symlinks resolved, must lie inside it (see internal/confine). A nil
// fs is an empty file system. Each call, and what the functions read
// and return, is charged to budget, when set, so that reading in a loop
// is bounded too.
type fileFuncs struct {
	fs     afero.Fs
	dir    string
	budget *budget
}

// spend charges n to the evaluation's budget.
func (f fileFuncs) spend(n int) error {
	if f.budget == nil {
		return nil
	}
	return f.budget.spend(n)
}

// step charges n steps of work to the evaluation's budget.
func (f fileFuncs) step(n int) error {
	if f.budget == nil {
		return nil
	}
	return f.budget.step(n)
}

// resolve checks that p is a local path (relative, not escaping with
// "..") and returns it cleaned, and joined to the directory.
func (f fileFuncs) resolve(fn, p string) (local, full string, err error) {
	if p == "" {
		return "", "", fmt.Errorf("%s: empty path", fn)
	}
	local = filepath.Clean(filepath.FromSlash(p))
	if filepath.IsAbs(local) || !filepath.IsLocal(local) {
		return "", "", fmt.Errorf("%s %q: path must be relative and stay inside the repository", fn, p)
	}
	return local, filepath.Join(f.dir, local), nil
}

// root is the directory the paths are confined to.
func (f fileFuncs) root() string {
	if f.dir == "" {
		return "."
	}
	return f.dir
}

// exists is file_exists(p): whether p exists, as a file of any kind. A
// path that leads out of the directory is an error, not false.
func (f fileFuncs) exists(p string) (bool, error) {
	_, full, err := f.resolve("file_exists", p)
	if err != nil {
		return false, err
	}
	if err := f.step(fileSteps); err != nil {
		return false, err
	}
	if f.fs == nil {
		return false, nil
	}
	ok, err := confine.Exists(f.fs, full, f.root())
	if err != nil {
		return false, fmt.Errorf("file_exists %q: %w", p, err)
	}
	return ok, nil
}

// readBytes reads the regular file at p, refusing other kinds of file,
// files over MaxReadFile and files whose real location is outside the
// directory. It never blocks.
func (f fileFuncs) readBytes(fn, p string) ([]byte, error) {
	_, full, err := f.resolve(fn, p)
	if err != nil {
		return nil, err
	}
	if err := f.step(fileSteps); err != nil {
		return nil, err
	}
	if f.fs == nil {
		return nil, fmt.Errorf("%s %q: %w", fn, p, fs.ErrNotExist)
	}
	data, err := confine.ReadFile(f.fs, full, MaxReadFile, f.root())
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", fn, p, err)
	}
	if err := f.step(len(data) / scanBytes); err != nil {
		return nil, err
	}
	return data, nil
}

// read is read_file(p).
func (f fileFuncs) read(p string) (string, error) {
	data, err := f.readBytes("read_file", p)
	if err != nil {
		return "", err
	}
	if err := f.spend(len(data)); err != nil {
		return "", err
	}
	return string(data), nil
}

// readJSON is read_json(p): the file decoded as JSON, numbers as float64.
func (f fileFuncs) readJSON(p string) (any, error) {
	data, err := f.readBytes("read_json", p)
	if err != nil {
		return nil, err
	}
	if err := f.spend(jsonDecodeSize(string(data), MaxValueSize+1)); err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("read_json %q: %w", p, err)
	}
	return v, nil
}

// glob is glob(p): the paths matching the pattern, relative to the
// directory, slash-separated and sorted. It matches one path component
// at a time, listing only directories whose real location is inside
// the directory: a pattern whose fixed leading directories lead out is
// an error, and a match that leads out is left out, so that a symlink
// pointing out of the repository reveals no name from outside.
func (f fileFuncs) glob(pattern string) ([]string, error) {
	local, _, err := f.resolve("glob", pattern)
	if err != nil {
		return nil, err
	}
	if err := f.step(fileSteps); err != nil {
		return nil, err
	}
	if f.fs == nil {
		return []string{}, nil
	}
	parts := strings.Split(local, string(filepath.Separator))
	for _, part := range parts {
		if _, err := filepath.Match(part, ""); err != nil {
			return nil, fmt.Errorf("glob %q: %w", pattern, err)
		}
	}
	g := globber{f: f, root: f.root()}
	fixed := 0
	for fixed < len(parts)-1 && !hasMeta(parts[fixed]) {
		fixed++
	}
	start := path.Join(filepath.ToSlash(filepath.Join(parts[:fixed]...)))
	if fixed > 0 {
		if _, err := confine.Resolve(f.fs, g.full(start), g.root); err != nil {
			return nil, fmt.Errorf("glob %q: %w", pattern, err)
		}
	}
	matches := []string{start}
	for _, part := range parts[fixed:] {
		if matches, err = g.step(matches, part); err != nil {
			return nil, fmt.Errorf("glob %q: %w", pattern, err)
		}
	}
	if len(matches) > MaxGlob {
		return nil, fmt.Errorf("glob %q: more than %d matches", pattern, MaxGlob)
	}
	if err := f.step(g.scanned); err != nil {
		return nil, err
	}
	size := 0
	for _, m := range matches {
		size += 8 + len(m)
	}
	if err := f.spend(size); err != nil {
		return nil, err
	}
	if matches == nil {
		matches = []string{}
	}
	slices.Sort(matches)
	return matches, nil
}

// hasMeta reports whether a path component is a pattern, as
// filepath.Match reads it.
func hasMeta(part string) bool {
	return strings.ContainsAny(part, `*?[\`)
}

// globber is the state of one glob.
type globber struct {
	f       fileFuncs
	root    string
	scanned int
}

// full returns the path of rel, a slash-separated path relative to the
// directory ("" for the directory itself).
func (g *globber) full(rel string) string {
	return filepath.Join(g.f.dir, filepath.FromSlash(rel))
}

// step returns the paths below the directories dirs that match the
// path component part and whose real location is inside the root.
func (g *globber) step(dirs []string, part string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		if !hasMeta(part) {
			if rel := path.Join(d, part); g.inside(rel) {
				out = append(out, rel)
			}
			continue
		}
		names, err := g.list(d)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if ok, _ := filepath.Match(part, name); ok {
				if rel := path.Join(d, name); g.inside(rel) {
					out = append(out, rel)
				}
			}
		}
	}
	return out, nil
}

// inside reports whether rel exists and its real location is inside
// the root. Only a symlink needs resolving: rel's directory was
// checked before.
func (g *globber) inside(rel string) bool {
	full := g.full(rel)
	var fi fs.FileInfo
	var err error
	if l, ok := g.f.fs.(afero.Lstater); ok {
		fi, _, err = l.LstatIfPossible(full)
	} else {
		fi, err = g.f.fs.Stat(full)
	}
	if err != nil {
		return false
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return true
	}
	_, err = confine.Resolve(g.f.fs, full, g.root)
	return err == nil
}

// list returns the names in directory rel, or none when rel is not a
// directory. It opens nothing but a directory, without blocking, and
// fails once the glob has read more than MaxGlobScan entries.
func (g *globber) list(rel string) ([]string, error) {
	full := g.full(rel)
	if fi, err := g.f.fs.Stat(full); err != nil || !fi.IsDir() {
		return nil, nil
	}
	dir, err := g.f.fs.OpenFile(full, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil
	}
	defer dir.Close()
	if fi, err := dir.Stat(); err != nil || !fi.IsDir() {
		return nil, nil
	}
	var names []string
	for {
		batch, err := dir.Readdirnames(1024)
		g.scanned += len(batch)
		if g.scanned > MaxGlobScan {
			return nil, fmt.Errorf("more than %d directory entries read", MaxGlobScan)
		}
		names = append(names, batch...)
		if err != nil || len(batch) == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, nil
			}
			return names, nil
		}
	}
}
