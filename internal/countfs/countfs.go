// Package countfs wraps an afero.Fs and counts how often each file is
// opened, so that tests can show that a reader reads a file only as
// often as it must (a large run's record is not read twice).
package countfs

import (
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/afero"
)

// FS is an afero.Fs that counts the openings (Open, OpenFile, Create)
// of each file by its cleaned path; everything else goes to the
// wrapped Fs untouched.
type FS struct {
	afero.Fs

	mu    sync.Mutex
	opens map[string]int
}

// New wraps base.
func New(base afero.Fs) *FS { return &FS{Fs: base, opens: map[string]int{}} }

// Opens returns how often the file at path was opened through f.
func (f *FS) Opens(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opens[filepath.Clean(path)]
}

// Reset forgets the counts.
func (f *FS) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.opens)
}

func (f *FS) count(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens[filepath.Clean(name)]++
}

// Open counts and opens name.
func (f *FS) Open(name string) (afero.File, error) {
	f.count(name)
	return f.Fs.Open(name)
}

// OpenFile counts and opens name.
func (f *FS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f.count(name)
	return f.Fs.OpenFile(name, flag, perm)
}

// Create counts and creates name.
func (f *FS) Create(name string) (afero.File, error) {
	f.count(name)
	return f.Fs.Create(name)
}
