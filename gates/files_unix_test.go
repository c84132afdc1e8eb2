//go:build unix

package gates

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"
)

// osRepo makes, on the OS file system, a repository holding files, a
// FIFO, a large file and symlinks that stay inside it or lead out, to
// a directory beside it and to /dev/zero. It returns an Env reading it.
func osRepo(t *testing.T) *Env {
	t.Helper()
	base := t.TempDir()
	repo, outside := filepath.Join(base, "repo"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(repo, "docs"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{
		filepath.Join(repo, "a.txt"):        "hello",
		filepath.Join(repo, "r.json"):       `{"n": 1}`,
		filepath.Join(repo, "docs", "x.md"): "x",
		filepath.Join(outside, "secret"):    `{"secret": true}`,
		filepath.Join(outside, "s2"):        "s",
	} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		"link_out":    outside,
		"link_secret": filepath.Join(outside, "secret"),
		"link_rel":    "../outside/secret",
		"link_zero":   "/dev/zero",
		"link_in":     "a.txt",
		"link_docs":   "docs",
		"docs/up":     "../a.txt",
	} {
		if err := os.Symlink(target, filepath.Join(repo, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(repo, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	big, err := os.Create(filepath.Join(repo, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(MaxReadFile + 1); err != nil {
		t.Fatal(err)
	}
	big.Close()
	return &Env{FS: afero.NewOsFs(), Dir: repo}
}

// evalWithin evaluates src against env, failing the test rather than
// hanging when the evaluation blocks.
func evalWithin(t *testing.T, src string, env *Env) (any, error) {
	t.Helper()
	p, err := Compile(src, testScope, Any)
	if err != nil {
		t.Fatalf("Compile(%q): %v", src, err)
	}
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := p.Eval(env)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(30 * time.Second):
		t.Fatalf("Eval(%q) blocked", src)
		return nil, nil
	}
}

// TestFilesConfined checks that the file functions neither leave the
// repository through a symlink, nor block on a FIFO, nor read a device
// or an oversized file.
func TestFilesConfined(t *testing.T) {
	env := osRepo(t)
	tests := []struct {
		src  string
		want any
		err  string // a substring of the error; "" for none
	}{
		{src: `read_file("a.txt")`, want: "hello"},
		{src: `read_file("link_in")`, want: "hello"},
		{src: `read_file("docs/up")`, want: "hello"},
		{src: `read_file("link_docs/x.md")`, want: "x"},
		{src: `read_json("r.json").n`, want: 1.0},
		{src: `read_file("link_out/secret")`, err: "outside"},
		{src: `read_file("link_secret")`, err: "outside"},
		{src: `read_file("link_rel")`, err: "outside"},
		{src: `read_json("link_secret")`, err: "outside"},
		{src: `read_file("link_zero")`, err: "outside"},
		{src: `read_file("fifo")`, err: "is a FIFO, not a regular file"},
		{src: `read_json("fifo")`, err: "is a FIFO, not a regular file"},
		{src: `read_file("docs")`, err: "is a directory, not a regular file"},
		{src: `read_file("big")`, err: "larger than 4 MiB"},
		{src: `read_file("missing")`, err: "no such file or directory"},
		{src: `file_exists("a.txt")`, want: true},
		{src: `file_exists("fifo")`, want: true},
		{src: `file_exists("link_docs/x.md")`, want: true},
		{src: `file_exists("missing")`, want: false},
		{src: `file_exists("link_out/secret")`, err: "outside"},
		{src: `file_exists("link_out/missing")`, err: "outside"},
		{src: `glob("*")`, want: []string{"a.txt", "big", "docs", "fifo", "link_docs", "link_in", "r.json"}},
		{src: `glob("*/*")`, want: []string{"docs/up", "docs/x.md", "link_docs/up", "link_docs/x.md"}},
		{src: `glob("link_*")`, want: []string{"link_docs", "link_in"}},
		{src: `glob("link_docs/*.md")`, want: []string{"link_docs/x.md"}},
		{src: `glob("link_secret")`, want: []string{}},
		{src: `glob("fifo/*")`, want: []string{}},
		{src: `glob("fifo")`, want: []string{"fifo"}},
		{src: `glob("link_out/*")`, err: "outside"},
		{src: `glob("link_out/s*/x")`, err: "outside"},
		{src: `glob("link_out")`, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := evalWithin(t, tt.src, env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Eval(%q) = %v, %v; want error with %q", tt.src, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Eval(%q): %v", tt.src, err)
			}
			if s, ok := got.([]string); ok && len(s) == 0 {
				got = []string{}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Eval(%q) mismatch (-want +got):\n%s", tt.src, diff)
			}
		})
	}
}
