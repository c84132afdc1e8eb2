package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/safefs"
)

// tree makes a repository with a file, a subdirectory, a FIFO and
// symlinks that stay inside or lead out, next to an outside directory.
func tree(t *testing.T) (repo, outside string) {
	t.Helper()
	base := t.TempDir()
	repo, outside = filepath.Join(base, "repo"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(repo, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(repo, "a.txt"), "hello")
	write(filepath.Join(repo, "sub", "b.txt"), "below")
	write(filepath.Join(outside, "secret"), "s3cr3t")
	links := map[string]string{
		"link_out":      outside,
		"link_secret":   filepath.Join(outside, "secret"),
		"link_in":       "sub/b.txt",
		"link_rel_out":  "../outside/secret",
		"sub/link_up":   "../a.txt",
		"link_zero":     "/dev/zero",
		"link_loop":     "link_loop",
		"link_dir_back": "sub/..",
		"link_sub":      "sub",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(repo, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(repo, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return repo, outside
}

func TestReadFile(t *testing.T) {
	repo, _ := tree(t)
	fsys := afero.NewOsFs()
	tests := []struct {
		path string
		want string
		err  any // a pointer to the wanted error type, or fs.ErrNotExist
	}{
		{path: "a.txt", want: "hello"},
		{path: "sub/b.txt", want: "below"},
		{path: "link_in", want: "below"},
		{path: "sub/link_up", want: "hello"},
		{path: "link_dir_back/a.txt", want: "hello"},
		{path: "link_sub/b.txt", want: "below"},
		{path: "link_sub/link_up", want: "hello"},
		{path: "link_out/secret", err: new(*EscapeError)},
		{path: "link_secret", err: new(*EscapeError)},
		{path: "link_rel_out", err: new(*EscapeError)},
		{path: "../outside/secret", err: new(*EscapeError)},
		{path: "link_zero", err: new(*EscapeError)},
		{path: "fifo", err: new(*NotRegularError)},
		{path: "sub", err: new(*NotRegularError)},
		{path: "missing", err: fs.ErrNotExist},
		{path: "link_out/missing", err: new(*EscapeError)},
		{path: "link_loop", err: "loop"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := ReadFile(fsys, filepath.Join(repo, tt.path), 1<<20, repo)
			switch want := tt.err.(type) {
			case nil:
				if err != nil || string(got) != tt.want {
					t.Fatalf("ReadFile = %q, %v; want %q", got, err, tt.want)
				}
			case **EscapeError:
				if !errors.As(err, want) {
					t.Fatalf("ReadFile error = %v; want an EscapeError", err)
				}
			case **NotRegularError:
				if !errors.As(err, want) {
					t.Fatalf("ReadFile error = %v; want a NotRegularError", err)
				}
			case error:
				if !errors.Is(err, want) {
					t.Fatalf("ReadFile error = %v; want %v", err, want)
				}
			case string:
				if err == nil {
					t.Fatalf("ReadFile = %q; want an error", got)
				}
			}
		})
	}
}

func TestDeviceInsideRootIsRefused(t *testing.T) {
	// /dev itself as the root: the link is inside, the device is not a
	// regular file, and nothing is read from it.
	_, err := ReadFile(afero.NewOsFs(), "/dev/zero", 10, "/dev")
	var nr *NotRegularError
	if !errors.As(err, &nr) {
		t.Fatalf("ReadFile(/dev/zero) error = %v; want NotRegularError", err)
	}
}

func TestTooLarge(t *testing.T) {
	repo, _ := tree(t)
	_, err := ReadFile(afero.NewOsFs(), filepath.Join(repo, "a.txt"), 4, repo)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 4 {
		t.Fatalf("ReadFile error = %v; want TooLargeError at 4", err)
	}
	if _, err := ReadFile(afero.NewOsFs(), filepath.Join(repo, "a.txt"), 5, repo); err != nil {
		t.Fatalf("a file of exactly the limit: %v", err)
	}
}

func TestExists(t *testing.T) {
	repo, _ := tree(t)
	fsys := afero.NewOsFs()
	for path, want := range map[string]bool{"a.txt": true, "missing": false, "sub": true, "fifo": true, "a.txt/x": false} {
		got, err := Exists(fsys, filepath.Join(repo, path), repo)
		if err != nil || got != want {
			t.Errorf("Exists(%s) = %v, %v; want %v", path, got, err, want)
		}
	}
	if _, err := Exists(fsys, filepath.Join(repo, "link_out", "secret"), repo); err == nil {
		t.Error("Exists through a link out of the root: no error")
	}
}

func TestMemMapFs(t *testing.T) {
	fsys := afero.NewMemMapFs()
	_ = afero.WriteFile(fsys, "/repo/a.txt", []byte("mem"), 0o644)
	got, err := ReadFile(fsys, "/repo/a.txt", 10, "/repo")
	if err != nil || string(got) != "mem" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	var esc *EscapeError
	if _, err := ReadFile(fsys, "/repo/../etc/passwd", 10, "/repo"); !errors.As(err, &esc) {
		t.Fatalf("ReadFile outside on MemMapFs: %v", err)
	}
	if _, err := ReadFile(fsys, "/repo", 10, "/repo"); err == nil {
		t.Fatal("ReadFile of a directory on MemMapFs: no error")
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{4096: "4 KiB", 1 << 20: "1 MiB", 64 << 20: "64 MiB", 100 << 10: "100 KiB", 1000: "1000 bytes", 16 << 20: "16 MiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q; want %q", n, got, want)
		}
	}
}

// TestRoot: a Root resolved once gives the same answers as ReadFile
// with the directory as the root.
func TestRoot(t *testing.T) {
	repo, _ := tree(t)
	fsys := afero.NewOsFs()
	r, err := NewRoot(fsys, repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.txt", "sub/b.txt", "link_in", "sub/link_up", "link_out/secret", "link_secret", "link_zero", "fifo", "sub", "missing", "sub/missing", "missing/deeper", "a.txt/below", "link_out/missing", "../outside/secret", "link_loop"} {
		path := filepath.Join(repo, p)
		want, werr := ReadFile(fsys, path, 1<<20, repo)
		got, gerr := r.ReadFile(path, 1<<20)
		if string(got) != string(want) || (werr == nil) != (gerr == nil) || (werr != nil && gerr != nil && errors.Is(werr, fs.ErrNotExist) != errors.Is(gerr, fs.ErrNotExist)) {
			t.Errorf("%s: Root.ReadFile = %q, %v; ReadFile = %q, %v", p, got, gerr, want, werr)
		}
		var we, ge *EscapeError
		if errors.As(werr, &we) != errors.As(gerr, &ge) {
			t.Errorf("%s: Root.ReadFile = %v; ReadFile = %v: one escapes, the other not", p, gerr, werr)
		}
	}
	var esc *EscapeError
	if _, err := r.ReadFile("/etc/hostname", 10); !errors.As(err, &esc) {
		t.Errorf("a path outside the root: %v", err)
	}
}

// TestOpenAfterResolution opens locations as if the resolution had seen
// a regular file there and something else had been put in its place
// since: the open itself refuses it, and returns at once for a FIFO.
func TestOpenAfterResolution(t *testing.T) {
	repo, _ := tree(t)
	fsys := afero.NewOsFs()
	root, err := OpenRoot(fsys, repo)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tests := []struct {
		name string
		real string
		want func(error) bool
	}{
		{"a FIFO", filepath.Join(repo, "fifo"), isNotRegular},
		{"a directory", filepath.Join(repo, "sub"), isNotRegular},
		{"a symlink at the end", filepath.Join(repo, "link_in"), isSymlink},
		{"a symlink on the way", filepath.Join(repo, "link_sub", "b.txt"), isSymlink},
		{"a symlink to /dev/zero", filepath.Join(repo, "link_zero"), isSymlink},
	}
	for _, tt := range tests {
		for where, in := range map[string]*Root{"below /": nil, "below the root": root} {
			t.Run(tt.name+" "+where, func(t *testing.T) {
				f, err := openTarget(fsys, tt.real, target{real: tt.real}, in)
				if err == nil {
					_ = f.Close()
				}
				if !tt.want(err) {
					t.Fatalf("open = %v", err)
				}
			})
		}
	}
	t.Run("a device", func(t *testing.T) {
		f, err := openTarget(fsys, "/dev/zero", target{real: "/dev/zero"}, nil)
		if err == nil {
			_ = f.Close()
		}
		if !isNotRegular(err) {
			t.Fatalf("open = %v", err)
		}
	})
}

func isNotRegular(err error) bool {
	var nr *NotRegularError
	return errors.As(err, &nr)
}

func isSymlink(err error) bool { return errors.Is(err, safefs.ErrSymlink) }

// TestRootSwapped: after the repository's name is given to a symlink
// out of it, a Root from OpenRoot reads the directory it opened, and
// one from NewRoot fails; neither reads the outside file.
func TestRootSwapped(t *testing.T) {
	repo, outside := tree(t)
	fsys := afero.NewOsFs()
	held, err := OpenRoot(fsys, repo)
	if err != nil {
		t.Fatal(err)
	}
	named, err := NewRoot(fsys, repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "a.txt"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(repo, repo+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, repo); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(repo, "a.txt")
	if got, err := held.ReadFile(path, 100); err != nil || string(got) != "hello" {
		t.Errorf("OpenRoot: ReadFile after the swap = %q, %v; want the file of the opened directory", got, err)
	}
	if got, err := named.ReadFile(path, 100); !isSymlink(err) {
		t.Errorf("NewRoot: ReadFile after the swap = %q, %v; want ErrSymlink", got, err)
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := held.ReadFile(path, 100); err == nil {
		t.Error("ReadFile after Close: no error")
	}
	if _, err := OpenRoot(fsys, filepath.Join(repo+".moved", "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenRoot of a missing directory = %v", err)
	}
}

func TestOpenDir(t *testing.T) {
	repo, _ := tree(t)
	for _, fsys := range []afero.Fs{afero.NewOsFs(), afero.NewBasePathFs(afero.NewOsFs(), "/")} {
		tests := []struct {
			path string
			want []string
			err  func(error) bool
		}{
			{path: "sub", want: []string{"b.txt", "link_up"}},
			{path: "link_sub", want: []string{"b.txt", "link_up"}},
			{path: "a.txt", err: func(err error) bool { return errors.Is(err, syscall.ENOTDIR) }},
			{path: "fifo", err: func(err error) bool { return errors.Is(err, syscall.ENOTDIR) }},
			{path: "missing", err: func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
			{path: "link_out", err: func(err error) bool { var e *EscapeError; return errors.As(err, &e) }},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%s", fsys.Name(), tt.path), func(t *testing.T) {
				d, err := OpenDir(fsys, filepath.Join(repo, tt.path), repo)
				if tt.err != nil {
					if err == nil {
						_ = d.Close()
					}
					if !tt.err(err) {
						t.Fatalf("OpenDir error = %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				names, err := d.Readdirnames(-1)
				slices.Sort(names)
				if err != nil || !slices.Equal(names, tt.want) {
					t.Errorf("names = %v, %v; want %v", names, err, tt.want)
				}
			})
		}
	}
}
