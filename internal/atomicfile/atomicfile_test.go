package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/flow-run/flow/internal/faultfs"
	"github.com/spf13/afero"
)

func listDir(t *testing.T, fs afero.Fs, dir string) []string {
	t.Helper()
	names, err := afero.ReadDir(fs, dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fi := range names {
		out = append(out, fi.Name())
	}
	return out
}

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name string
		old  string // "" means no old file
		data string
	}{
		{"new file", "", "hello"},
		{"replace", "old content that is longer", "new"},
		{"empty", "old", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := afero.NewMemMapFs()
			if err := fs.MkdirAll("/run", 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.old != "" {
				if err := afero.WriteFile(fs, "/run/state.json", []byte(tt.old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(fs, "/run/state.json", []byte(tt.data), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := afero.ReadFile(fs, "/run/state.json")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.data {
				t.Errorf("content = %q, want %q", got, tt.data)
			}
			if names := listDir(t, fs, "/run"); len(names) != 1 {
				t.Errorf("directory holds %v, want only state.json", names)
			}
		})
	}
}

func TestWriteFileMissingDir(t *testing.T) {
	name := filepath.Join(t.TempDir(), "nope", "state.json")
	err := WriteFile(afero.NewOsFs(), name, []byte("x"), 0o644)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want one wrapping os.ErrNotExist", err)
	}
}

// TestWriteFileFaults fails each write, sync, create and rename in turn
// and checks that WriteFile either reports the fault and leaves the old
// file intact with no temporary file beside it, or (when the failed
// operation was the best-effort directory sync after the rename)
// succeeds with the new content.
func TestWriteFileFaults(t *testing.T) {
	const old, data = "old content", "new content"
	setup := func() afero.Fs {
		base := afero.NewMemMapFs()
		if err := afero.WriteFile(base, "/run/state.json", []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		return base
	}
	counter := faultfs.New(setup(), faultfs.Plan{})
	if err := WriteFile(counter, "/run/state.json", []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, op := range []faultfs.Op{faultfs.OpCreate, faultfs.OpWrite, faultfs.OpSync, faultfs.OpRename} {
		n := counter.Count(op)
		if n == 0 {
			t.Fatalf("WriteFile does no %v", op)
		}
		for k := 1; k <= n; k++ {
			for _, plan := range []faultfs.Plan{
				{Op: op, N: k},
				{Op: op, N: k, Sticky: true, Partial: true},
			} {
				t.Run(fmt.Sprintf("%v/%d/sticky=%v", op, k, plan.Sticky), func(t *testing.T) {
					base := setup()
					fs := faultfs.New(base, plan)
					err := WriteFile(fs, "/run/state.json", []byte(data), 0o644)
					got, _ := afero.ReadFile(base, "/run/state.json")
					dirSync := op == faultfs.OpSync && k == n
					if dirSync {
						if err != nil || string(got) != data {
							t.Fatalf("after failed directory sync: err = %v, content %q; want nil, %q", err, got, data)
						}
						return
					}
					if !errors.Is(err, faultfs.ErrInjected) {
						t.Fatalf("err = %v, want ErrInjected", err)
					}
					if string(got) != old {
						t.Errorf("old file = %q, want %q", got, old)
					}
					if !plan.Sticky {
						if names := listDir(t, base, "/run"); len(names) != 1 {
							t.Errorf("directory holds %v, want only state.json", names)
						}
					}
				})
			}
		}
	}
}

func TestWriteFileOs(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "state.json")
	fs := afero.NewOsFs()
	for _, data := range []string{"first", "second"} {
		if err := WriteFile(fs, name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != data {
			t.Errorf("content = %q, want %q", got, data)
		}
	}
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want 1", len(entries))
	}
}

func TestIsTemp(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/run/state.json.tmp-0123456789abcdef", true},
		{"state.json.tmp-0123456789abcdef", true},
		{"/run/state.json", false},
		{"/run/state.json.tmp-xyz", false},
		{"/run/.tmp-0123456789abcdef", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got := IsTemp(tt.path); got != tt.want {
				t.Errorf("IsTemp(%q) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}

// TestSyncs counts what each way of replacing a file syncs: WriteFile
// the content and the directory, Swap the content only (before its
// rename), Replace nothing.
func TestSyncs(t *testing.T) {
	for _, tt := range []struct {
		name  string
		write func(afero.Fs, string, []byte, os.FileMode) error
		syncs int
	}{
		{"WriteFile", WriteFile, 2},
		{"Swap", Swap, 1},
		{"Replace", Replace, 0},
	} {
		base := afero.NewMemMapFs()
		if err := afero.WriteFile(base, "/run/control.json", []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		fs := faultfs.New(base, faultfs.Plan{})
		if err := tt.write(fs, "/run/control.json", []byte("new"), 0o644); err != nil {
			t.Fatal(err)
		}
		if n := fs.Count(faultfs.OpSync); n != tt.syncs {
			t.Errorf("%s syncs %d times, want %d", tt.name, n, tt.syncs)
		}
		// A failed sync of the content leaves the old file: the rename
		// never comes before the content is on disk.
		if tt.syncs == 0 {
			continue
		}
		base = afero.NewMemMapFs()
		if err := afero.WriteFile(base, "/run/control.json", []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := tt.write(faultfs.New(base, faultfs.Plan{Op: faultfs.OpSync, N: 1}), "/run/control.json", []byte("new"), 0o644); !errors.Is(err, faultfs.ErrInjected) {
			t.Errorf("%s with its content's sync failing: %v", tt.name, err)
		}
		if got, _ := afero.ReadFile(base, "/run/control.json"); string(got) != "old" {
			t.Errorf("%s with its content's sync failing left %q", tt.name, got)
		}
	}
}
