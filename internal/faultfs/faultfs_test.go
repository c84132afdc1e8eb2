package faultfs

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/spf13/afero"
)

// script does a fixed mix of operations and returns the first error.
func script(fs afero.Fs) error {
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		return err
	}
	f, err := fs.Create("/d/a")
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write([]byte("hello ")); err != nil {
		return err
	}
	if _, err := f.WriteString("world"); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := fs.Rename("/d/a", "/d/b"); err != nil {
		return err
	}
	g, err := fs.OpenFile("/d/c", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer g.Close()
	if _, err := g.WriteAt([]byte("x"), 0); err != nil {
		return err
	}
	if err := g.Truncate(0); err != nil {
		return err
	}
	if err := g.Sync(); err != nil {
		return err
	}
	return fs.Remove("/d/b")
}

func TestCountWithoutFault(t *testing.T) {
	fs := New(afero.NewMemMapFs(), Plan{})
	if err := script(fs); err != nil {
		t.Fatal(err)
	}
	want := map[Op]int{OpWrite: 4, OpSync: 2, OpRename: 1, OpCreate: 2, OpRemove: 1, OpMkdir: 1}
	for op, n := range want {
		if got := fs.Count(op); got != n {
			t.Errorf("Count(%v) = %d, want %d", op, got, n)
		}
	}
	if fs.Failed() {
		t.Error("Failed() = true with a zero plan")
	}
}

func TestEveryFault(t *testing.T) {
	counter := New(afero.NewMemMapFs(), Plan{})
	if err := script(counter); err != nil {
		t.Fatal(err)
	}
	for _, op := range []Op{OpWrite, OpSync, OpRename, OpCreate, OpRemove, OpMkdir} {
		for k := 1; k <= counter.Count(op); k++ {
			t.Run(fmt.Sprintf("%v/%d", op, k), func(t *testing.T) {
				fs := New(afero.NewMemMapFs(), Plan{Op: op, N: k})
				err := script(fs)
				if !errors.Is(err, ErrInjected) {
					t.Fatalf("err = %v, want ErrInjected", err)
				}
				if !fs.Failed() {
					t.Fatal("Failed() = false after the fault")
				}
			})
		}
	}
}

func TestSticky(t *testing.T) {
	tests := []struct {
		name      string
		sticky    bool
		wantLater bool
	}{
		{"one-shot", false, false},
		{"sticky", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := New(afero.NewMemMapFs(), Plan{Op: OpSync, N: 1, Sticky: tt.sticky})
			f, err := fs.Create("/a")
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); !errors.Is(err, ErrInjected) {
				t.Fatalf("Sync = %v, want ErrInjected", err)
			}
			_, err = f.Write([]byte("x"))
			if got := errors.Is(err, ErrInjected); got != tt.wantLater {
				t.Errorf("later Write failed = %v, want %v", got, tt.wantLater)
			}
			err = fs.Chmod("/a", 0o600)
			if got := errors.Is(err, ErrInjected); got != tt.wantLater {
				t.Errorf("later Chmod failed = %v, want %v", got, tt.wantLater)
			}
			if _, err := fs.Stat("/a"); err != nil {
				t.Errorf("Stat after fault = %v, want nil", err)
			}
		})
	}
}

func TestPartialWrite(t *testing.T) {
	base := afero.NewMemMapFs()
	fs := New(base, Plan{Op: OpWrite, N: 2, Partial: true})
	f, err := fs.Create("/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("line1\n")); err != nil {
		t.Fatal(err)
	}
	n, err := f.Write([]byte("line2\n"))
	if !errors.Is(err, ErrInjected) || n != 3 {
		t.Fatalf("Write = %d, %v; want 3, ErrInjected", n, err)
	}
	f.Close()
	got, _ := afero.ReadFile(base, "/a")
	if string(got) != "line1\nlin" {
		t.Errorf("file = %q, want %q", got, "line1\nlin")
	}
}
