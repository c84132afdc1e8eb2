package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/spf13/afero"
)

// TestStepDescription checks the description of a step: kept in the
// model and the spec, the same from YAML and HCL, and positioned when it
// is not a string.
func TestStepDescription(t *testing.T) {
	y := parse(t, "yaml", "name: x\nsteps:\n  - id: a\n    description: Build it all.\n    run: make\n")
	h := parse(t, "hcl", "name = \"x\"\nstep \"a\" {\n  description = \"Build it all.\"\n  run         = \"make\"\n}\n")
	for _, w := range []*config.Workflow{y, h} {
		if got := w.Step("a").Description(); got != "Build it all." {
			t.Errorf("%s: description %q", w.Format, got)
		}
		if spec, _ := w.Spec(); !strings.Contains(string(spec), `"description": "Build it all."`) {
			t.Errorf("%s: spec lacks the description:\n%s", w.Format, spec)
		}
	}
	if y.Digest() != h.Digest() {
		t.Errorf("digests differ: %s %s", y.Digest(), h.Digest())
	}
	if plain := parse(t, "yaml", "name: x\nsteps:\n  - id: a\n    run: make\n"); plain.Digest() == y.Digest() {
		t.Error("the description does not change the digest")
	}
	_, err := config.Parse(afero.NewMemMapFs(), "wf.yaml", "yaml", []byte("name: x\nsteps:\n  - id: a\n    description: [a, b]\n    run: make\n"))
	var ds config.Diagnostics
	if !errors.As(err, &ds) || len(ds) != 1 || ds[0].Pos.Line != 4 || ds[0].Pos.Col != 18 || ds[0].Message != "description: want a string, got a list" {
		t.Errorf("got %v", err)
	}
}

// TestStepFeedback: feedback is append by default, none turns it off,
// anything else is a positioned error; the default stays out of the
// digest.
func TestStepFeedback(t *testing.T) {
	for src, want := range map[string]string{
		"name: f\nsteps:\n  - {id: a, run: x}\n":                 "append",
		"name: f\nsteps:\n  - {id: a, run: x, feedback: none}\n": "none",
	} {
		fs := afero.NewMemMapFs()
		_ = afero.WriteFile(fs, "/w/wf.yaml", []byte(src), 0o644)
		wf, err := config.Load(fs, "/w/wf.yaml")
		if err != nil || wf.Steps[0].Feedback != want {
			t.Errorf("%q: feedback %q, %v; want %q", src, wf.Steps[0].Feedback, err, want)
		}
	}
	fs := afero.NewMemMapFs()
	_ = afero.WriteFile(fs, "/w/wf.yaml", []byte("name: f\nsteps:\n  - {id: a, run: x, feedback: loud}\n"), 0o644)
	if _, err := config.Load(fs, "/w/wf.yaml"); err == nil || !strings.Contains(err.Error(), "3:31: feedback: want append or none") {
		t.Errorf("feedback: loud: %v", err)
	}
}
