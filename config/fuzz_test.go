package config_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

// seedFuzz adds the shipped workflows and the broken corpus of a format.
func seedFuzz(f *testing.F, ext string) {
	osfs := afero.NewOsFs()
	for _, dir := range []string{"../workflows", corpusDir} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"+ext))
		for _, file := range files {
			data, err := afero.ReadFile(osfs, file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}

// checkLoad loads data and checks that it either is a workflow or yields
// diagnostics that are all positioned in a file.
func checkLoad(t *testing.T, format string, data []byte) {
	mem := afero.NewMemMapFs()
	_ = afero.WriteFile(mem, "/prompts/coding.md", []byte("Code {{ vars.feature }}."), 0o644)
	w, err := config.Parse(mem, "/wf."+format, format, data)
	if err == nil {
		if len(w.Order()) != len(w.Steps) {
			t.Fatalf("Order() has %d steps, want %d", len(w.Order()), len(w.Steps))
		}
		checkEmit(t, mem, w)
		return
	}
	var ds config.Diagnostics
	if !errors.As(err, &ds) {
		t.Fatalf("error is not Diagnostics: %v", err)
	}
	if len(ds) == 0 {
		t.Fatal("empty Diagnostics")
	}
	for _, d := range ds {
		if d.Pos.Line < 1 || d.Pos.Col < 1 || d.Pos.File == "" || d.Message == "" {
			t.Fatalf("unpositioned diagnostic %+v", d)
		}
	}
}

func FuzzLoadYAML(f *testing.F) {
	seedFuzz(f, ".yaml")
	f.Fuzz(func(t *testing.T, data []byte) { checkLoad(t, "yaml", data) })
}

func FuzzLoadHCL(f *testing.F) {
	seedFuzz(f, ".hcl")
	f.Fuzz(func(t *testing.T, data []byte) { checkLoad(t, "hcl", data) })
}

// checkEmit writes a workflow that loads in both formats, as flow
// convert does: each loads back to the same digest. A number YAML cannot give JSON (.nan,
// .inf) may be refused.
func checkEmit(t *testing.T, mem afero.Fs, w *config.Workflow) {
	for _, format := range []string{"yaml", "hcl"} {
		out, err := config.Emit(w, format, config.EmitOptions{})
		if err != nil {
			if strings.Contains(err.Error(), "cannot write the number") {
				return
			}
			t.Fatalf("Emit %s: %v", format, err)
		}
		back, err := config.Parse(mem, "/emitted."+format, format, out)
		if err != nil {
			t.Fatalf("the emitted %s does not load: %v\n%s", format, err, out)
		}
		if back.Digest() != w.Digest() {
			t.Fatalf("the emitted %s has another digest:\n%s", format, out)
		}
	}
}
