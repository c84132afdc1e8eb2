//go:build unix

package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/confine"
	"github.com/spf13/afero"
)

// loadSoon loads a workflow, failing the test rather than hanging when
// the load blocks (on a FIFO, say).
func loadSoon(t *testing.T, path string, o config.Options) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := config.LoadWith(afero.NewOsFs(), path, o)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("LoadWith(%s) blocks", path)
		return nil
	}
}

// TestPromptFileOnDisk checks the refusals that need a real file system:
// symlinks out of the workflow's directory, a FIFO and a device.
func TestPromptFileOnDisk(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "flows"), filepath.Join(base, "outside")
	for _, d := range []string{dir, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cr3t"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.md"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"link_out":  filepath.Join(outside, "secret"),
		"dir_out":   outside,
		"link_zero": "/dev/zero",
		"link_in":   "ok.md",
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pf, repo, want string
	}{
		{pf: "link_in", want: ""},
		{pf: "link_out", want: "is outside the workflow's directory (it resolves to " + filepath.Join(outside, "secret") + ")"},
		{pf: "dir_out/secret", want: "is outside"},
		{pf: "link_zero", want: "is outside"},
		{pf: "/dev/zero", want: "/dev/zero is outside"},
		{pf: "fifo", want: "is a FIFO, not a regular file"},
		{pf: "/dev/zero", repo: "/dev", want: "is a device, not a regular file"},
		{pf: "link_out", repo: outside, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.pf+" "+tt.repo, func(t *testing.T) {
			if strings.HasPrefix(tt.pf, "/dev/") {
				if _, err := os.Stat(tt.pf); err != nil {
					t.Skip(err)
				}
			}
			path := filepath.Join(dir, "wf.yaml")
			if err := os.WriteFile(path, promptWorkflow(tt.pf), 0o644); err != nil {
				t.Fatal(err)
			}
			err := loadSoon(t, path, config.Options{Repo: tt.repo})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("LoadWith: %v", err)
				}
				return
			}
			var ds config.Diagnostics
			if !errors.As(err, &ds) || len(ds) != 1 || ds[0].Pos.Line != 6 || ds[0].Pos.Col != 18 || !strings.Contains(ds[0].Message, tt.want) {
				t.Fatalf("got %v, want one diagnostic at 6:18 with %q", err, tt.want)
			}
		})
	}
}

// TestWorkflowNotRegular checks that a workflow path naming a FIFO or a
// device is refused without blocking or reading it.
func TestWorkflowNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub.yaml")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, zero, sub} {
		err := loadSoon(t, path, config.Options{})
		var nr *confine.NotRegularError
		var ds config.Diagnostics
		if !errors.As(err, &nr) || errors.As(err, &ds) {
			t.Errorf("LoadWith(%s) = %v; want a NotRegularError", filepath.Base(path), err)
		}
	}
}
