package config_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/spf13/afero"
)

// promptWorkflow is a workflow whose one step reads the prompt file pf;
// the value of prompt_file is at line 5, column 18.
func promptWorkflow(pf string) []byte {
	return []byte("name: p\nagents: {coder: {run: cat}}\ndefaults: {agent: coder}\nsteps:\n  - id: a\n    prompt_file: " + pf + "\n")
}

// TestPromptFileConfined checks where a prompt file may be, on a file
// system without symlinks: inside the workflow's directory tree, or the
// repository LoadWith is told about, and no larger than the prompt
// limit.
func TestPromptFileConfined(t *testing.T) {
	mem := afero.NewMemMapFs()
	files := map[string]string{
		"/repo/flows/prompts/a.md": "inside",
		"/repo/shared/b.md":        "in the repository",
		"/repo/secret.txt":         "s3cr3t",
		"/etc/hostname":            "host",
		"/repo/flows/big.md":       strings.Repeat("x", 1<<20+1),
		"/repo/flows/small.md":     strings.Repeat("x", 2048),
	}
	for name, data := range files {
		if err := afero.WriteFile(mem, name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		pf     string
		repo   string
		limits string // a defaults line
		want   string // the prompt, or the error's text
		ok     bool
	}{
		{name: "inside", pf: "prompts/a.md", want: "inside", ok: true},
		{name: "parent", pf: "../secret.txt", want: "../secret.txt is outside the workflow's directory"},
		{name: "absolute", pf: "/etc/hostname", want: "/etc/hostname is outside the workflow's directory;"},
		{name: "dot-dot inside", pf: "prompts/../prompts/a.md", want: "inside", ok: true},
		{name: "in the repository", pf: "../shared/b.md", repo: "/repo", want: "in the repository", ok: true},
		{name: "absolute in the repository", pf: "/repo/shared/b.md", repo: "/repo", want: "in the repository", ok: true},
		{name: "outside the repository", pf: "/etc/hostname", repo: "/repo", want: "outside the workflow's directory and the repository"},
		{name: "missing", pf: "prompts/none.md", want: "prompt_file: read /repo/flows/prompts/none.md"},
		{name: "missing outside", pf: "../../none.md", want: "is outside"},
		{name: "directory", pf: "prompts", want: "not a regular file"},
		{name: "over the prompt limit", pf: "big.md", want: "big.md is larger than 1 MiB, the prompt limit"},
		{name: "over a smaller limit", pf: "small.md", limits: "prompt_limit: 1KiB", want: "larger than 1 KiB"},
		{name: "under a larger limit", pf: "big.md", limits: "prompt_limit: 2MiB", want: strings.Repeat("x", 1<<20+1), ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := promptWorkflow(tt.pf)
			if tt.limits != "" {
				src = []byte(strings.Replace(string(src), "defaults: {agent: coder}", "defaults: {agent: coder, "+tt.limits+"}", 1))
			}
			if err := afero.WriteFile(mem, "/repo/flows/wf.yaml", src, 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := config.LoadWith(mem, "/repo/flows/wf.yaml", config.Options{Repo: tt.repo})
			if tt.ok {
				if err != nil || w.Step("a").Prompt.Src != tt.want {
					t.Fatalf("LoadWith: %v", err)
				}
				return
			}
			var ds config.Diagnostics
			if !errors.As(err, &ds) || len(ds) != 1 {
				t.Fatalf("got %v, want one diagnostic", err)
			}
			if d := ds[0]; d.Pos.Line != 6 || d.Pos.Col != 18 || !strings.Contains(d.Message, tt.want) {
				t.Errorf("got %d:%d %q, want 6:18 %q", d.Pos.Line, d.Pos.Col, d.Message, tt.want)
			}
		})
	}
	// Load is LoadWith with no repository.
	_ = afero.WriteFile(mem, "/repo/flows/wf.yaml", promptWorkflow("../shared/b.md"), 0o644)
	if _, err := config.Load(mem, "/repo/flows/wf.yaml"); err == nil || !strings.Contains(err.Error(), "is outside") {
		t.Errorf("Load with a prompt file in the repository: %v", err)
	}
	if _, err := config.LoadWith(mem, filepath.FromSlash("/repo/flows/wf.yaml"), config.Options{Repo: "/repo"}); err != nil {
		t.Errorf("LoadWith the repository: %v", err)
	}
}
