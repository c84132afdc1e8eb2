package gates

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/spf13/afero"
)

// Limits of the file functions.
const (
	// MaxReadFile is the largest file read_file and read_json read.
	MaxReadFile = 4 << 20
	// MaxGlob is the largest number of paths glob returns.
	MaxGlob = 10000
)

// fileFuncs implements file_exists, read_file, read_json and glob over
// fs, relative to dir. A nil fs is an empty file system.
type fileFuncs struct {
	fs  afero.Fs
	dir string
}

// resolve checks that p is a local path (relative, not escaping with
// "..") and returns it joined to the directory.
func (f fileFuncs) resolve(fn, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%s: empty path", fn)
	}
	local := filepath.Clean(filepath.FromSlash(p))
	if filepath.IsAbs(local) || !filepath.IsLocal(local) {
		return "", fmt.Errorf("%s %q: path must be relative and stay inside the repository", fn, p)
	}
	return filepath.Join(f.dir, local), nil
}

// exists is file_exists(p).
func (f fileFuncs) exists(p string) (bool, error) {
	full, err := f.resolve("file_exists", p)
	if err != nil {
		return false, err
	}
	if f.fs == nil {
		return false, nil
	}
	_, err = f.fs.Stat(full)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("file_exists %q: %w", p, err)
	}
	return true, nil
}

// readBytes reads the file at p, refusing files over MaxReadFile.
func (f fileFuncs) readBytes(fn, p string) ([]byte, error) {
	full, err := f.resolve(fn, p)
	if err != nil {
		return nil, err
	}
	if f.fs == nil {
		return nil, fmt.Errorf("%s %q: %w", fn, p, fs.ErrNotExist)
	}
	file, err := f.fs.Open(full)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", fn, p, err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, MaxReadFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", fn, p, err)
	}
	if len(data) > MaxReadFile {
		return nil, fmt.Errorf("%s %q: file is larger than %d MiB", fn, p, MaxReadFile>>20)
	}
	return data, nil
}

// read is read_file(p).
func (f fileFuncs) read(p string) (string, error) {
	data, err := f.readBytes("read_file", p)
	return string(data), err
}

// readJSON is read_json(p): the file decoded as JSON, numbers as float64.
func (f fileFuncs) readJSON(p string) (any, error) {
	data, err := f.readBytes("read_json", p)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("read_json %q: %w", p, err)
	}
	return v, nil
}

// glob is glob(p): the paths matching the pattern, relative to the
// directory, slash-separated and sorted.
func (f fileFuncs) glob(pattern string) ([]string, error) {
	full, err := f.resolve("glob", pattern)
	if err != nil {
		return nil, err
	}
	if f.fs == nil {
		return []string{}, nil
	}
	matches, err := afero.Glob(f.fs, full)
	if err != nil {
		return nil, fmt.Errorf("glob %q: %w", pattern, err)
	}
	if len(matches) > MaxGlob {
		return nil, fmt.Errorf("glob %q: more than %d matches", pattern, MaxGlob)
	}
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		rel, err := filepath.Rel(filepath.Join(f.dir, "."), m)
		if err != nil {
			rel = m
		}
		out = append(out, filepath.ToSlash(rel))
	}
	sort.Strings(out)
	return out, nil
}
