package countfs

import (
	"os"
	"testing"

	"github.com/spf13/afero"
)

func TestCountsOpenings(t *testing.T) {
	fs := New(afero.NewMemMapFs())
	if err := afero.WriteFile(fs, "/a/f", []byte("x"), 0o644); err != nil { // OpenFile
		t.Fatal(err)
	}
	if _, err := afero.ReadFile(fs, "/a/f"); err != nil { // Open
		t.Fatal(err)
	}
	if f, err := fs.OpenFile("/a/./f", os.O_RDONLY, 0); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	if _, err := fs.Stat("/a/f"); err != nil { // not an opening
		t.Fatal(err)
	}
	if f, err := fs.Create("/a/g"); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	if n := fs.Opens("/a/f"); n != 3 {
		t.Errorf("/a/f opened %d times, want 3", n)
	}
	if n := fs.Opens("/a/g"); n != 1 {
		t.Errorf("/a/g opened %d times, want 1", n)
	}
	fs.Reset()
	if n := fs.Opens("/a/f"); n != 0 {
		t.Errorf("after Reset: %d", n)
	}
}
