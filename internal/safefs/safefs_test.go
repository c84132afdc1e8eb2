//go:build unix

package safefs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

const secret = "ssh-ed25519 AAAA user@host\n"

// plant makes a root holding a run directory with files, a FIFO and
// symlinks planted by a hostile session, beside an outside directory
// holding a file that must never be written, read or removed through
// the root. It returns the root and the outside directory.
func plant(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "repo"), filepath.Join(base, "home")
	run := filepath.Join(root, "runs", "r1")
	for _, d := range []string{filepath.Join(run, "logs"), filepath.Join(run, "gone"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "authorized_keys"), secret)
	write(filepath.Join(run, "a.log"), "first\n")
	write(filepath.Join(run, "gone", "x"), "x")
	links := map[string]string{
		"logs/s.log":  filepath.Join(outside, "authorized_keys"), // leaf, outside
		"out":         outside,                                   // middle, outside
		"in.log":      "a.log",                                   // leaf, inside
		"in":          "logs",                                    // middle, inside
		"zero":        "/dev/zero",
		"dangling":    filepath.Join(outside, "new_file"),
		"gone/toHome": outside,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(run, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(run, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(outside, "authorized_keys"), filepath.Join(run, "hard.log")); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

// untouched fails the test if the outside directory holds anything but
// the secret file, unchanged.
func untouched(t *testing.T, outside string) {
	t.Helper()
	names, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0].Name() != "authorized_keys" {
		t.Errorf("outside directory holds %v; want only authorized_keys", names)
	}
	b, err := os.ReadFile(filepath.Join(outside, "authorized_keys"))
	if err != nil || string(b) != secret {
		t.Errorf("outside file = %q, %v; want it unchanged", b, err)
	}
	fi, err := os.Stat(filepath.Join(outside, "authorized_keys"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("outside file's mode = %v, %v; want 0644", fi, err)
	}
}

// both runs fn on an FS that tries openat2 first and on one that walks.
func both(t *testing.T, fn func(t *testing.T, fsys *FS, outside string)) {
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			root, outside := plant(t)
			fsys := New(root)
			fsys.walk = walk
			fn(t, fsys, outside)
			untouched(t, outside)
		})
	}
}

// isNotRegular reports whether err is a *NotRegularError.
func isNotRegular(err error) bool {
	var nr *NotRegularError
	return errors.As(err, &nr)
}

func TestOpenRefuses(t *testing.T) {
	const (
		rd     = os.O_RDONLY
		wr     = os.O_WRONLY
		create = os.O_RDWR | os.O_CREATE | os.O_TRUNC
		apnd   = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		excl   = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	)
	tests := []struct {
		name string
		path string
		flag int
		want func(error) bool
	}{
		{"append through a symlink at the leaf", "runs/r1/logs/s.log", apnd, is(ErrSymlink)},
		{"create over a symlink at the leaf", "runs/r1/logs/s.log", create, is(ErrSymlink)},
		{"exclusive create over a symlink", "runs/r1/logs/s.log", excl, is(fs.ErrExist)},
		{"read through a symlink at the leaf", "runs/r1/logs/s.log", rd, is(ErrSymlink)},
		{"create through a dangling symlink", "runs/r1/dangling", create, is(ErrSymlink)},
		{"create through a symlink in the middle", "runs/r1/out/new.log", create, is(ErrSymlink)},
		{"read through a symlink in the middle", "runs/r1/out/authorized_keys", rd, is(ErrSymlink)},
		{"read a symlink inside, at the leaf", "runs/r1/in.log", rd, is(ErrSymlink)},
		{"read through a symlink inside, in the middle", "runs/r1/in/x", rd, is(ErrSymlink)},
		{"create through a symlink inside, in the middle", "runs/r1/in/new.log", create, is(ErrSymlink)},
		{"a symlink to /dev/zero", "runs/r1/zero", rd, is(ErrSymlink)},
		{"read a FIFO", "runs/r1/fifo", rd, isNotRegular},
		{"append to a FIFO", "runs/r1/fifo", apnd, func(err error) bool { return isNotRegular(err) || errors.Is(err, unix.ENXIO) }},
		{"write a directory", "runs/r1/logs", wr, func(err error) bool { return isNotRegular(err) || errors.Is(err, unix.EISDIR) }},
		{"append to a hard link", "runs/r1/hard.log", apnd, is(ErrHardLinked)},
		{"truncate a hard link", "runs/r1/hard.log", create, is(ErrHardLinked)},
		{"an absolute path outside the root", "/etc/passwd", rd, is(ErrOutside)},
		{"a relative path out of the root", "../home/authorized_keys", rd, is(ErrOutside)},
		{"missing", "runs/r1/missing", rd, is(fs.ErrNotExist)},
		{"missing directory", "runs/r1/missing/x.log", create, is(fs.ErrNotExist)},
		{"below a file", "runs/r1/a.log/x", rd, is(unix.ENOTDIR)},
	}
	both(t, func(t *testing.T, fsys *FS, outside string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f, err := fsys.OpenFile(tt.path, tt.flag, 0o644)
				if err == nil {
					_ = f.Close()
				}
				if err == nil || !tt.want(err) {
					t.Fatalf("OpenFile(%s) error = %v", tt.path, err)
				}
				var pe *fs.PathError
				if !errors.As(err, &pe) {
					t.Errorf("error %v is not a *fs.PathError", err)
				}
			})
		}
	})
}

