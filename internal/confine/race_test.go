package confine

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/afero"
)

// swapTree makes a repository whose directory d holds, at the same
// relative path as an outside file, a file of its own: when d is
// replaced by a symlink to /, the path inside the repository names the
// outside file. It returns the repository, the path to read and the
// outside file's content.
func swapTree(t *testing.T) (repo, path, secret string) {
	t.Helper()
	base := t.TempDir()
	repo = filepath.Join(base, "repo")
	outside := filepath.Join(base, "outside", "secret")
	secret = "outside secret"
	inner := filepath.Join(repo, "d", strings.TrimPrefix(outside, string(filepath.Separator)))
	if err := os.MkdirAll(filepath.Dir(inner), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(outside), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inner, []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	return repo, inner, secret
}

// swapper replaces repo/d by a symlink to / and back, again and again,
// until stop is closed. It reports on done when it has stopped.
func swapper(t *testing.T, repo string, stop <-chan struct{}, done *sync.WaitGroup) {
	d, aside, link := filepath.Join(repo, "d"), filepath.Join(repo, "d.aside"), filepath.Join(repo, "d.link")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	done.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Renames only, so that d is missing for as short a time
			// as possible: a directory, then a symlink to /.
			_ = os.Rename(d, aside)
			_ = os.Rename(link, d)
			_ = os.Rename(d, link)
			_ = os.Rename(aside, d)
		}
	})
}

// TestSwapRace reads a file inside the repository while another
// goroutine swaps a directory on its path for a symlink to /: a read
// may fail, but never returns the outside file.
func TestSwapRace(t *testing.T) {
	const reads = 3000
	fsys := afero.NewOsFs()
	// Each reader is made for a repository before the swapping starts.
	readers := map[string]func(t *testing.T, repo string) func(path string) ([]byte, error){
		"ReadFile": func(t *testing.T, repo string) func(string) ([]byte, error) {
			return func(path string) ([]byte, error) { return ReadFile(fsys, path, 1<<10, repo) }
		},
		"NewRoot": func(t *testing.T, repo string) func(string) ([]byte, error) {
			root, err := NewRoot(fsys, repo)
			if err != nil {
				t.Fatal(err)
			}
			return func(path string) ([]byte, error) { return root.ReadFile(path, 1<<10) }
		},
		"OpenRoot": func(t *testing.T, repo string) func(string) ([]byte, error) {
			root, err := OpenRoot(fsys, repo)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = root.Close() })
			return func(path string) ([]byte, error) { return root.ReadFile(path, 1<<10) }
		},
		"Open": func(t *testing.T, repo string) func(string) ([]byte, error) {
			return func(path string) ([]byte, error) {
				f, err := Open(fsys, path, repo)
				if err != nil {
					return nil, err
				}
				defer f.Close()
				return afero.ReadAll(f)
			}
		},
	}
	for name, reader := range readers {
		t.Run(name, func(t *testing.T) {
			repo, path, secret := swapTree(t)
			read := reader(t, repo)
			stop := make(chan struct{})
			var done sync.WaitGroup
			swapper(t, repo, stop, &done)
			escapes, ok := 0, 0
			for range reads {
				b, err := read(path)
				if string(b) == secret {
					escapes++
				}
				if err == nil {
					ok++
				}
			}
			close(stop)
			done.Wait()
			if escapes > 0 {
				t.Errorf("%d of %d reads returned the outside file", escapes, reads)
			}
			t.Logf("%d of %d reads succeeded inside", ok, reads)
		})
	}
}
