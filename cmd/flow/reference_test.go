package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/docgen"
	"github.com/flow-run/flow/runner/ops"
)

var updateReference = flag.Bool("update", false, "rewrite docs/reference from the code (go generate ./... runs this)")

// referenceRoot is flow's command tree, as the references describe it.
func referenceRoot(t *testing.T, env map[string]string) *cobra.Command {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	svc := &ops.Service{FS: afero.NewMemMapFs(), Dir: t.TempDir(), Environ: os.Environ()}
	a := &app{stdio: Stdio{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, svc: svc}
	return a.rootCmd()
}

// TestReference checks that docs/reference is what the code says: the
// workflow file's reference from config's key table, and the command
// line's, Markdown and man pages, from the command tree. With -update
// (go generate ./...) it rewrites them. The tree is made under two
// environments: a help text must not depend on the machine.
func TestReference(t *testing.T) {
	const dir = "../../docs/reference"
	files, err := docgen.Files(referenceRoot(t, nil), config.Reference())
	if err != nil {
		t.Fatal(err)
	}
	other, err := docgen.Files(referenceRoot(t, map[string]string{"USER": "someone-else", "HOME": t.TempDir(), "CI": "true"}), config.Reference())
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if !bytes.Equal(b, other[name]) {
			t.Errorf("docs/reference/%s depends on the environment it is made in", name)
		}
	}
	if *updateReference {
		for _, sub := range []string{"cli", "man"} {
			if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
				t.Fatal(err)
			}
		}
		for name, b := range files {
			writeFile(t, filepath.Join(dir, name), b)
		}
	}
	var stale []string
	for name, b := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, b) {
			stale = append(stale, name)
		}
	}
	for _, sub := range []string{"cli", "man"} {
		entries, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, e := range entries {
			if _, ok := files[sub+"/"+e.Name()]; !ok {
				stale = append(stale, sub+"/"+e.Name()+" (no such command)")
			}
		}
	}
	slices.Sort(stale)
	for _, name := range stale {
		t.Errorf("docs/reference/%s is not what the code says: run go generate ./...", name)
	}
}