// is returns a test of whether an error is target.
func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func TestOpenWrites(t *testing.T) {
	both(t, func(t *testing.T, fsys *FS, outside string) {
		root := fsys.Root()
		read := func(p string) string {
			t.Helper()
			b, err := os.ReadFile(filepath.Join(root, p))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		// Append to an existing file, by an absolute and a relative name.
		for _, name := range []string{filepath.Join(root, "runs/r1/a.log"), "runs/r1/a.log"} {
			f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(f, "more\n"); err != nil {
				t.Fatal(err)
			}
			if f.Name() != filepath.Join(root, "runs/r1/a.log") {
				t.Errorf("Name() = %s", f.Name())
			}
			_ = f.Close()
		}
		if got := read("runs/r1/a.log"); got != "first\nmore\nmore\n" {
			t.Errorf("after appends: %q", got)
		}
		// Create truncates an existing file; a new one is created.
		if err := afero.WriteFile(fsys, "runs/r1/a.log", []byte("new"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := read("runs/r1/a.log"); got != "new" {
			t.Errorf("after WriteFile: %q", got)
		}
		f, err := fsys.Create("runs/r1/logs/b.1.1.log")
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		if _, err := fsys.OpenFile("runs/r1/logs/b.1.1.log", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
			t.Errorf("exclusive create of an existing file: %v", err)
		}
		// A directory opens read-only, to be listed.
		names, err := afero.ReadDir(fsys, "runs/r1/logs")
		if err != nil || len(names) != 2 {
			t.Errorf("ReadDir = %v, %v", names, err)
		}
		got, err := afero.ReadFile(fsys, filepath.Join(root, "runs/r1/a.log"))
		if err != nil || string(got) != "new" {
			t.Errorf("ReadFile = %q, %v", got, err)
		}
		// A regular file is handed out blocking.
		f, err = fsys.Open("runs/r1/a.log")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		flags, err := unix.FcntlInt(f.(*os.File).Fd(), unix.F_GETFL, 0)
		if err != nil || flags&unix.O_NONBLOCK != 0 {
			t.Errorf("flags of an open regular file: %#x, %v", flags, err)
		}
	})
}

func TestDirectories(t *testing.T) {
	both(t, func(t *testing.T, fsys *FS, outside string) {
		root := fsys.Root()
		if err := fsys.MkdirAll("runs/r1/reports/archive", 0o755); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(root, "runs/r1/reports/archive")); err != nil || !fi.IsDir() {
			t.Errorf("MkdirAll made %v, %v", fi, err)
		}
		if err := fsys.MkdirAll("runs/r1/reports", 0o755); err != nil {
			t.Errorf("MkdirAll of an existing directory: %v", err)
		}
		if err := fsys.MkdirAll(root, 0o755); err != nil {
			t.Errorf("MkdirAll of the root: %v", err)
		}
		for _, p := range []string{"runs/r1/out/sub", "runs/r1/in/sub", "runs/r1/out"} {
			if err := fsys.MkdirAll(p, 0o755); !errors.Is(err, ErrSymlink) {
				t.Errorf("MkdirAll(%s) = %v; want ErrSymlink", p, err)
			}
			if err := fsys.Mkdir(p, 0o755); err == nil {
				t.Errorf("Mkdir(%s) succeeded", p)
			}
		}
		if err := fsys.MkdirAll("runs/r1/a.log/x", 0o755); !errors.Is(err, unix.ENOTDIR) {
			t.Errorf("MkdirAll below a file = %v", err)
		}
		if err := fsys.Mkdir("runs/r1/new", 0o700); err != nil {
			t.Error(err)
		}
		if err := fsys.Mkdir("runs/r1/new", 0o700); !errors.Is(err, fs.ErrExist) {
			t.Errorf("Mkdir of an existing directory: %v", err)
		}
	})
}

func TestRemoveRename(t *testing.T) {
	both(t, func(t *testing.T, fsys *FS, outside string) {
		root := fsys.Root()
		exists := func(p string) bool {
			_, err := os.Lstat(filepath.Join(root, p))
			return err == nil
		}
		// A symlink is removed itself.
		if err := fsys.Remove("runs/r1/logs/s.log"); err != nil || exists("runs/r1/logs/s.log") {
			t.Errorf("Remove of a symlink: %v", err)
		}
		if err := fsys.Remove("runs/r1/out/authorized_keys"); !errors.Is(err, ErrSymlink) {
			t.Errorf("Remove through a symlink = %v; want ErrSymlink", err)
		}
		if err := fsys.RemoveAll("runs/r1/out/authorized_keys"); !errors.Is(err, ErrSymlink) {
			t.Errorf("RemoveAll through a symlink = %v; want ErrSymlink", err)
		}
		// RemoveAll removes a symlink to a directory, not the directory.
		if err := fsys.RemoveAll("runs/r1/gone"); err != nil || exists("runs/r1/gone") {
			t.Errorf("RemoveAll = %v", err)
		}
		if err := fsys.RemoveAll("runs/r1/gone"); err != nil {
			t.Errorf("RemoveAll of nothing = %v", err)
		}
		if err := fsys.RemoveAll(root); !errors.Is(err, ErrRoot) {
			t.Errorf("RemoveAll of the root = %v", err)
		}
		// Rename over a symlink replaces the link.
		if err := os.Symlink(filepath.Join(outside, "authorized_keys"), filepath.Join(root, "runs/r1/state.json")); err != nil {
			t.Fatal(err)
		}
		if err := afero.WriteFile(fsys, "runs/r1/state.json.tmp", []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Rename("runs/r1/state.json.tmp", "runs/r1/state.json"); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(root, "runs/r1/state.json")); err != nil || string(b) != "{}" {
			t.Errorf("after Rename: %q, %v", b, err)
		}
		if err := fsys.Rename("runs/r1/a.log", "runs/r1/out/a.log"); !errors.Is(err, ErrSymlink) {
			t.Errorf("Rename into a symlinked directory = %v", err)
		}
		if err := fsys.Rename("runs/r1/out/authorized_keys", "runs/r1/stolen"); !errors.Is(err, ErrSymlink) {
			t.Errorf("Rename out of a symlinked directory = %v", err)
		}
	})
}

func TestStatChange(t *testing.T) {
	both(t, func(t *testing.T, fsys *FS, outside string) {
		if _, err := fsys.Stat("runs/r1/logs/s.log"); !errors.Is(err, ErrSymlink) {
			t.Errorf("Stat of a symlink = %v", err)
		}
		fi, lstat, err := fsys.LstatIfPossible("runs/r1/logs/s.log")
		if err != nil || !lstat || fi.Mode()&fs.ModeSymlink == 0 || fi.Name() != "s.log" {
			t.Errorf("Lstat of a symlink = %v, %v, %v", fi, lstat, err)
		}
		if _, err := fsys.Stat("runs/r1/out/authorized_keys"); !errors.Is(err, ErrSymlink) {
			t.Errorf("Stat through a symlink = %v", err)
		}
		fi, err = fsys.Stat("runs/r1/fifo")
		if err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("Stat of a FIFO = %v, %v", fi, err)
		}
		fi, err = fsys.Stat("runs/r1/a.log")
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != 6 || fi.Mode().Perm() != 0o644 {
			t.Errorf("Stat of a file = %v, %v", fi, err)
		}
		fi, err = fsys.Stat(fsys.Root())
		if err != nil || !fi.IsDir() {
			t.Errorf("Stat of the root = %v, %v", fi, err)
		}
		if err := fsys.Chmod("runs/r1/logs/s.log", 0o666); !errors.Is(err, ErrSymlink) {
			t.Errorf("Chmod of a symlink = %v", err)
		}
		if err := fsys.Chmod("runs/r1/a.log", 0o600); err != nil {
			t.Error(err)
		}
		if fi, _ := fsys.Stat("runs/r1/a.log"); fi == nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("after Chmod: %v", fi)
		}
		old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		before, _ := os.Stat(filepath.Join(outside, "authorized_keys"))
		if err := fsys.Chtimes("runs/r1/logs/s.log", old, old); err != nil {
			t.Error(err)
		}
		if after, _ := os.Stat(filepath.Join(outside, "authorized_keys")); !after.ModTime().Equal(before.ModTime()) {
			t.Error("Chtimes of a symlink changed its target")
		}
		if err := fsys.Chtimes("runs/r1/a.log", time.Time{}, old); err != nil {
			t.Error(err)
		}
		if fi, _ := fsys.Stat("runs/r1/a.log"); fi == nil || !fi.ModTime().Equal(old) {
			t.Errorf("after Chtimes: %v", fi)
		}
		if err := fsys.Chown("runs/r1/logs/s.log", os.Getuid(), os.Getgid()); err != nil {
			t.Error(err)
		}
	})
}

// TestWalk: afero.Walk lists the tree, symlinks as themselves.
func TestWalk(t *testing.T) {
	root, _ := plant(t)
	var got []string
	err := afero.Walk(New(root), "runs/r1", func(p string, fi fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			got = append(got, p+"@")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"runs/r1/dangling@", "runs/r1/gone/toHome@", "runs/r1/in.log@", "runs/r1/in@", "runs/r1/logs/s.log@", "runs/r1/out@", "runs/r1/zero@"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("symlinks walked: %v; want %v", got, want)
	}
}
