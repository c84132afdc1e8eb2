package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
)

// TestSpecIsMarshalIndent: Spec, which encodes a step at a time, writes
// exactly what json.MarshalIndent writes for the whole spec (and so the
// digest of every workflow stays what it was): for the shipped
// workflows and the examples, every workflow of testdata that loads,
// one with a loop, HTML characters and a description, and the zero
// workflow.
func TestSpecIsMarshalIndent(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../workflows/*.*", "../workflows/examples/*.*", "testdata/*/*.*", "testdata/*/*/*.*"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	var ws []*Workflow
	for _, f := range files {
		if ext := filepath.Ext(f); ext != ".yaml" && ext != ".yml" && ext != ".hcl" || IsTestFile(f) {
			continue
		}
		if w, err := Load(afero.NewOsFs(), f); err == nil {
			ws = append(ws, w)
		}
	}
	if len(ws) < 10 {
		t.Fatalf("only %d workflows of %d files load", len(ws), len(files))
	}
	src := "name: x\ndescription: \"<b> & </b>\"\nsteps:\n" +
		"  - {id: a, run: \"echo '<&>' {{ vars.v }}\", description: \"the first\"}\n" +
		"  - id: l\n    for_each: [1, 2]\n    steps:\n      - {id: b, run: \"echo {{ item }}\"}\n" +
		"vars: {v: \"1\"}\n"
	w, err := Parse(afero.NewMemMapFs(), "/x.yaml", "yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ws = append(ws, w, &Workflow{})
	t.Logf("%d workflows", len(ws))
	for _, w := range ws {
		want, err := json.MarshalIndent(w.fullSpec(), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.Spec()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v\n%s\nwant\n%s", w.File, err, got, want)
		}
		// The digest is hashed as the spec is written, never whole.
		if sum := sha256.Sum256(want); w.Digest() != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Errorf("%s: digest %s is not the spec's", w.File, w.Digest())
		}
	}
}
