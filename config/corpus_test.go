package config_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/spf13/afero"
)

// corpusDir holds the broken workflows; see its README.md.
const corpusDir = "../testdata/config"

// wantComment is a want comment: # want [LINE]:COL "text".
var wantComment = regexp.MustCompile(`#\s*want\s+(\d*):(\d+)\s+("(?:[^"\\]|\\.)*")`)

type want struct {
	line, col int
	text      string
}

// parseWants reads the want comments of a corpus file.
func parseWants(t *testing.T, data []byte) []want {
	t.Helper()
	var out []want
	for i, line := range strings.Split(string(data), "\n") {
		for _, m := range wantComment.FindAllStringSubmatch(line, -1) {
			w := want{line: i + 1}
			if m[1] != "" {
				w.line, _ = strconv.Atoi(m[1])
			}
			w.col, _ = strconv.Atoi(m[2])
			text, err := strconv.Unquote(m[3])
			if err != nil {
				t.Fatalf("line %d: bad want text %s: %v", i+1, m[3], err)
			}
			w.text = text
			out = append(out, w)
		}
	}
	return out
}

func TestBrokenCorpus(t *testing.T) {
	fs := afero.NewOsFs()
	files, err := afero.Glob(fs, filepath.Join(corpusDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range files {
		ext := filepath.Ext(path)
		if ext != ".yaml" && ext != ".hcl" {
			continue
		}
		n++
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := afero.ReadFile(fs, path)
			if err != nil {
				t.Fatal(err)
			}
			wants := parseWants(t, data)
			if len(wants) == 0 {
				t.Fatal("no want comments")
			}
			_, err = config.Load(fs, path)
			var ds config.Diagnostics
			if !errors.As(err, &ds) {
				t.Fatalf("Load: got %v, want diagnostics", err)
			}
			matched := make([]bool, len(ds))
		wants:
			for _, w := range wants {
				for i, d := range ds {
					if !matched[i] && d.Pos.Line == w.line && d.Pos.Col == w.col && strings.Contains(d.Message, w.text) {
						matched[i] = true
						continue wants
					}
				}
				t.Errorf("missing %d:%d %q", w.line, w.col, w.text)
			}
			for i, d := range ds {
				if !matched[i] {
					t.Errorf("unexpected %d:%d %q", d.Pos.Line, d.Pos.Col, d.Message)
				}
				if d.Pos.File != path {
					t.Errorf("diagnostic %q in file %q, want %q", d.Message, d.Pos.File, path)
				}
			}
			if t.Failed() {
				t.Logf("got:\n%s", fmt.Sprint(ds.Error()))
			}
		})
	}
	if n < 18 {
		t.Errorf("corpus has %d files, want at least 18", n)
	}
}
