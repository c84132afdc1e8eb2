package config_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/spf13/afero"
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
		_ = w.Digest()
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
