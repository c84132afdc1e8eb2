package config

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

// everyPart parses the steps of every file in parts of one item.
var everyPart = &chunking{minBytes: 0, items: 1}

// loadBoth loads data whole and with its steps parsed in parts: the
// result must be the same, workflow or diagnostics.
func loadBoth(t testing.TB, name string, data []byte) {
	t.Helper()
	mem := afero.NewMemMapFs()
	whole, werr := load(mem, "/w/"+name, "yaml", data, Options{})
	parts, perr := load(mem, "/w/"+name, "yaml", data, Options{chunks: everyPart})
	if fmt.Sprint(werr) != fmt.Sprint(perr) {
		t.Fatalf("%s: whole: %v\nin parts: %v", name, werr, perr)
	}
	if werr != nil {
		return
	}
	ws, err1 := whole.Spec()
	ps, err2 := parts.Spec()
	if err1 != nil || err2 != nil || !bytes.Equal(ws, ps) {
		t.Fatalf("%s: the spec differs (%v, %v)\nwhole:\n%s\nin parts:\n%s", name, err1, err2, ws, ps)
	}
	if fmt.Sprint(whole.Warnings) != fmt.Sprint(parts.Warnings) || whole.Dialect != parts.Dialect ||
		fmt.Sprint(whole.Notes) != fmt.Sprint(parts.Notes) {
		t.Fatalf("%s: warnings, dialect or notes differ:\n%v %s %v\n%v %s %v", name, whole.Warnings, whole.Dialect, whole.Notes,
			parts.Warnings, parts.Dialect, parts.Notes)
	}
	for _, s := range whole.AllSteps() {
		p := parts.Step(s.ID)
		if p == nil || p.Pos != s.Pos || p.Run != nil && s.Run != nil && p.Run.Pos != s.Run.Pos {
			t.Fatalf("%s: step %s at %+v whole, %+v in parts", name, s.ID, s.Pos, p)
		}
	}
}

// chunkCases are files whose steps are, or are not, parsed in parts.
var chunkCases = map[string]struct {
	src   string
	parts bool // whether the steps are parsed in parts
}{
	"plain":                        {"name: x\nsteps:\n  - id: a\n    run: \"true\"\n  - id: b\n    run: echo {{ vars.v }}\nvars:\n  v: \"1\"\n", true},
	"at column 1":                  {"steps:\n- id: a\n  run: \"true\"\n- id: b\n  run: \"true\"\nname: x\n", true},
	"comments and blank lines":     {"# top\nname: x\nsteps:  # the steps\n\n  # first\n  - id: a   # a\n    run: |\n      echo one\n\n      echo - two\n  - id: b\n\n    run: >\n      folded\n      - text\n# between\n  - id: c\n    run: \"true\"\ndescription: d\n", true},
	"crlf":                         {"name: x\r\nsteps:\r\n  - id: a\r\n    run: \"true\"\r\n  - id: b\r\n    run: \"true\"\r\n", true},
	"deeper":                       {"name: x\nsteps:\n    -   id: a\n        run: \"true\"\n    -   id: b\n        needs: [a]\n        run: \"true\"\n", true},
	"anchor inside an item":        {"name: x\nsteps:\n  - id: a\n    run: &r \"true\"\n    description: *r\n  - id: b\n    run: \"true\"\n", true},
	"a loop":                       {"name: x\nsteps:\n  - id: l\n    for_each: [1, 2]\n    steps:\n      - id: a\n        run: echo {{ item }}\n      - id: b\n        run: \"true\"\n  - id: z\n    run: \"true\"\n", true},
	"errors inside":                {"name: x\nsteps:\n  - id: a\n    run: \"true\"\n    gate:\n      pass: exit_code ==\n  - id: B\n    rn: x\n  - id: c\n    needs: [nope]\n    run: \"true\"\n", true},
	"alias across items":           {"name: x\nsteps:\n  - id: a\n    run: &r \"true\"\n  - id: b\n    run: *r\n", false},
	"anchor in the head":           {"name: x\nx-run: &r \"true\"\nsteps:\n  - id: a\n    run: *r\n  - id: b\n    run: \"true\"\n", false},
	"quoted across an item's line": {"name: x\nsteps:\n  - id: a\n    run: \"echo\n  - id: b\"\n  - id: c\n    run: \"true\"\n", false},
	"flow list":                    {"name: x\nsteps: [{id: a, run: \"true\"}, {id: b, run: \"true\"}]\n", false},
	"two steps keys":               {"name: x\nsteps:\n  - id: a\n    run: \"true\"\n  - id: b\n    run: \"true\"\nsteps:\n  - id: c\n    run: \"true\"\n", false},
	"a second document":            {"name: x\nsteps:\n  - id: a\n    run: \"true\"\n  - id: b\n    run: \"true\"\n---\nname: y\n", false},
	"a tab":                        {"name: x\nsteps:\n  - id: a\n\trun: \"true\"\n  - id: b\n    run: \"true\"\n", false},
	"orchestrator's":               {"name: x\nsteps:\n  - id: a\n    agent: claude\n    prompt: p.md\n  - id: b\n    agent: claude\n    prompt: q.md\n", false},
	"one item":                     {"name: x\nsteps:\n  - id: a\n    run: \"true\"\n", false},
	"under-indented":               {"name: x\nsteps:\n  - id: a\n    run: \"true\"\n - id: b\n    run: \"true\"\n", false},
}

// TestChunkedParseIsTheSame: every workflow of the repository and every
// case above load to the same model and diagnostics whole and in parts,
// and the cases meant to be parsed in parts are.
func TestChunkedParseIsTheSame(t *testing.T) {
	for name, c := range chunkCases {
		loadBoth(t, name+".yaml", []byte(c.src))
		_, _, ok := chunkedRoot(newSource("x.yaml", []byte(c.src)), 1)
		if ok != c.parts {
			t.Errorf("%s: parsed in parts %v, want %v", name, ok, c.parts)
		}
	}
	n := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" || strings.HasSuffix(path, ".test.yaml") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		loadBoth(t, filepath.Base(path), data)
		n++
		return nil
	})
	if err != nil || n < 20 {
		t.Fatalf("%d files: %v", n, err)
	}
}

// TestChunkedParseLarge: a large file of plain steps is parsed in parts
// with the default sizes, to the same model.
func TestChunkedParseLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: big\nsteps:\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "  - id: s%d\n    run: echo %d # step %d\n", i, i, i)
	}
	data := []byte(b.String())
	if _, _, ok := chunkedRoot(newSource("big.yaml", data), defaultChunks.items); !ok {
		t.Fatal("not parsed in parts")
	}
	loadBoth(t, "big.yaml", data)
}

func FuzzChunkedParse(f *testing.F) {
	for _, c := range chunkCases {
		f.Add([]byte(c.src))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		loadBoth(t, "f.yaml", data)
	})
}
