package gates

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"
)

// TestGlobMemMapFs checks that on a file system without symlinks glob
// matches what afero.Glob, which it used to call, matches.
func TestGlobMemMapFs(t *testing.T) {
	fs := afero.NewMemMapFs()
	for _, name := range []string{"a.md", "b.txt", ".hidden", "docs/a.md", "docs/b.md", "docs/sub/c.md",
		"src/x/y.go", "src/z/y.go", "src/z/w.txt", "we[ird]/f", "q?/f"} {
		if err := afero.WriteFile(fs, filepath.Join("/repo", name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := fileFuncs{fs: fs, dir: "/repo"}
	for _, pattern := range []string{"*", "*.md", "docs/*", "docs/*.md", "*/*.md", "*/*/*", "src/*/y.go",
		"src/?/*.txt", "[a-b].*", "docs", "docs/sub/c.md", "nope/*", "nope", `we\[ird\]/f`, "q\\?/*", "./docs/../*.md", "."} {
		t.Run(pattern, func(t *testing.T) {
			got, err := f.glob(pattern)
			if err != nil {
				t.Fatalf("glob(%q): %v", pattern, err)
			}
			matches, err := afero.Glob(fs, filepath.Join("/repo", pattern))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{}
			for _, m := range matches {
				rel, _ := filepath.Rel("/repo", m)
				want = append(want, filepath.ToSlash(rel))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("glob(%q) mismatch (-afero.Glob +glob):\n%s", pattern, diff)
			}
		})
	}
	if _, err := f.glob("docs/["); err == nil || !strings.Contains(err.Error(), "syntax error in pattern") {
		t.Errorf("glob(docs/[) error = %v, want syntax error in pattern", err)
	}
}

// TestGlobLimits checks that glob refuses too many matches, and too
// many directory entries read, before building its result.
func TestGlobLimits(t *testing.T) {
	fs := afero.NewMemMapFs()
	for i := range MaxGlob + 1 {
		if err := afero.WriteFile(fs, filepath.Join("/repo", "d", strings.Repeat("x", 1+i%7)+string(rune('a'+i%26))+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := fileFuncs{fs: fs, dir: "/repo"}
	if _, err := f.glob("d/*"); err == nil || !strings.Contains(err.Error(), "more than 10000 matches") {
		t.Errorf("glob(d/*) error = %v, want more than 10000 matches", err)
	}
	if got, err := f.glob("d/*a0"); err != nil || len(got) != 1 {
		t.Errorf("glob(d/*a0) = %v, %v; want one match", got, err)
	}
}

// TestFileReadsCharged checks that what the file functions return is
// charged to the evaluation's budget, so that reading a large file in
// a loop fails instead of holding many copies.
func TestFileReadsCharged(t *testing.T) {
	env := testEnv()
	afero.WriteFile(env.FS, "/repo/large", make([]byte, 3<<20), 0o644)
	afero.WriteFile(env.FS, "/repo/large.json", []byte("["+strings.Repeat("1,", 1<<20)+"1]"), 0o644)
	for i := range 1000 {
		afero.WriteFile(env.FS, "/repo/many/"+strings.Repeat("x", 1000)+strconv.Itoa(i), nil, 0o644)
	}
	// Reading a file allocates about twice its size on the way
	// (io.ReadAll grows its buffer), which the budget does not count.
	const maxAlloc = 2 * maxHostileAlloc
	for _, src := range []string{
		`len(map(1..20, read_file("large")))`,
		`len(read_json("large.json"))`,
		`len(map(1..100, glob("many/*")))`,
	} {
		t.Run(src, func(t *testing.T) {
			p, err := Compile(src, testScope, Any)
			if err != nil {
				t.Fatal(err)
			}
			var got any
			n := allocated(func() { got, err = p.Eval(env) })
			if err == nil || !strings.Contains(err.Error(), "memory budget exceeded") {
				t.Errorf("Eval(%q) = %v, %v; want memory budget exceeded", src, got, err)
			}
			if n > maxAlloc {
				t.Errorf("Eval(%q) allocated %d MiB, want at most %d MiB", src, n>>20, maxAlloc>>20)
			}
		})
	}
}
