package config_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/spf13/afero"
)

// oneDiag parses src and returns its only diagnostic.
func oneDiag(t *testing.T, format, src string) config.Diagnostic {
	t.Helper()
	_, err := config.Parse(afero.NewMemMapFs(), "/wf."+format, format, []byte(src))
	var ds config.Diagnostics
	if !errors.As(err, &ds) || len(ds) != 1 {
		t.Fatalf("got %v, want one diagnostic\n%.300s", err, src)
	}
	return ds[0]
}

// TestCaps checks the refusals of what a workflow may not be: each
// source must yield one diagnostic, at the line and column given, whose
// message holds the text given.
func TestCaps(t *testing.T) {
	long := strings.Repeat("a", config.MaxStepIDLen+1)
	fits := strings.Repeat("a", config.MaxStepIDLen)
	tests := []struct {
		name, format, src string
		line, col         int
		text              string
	}{
		{"yaml step id too long", "yaml", "name: x\nsteps:\n  - id: " + long + "\n    run: a\n", 3, 9, "at most 48"},
		{"hcl step id too long", "hcl", "name = \"x\"\nstep \"" + long + "\" {\n  run = \"a\"\n}\n", 2, 6, "at most 48"},
		{"yaml second document", "yaml", "name: x\nsteps:\n  - {id: a, run: a}\n---\nname: y\n", 4, 1, "second YAML document"},
		{"yaml empty second document", "yaml", "name: x\nsteps:\n  - {id: a, run: a}\n...\n---\n", 5, 1, "second YAML document"},
		{"yaml invalid UTF-8", "yaml", "name: x\nsteps:\n  - id: a\n    run: echo é\xff\n", 4, 16, "invalid UTF-8: byte 0xff"},
		{"yaml invalid UTF-8 in a comment", "yaml", "name: x\n# caf\xe9\nsteps:\n  - {id: a, run: a}\n", 2, 6, "invalid UTF-8: byte 0xe9"},
		{"hcl invalid UTF-8", "hcl", "name = \"x\"\nstep \"a\" {\n  run = \"日本\xc3\"\n}\n", 3, 12, "invalid UTF-8: byte 0xc3"},
		{"hcl invalid UTF-8 in a comment", "hcl", "name = \"x\"\n  # \x80\nstep \"a\" { run = \"a\" }\n", 2, 5, "invalid UTF-8: byte 0x80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := oneDiag(t, tt.format, tt.src)
			if d.Pos.Line != tt.line || d.Pos.Col != tt.col || !strings.Contains(d.Message, tt.text) {
				t.Errorf("got %d:%d %q, want %d:%d %q", d.Pos.Line, d.Pos.Col, d.Message, tt.line, tt.col, tt.text)
			}
		})
	}
	for _, src := range []string{
		"name: x\nsteps:\n  - id: " + fits + "\n    run: a\n",
		"---\nname: x\nsteps:\n  - {id: a, run: a}\n...\n",
		"name = \"x\"\nstep \"" + fits + "\" {\n  run = \"a\"\n}\n",
	} {
		format := "yaml"
		if strings.HasPrefix(src, "name =") {
			format = "hcl"
		}
		parse(t, format, src)
	}
}

// manySteps writes a workflow of n steps in the format.
func manySteps(format string, n int) []byte {
	var b strings.Builder
	if format == "yaml" {
		b.WriteString("name: big\nsteps:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - {id: s%d, run: x}\n", i)
		}
	} else {
		b.WriteString("name = \"big\"\n")
		for i := range n {
			fmt.Fprintf(&b, "step \"s%d\" { run = \"x\" }\n", i)
		}
	}
	return []byte(b.String())
}

// TestStepCount checks that a workflow of MaxSteps steps loads and that
// one more step is an error at that step, after which no step is
// decoded: the steps past it, however wrong, add no diagnostic.
func TestStepCount(t *testing.T) {
	if testing.Short() {
		t.Skip("loads workflows of 50,000 steps")
	}
	for _, format := range []string{"yaml", "hcl"} {
		t.Run(format, func(t *testing.T) {
			src := manySteps(format, config.MaxSteps)
			w, err := config.Parse(afero.NewMemMapFs(), "/wf."+format, format, src)
			if err != nil || len(w.Steps) != config.MaxSteps {
				t.Fatalf("%d steps: %v", config.MaxSteps, err)
			}
			over := manySteps(format, config.MaxSteps+1)
			wantLine := strings.Count(string(over), "\n")
			if format == "yaml" {
				over = append(over, "  - {id: s0, bad_key: 1}\n  - 7\n"...)
			} else {
				over = append(over, "step \"s0\" { bad_key = 1 }\nstep {}\n"...)
			}
			d := oneDiag(t, format, string(over))
			wantCol := 5
			if format == "hcl" {
				wantCol = 1
			}
			if d.Pos.Line != wantLine || d.Pos.Col != wantCol || !strings.Contains(d.Message, "at most 50000") {
				t.Errorf("got %d:%d %q, want %d:%d", d.Pos.Line, d.Pos.Col, d.Message, wantLine, wantCol)
			}
		})
	}
}

func TestWorkflowSize(t *testing.T) {
	mem := afero.NewMemMapFs()
	fits := manySteps("yaml", 1)
	fits = append(fits, strings.Repeat("#", config.MaxWorkflowSize-len(fits)-1)+"\n"...)
	if err := afero.WriteFile(mem, "/fits.yaml", fits, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(mem, "/fits.yaml"); err != nil {
		t.Fatalf("a file of exactly MaxWorkflowSize: %v", err)
	}
	if err := afero.WriteFile(mem, "/big.yaml", append(fits, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func() error{
		"Load":  func() error { _, err := config.Load(mem, "/big.yaml"); return err },
		"Parse": func() error { _, err := config.Parse(mem, "/big.yaml", "yaml", append(fits, '\n')); return err },
		// A file that says it is small and grows without end while it
		// is read.
		"growing": func() error { _, err := config.Load(growingFs{mem}, "/fits.yaml"); return err },
	} {
		t.Run(name, func(t *testing.T) {
			var ds config.Diagnostics
			err := load()
			if !errors.As(err, &ds) || len(ds) != 1 || ds[0].Pos.Line != 1 || ds[0].Pos.Col != 1 || !strings.Contains(ds[0].Message, "larger than 16 MiB") {
				t.Fatalf("got %v, want one diagnostic at 1:1", err)
			}
		})
	}
}

// growingFs opens files that claim to be 10 bytes long and never end.
type growingFs struct{ afero.Fs }

func (g growingFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := g.Fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &growingFile{File: f}, nil
}

type growingFile struct {
	afero.File
	read int64
}

func (f *growingFile) Stat() (fs.FileInfo, error) { return smallInfo{}, nil }

func (f *growingFile) Read(p []byte) (int, error) {
	if f.read > 1<<30 {
		return 0, errors.New("read a GiB: the reader does not stop")
	}
	for i := range p {
		p[i] = '#'
	}
	f.read += int64(len(p))
	return len(p), nil
}

type smallInfo struct{}

func (smallInfo) Name() string       { return "fits.yaml" }
func (smallInfo) Size() int64        { return 10 }
func (smallInfo) Mode() fs.FileMode  { return 0o644 }
func (smallInfo) ModTime() time.Time { return time.Time{} }
func (smallInfo) IsDir() bool        { return false }
func (smallInfo) Sys() any           { return nil }
