package config_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/configtest"
)

// goodTestsHCL is goodTests written in HCL.
const goodTestsHCL = `workflow = "wf.yaml"

test "review fails once" {
  vars  = { feature = "search" }
  files = { "PLAN.md" = "# plan" }
  sessions = {
    review = [
      { output = "FAIL" },
      { output = "PASS", report = { metrics = { severity = "minor" } }, duration = "2m" },
    ]
    coding = { writes = { "main.go" = "package main" } }
  }
  checks = { review = [{ exit_code = 1, output = "--- FAIL" }] }
  human  = { approve = { approved = true, input = { ticket = "OPS-1" } } }
  expect {
    exit_code     = 0
    status        = "completed"
    path          = ["coding", "review", "coding", "review", "approve"]
    path_contains = ["coding", "approve"]
    steps = {
      coding = { status = "COMPLETED", iteration = 1, attempts = 1 }
      review = { verdict = "PASS", last_error = "^$" }
    }
    files           = { "main.go" = "package main" }
    prompt_contains = { coding = "FAIL" }
  }
}
`

// normalTests is a test file without what differs between a YAML file
// and its HCL twin: its name, bytes, workflow and positions.
func normalTests(tf *config.TestFile) *config.TestFile {
	c := *tf
	c.File, c.Source, c.Workflow, c.WorkflowPath = "", nil, nil, filepath.Base(c.WorkflowPath)
	configtest.ZeroPos(&c)
	return &c
}

func TestLoadTestsHCLTwin(t *testing.T) {
	fs := testFS(t, goodTests)
	if err := afero.WriteFile(fs, "/w/wf.test.hcl", []byte(goodTestsHCL), 0o644); err != nil {
		t.Fatal(err)
	}
	y, err := config.LoadTests(fs, "/w/wf.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h, err := config.LoadTests(fs, "/w/wf.test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Tests[0].Expect.Path.Pos; got != (config.Pos{File: "/w/wf.test.hcl", Line: 18, Col: 21}) {
		t.Errorf("expect.path at %v", got)
	}
	if ny, nh := normalTests(y), normalTests(h); !reflect.DeepEqual(ny, nh) {
		t.Errorf("HCL twin differs:\nyaml %#v\nhcl  %#v", ny.Tests[0], nh.Tests[0])
	}
}

func TestLoadTestsHCLDiagnostics(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"not literal", `workflow = var.wf
test "a" {
  vars = { feature = "x-${var.y}" }
  sessions = { coding = { exit_code = 1 + 1 } }
  expect { path = [upper("coding")] }
}
`, []string{
			`/w/wf.test.hcl:1:12: workflow: want a literal value (a string, number, bool, list or object), not an expression`,
			`/w/wf.test.hcl:3:22: vars.feature: want a literal value (a string, number, bool, list or object), not an expression`,
			`/w/wf.test.hcl:4:39: sessions.coding.exit_code: want a literal value (a string, number, bool, list or object), not an expression`,
			`/w/wf.test.hcl:5:20: path: want a literal value (a string, number, bool, list or object), not an expression`,
		}},
		{"shape", `workflow = "wf.yaml"
tests = []
step "x" {}
test {}
test "a" {
  name = "b"
  sesions = {}
  expect "x" {}
  human = { codng = { approved = "yes" } }
}
`, []string{
			`/w/wf.test.hcl:2:1: tests are blocks: write test "name" { ... }`,
			`/w/wf.test.hcl:3:1: unknown block "step"`,
			`/w/wf.test.hcl:4:6: a test block needs a name: test "name" { ... }`,
			`/w/wf.test.hcl:6:3: a test's name is its label: test "name" { ... }`,
			`/w/wf.test.hcl:7:3: unknown key "sesions" (did you mean "sessions"?)`,
			`/w/wf.test.hcl:8:10: a expect block takes no label`,
			`/w/wf.test.hcl:9:13: unknown step "codng" (did you mean "coding"?)`,
			`/w/wf.test.hcl:9:34: human.codng.approved: want true or false, got "yes"`,
		}},
		{"empty", "", []string{
			`/w/wf.test.hcl:1:1: missing workflow = "...": the workflow file the tests run, relative to this file`,
			`/w/wf.test.hcl:1:1: no tests: add a test "name" { ... } block`,
		}},
		{"syntax", "workflow = \"wf.yaml\"\ntest \"a\" {\n", []string{
			`/w/wf.test.hcl:2:10: hcl: Unclosed configuration block: There is no closing brace for this block before the end of the file. This may be caused by incorrect brace nesting elsewhere in this file`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := testFS(t, goodTests)
			_, err := config.ParseTests(fs, "/w/wf.test.hcl", []byte(tt.src))
			var ds config.Diagnostics
			if !errors.As(err, &ds) {
				t.Fatalf("err = %v, want diagnostics", err)
			}
			if got, want := ds.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
