package config

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileTestSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(TestSchema()))
	if err != nil {
		t.Fatalf("test schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("flow.test-schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("flow.test-schema.json")
	if err != nil {
		t.Fatalf("compile test schema: %v", err)
	}
	return s
}

// TestTestSchemaFile checks that test-schema.json is what TestSchema
// builds; go test -run TestTestSchemaFile -update rewrites it.
func TestTestSchemaFile(t *testing.T) {
	if *update {
		if err := os.WriteFile("test-schema.json", TestSchema(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile("test-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, TestSchema()) {
		t.Error("test-schema.json is not what TestSchema builds: run go generate ./... (or go test ./config -run TestTestSchemaFile -update)")
	}
}

// TestTestSchemaValidatesShippedTests checks every shipped YAML test
// file against the schema.
func TestTestSchemaValidatesShippedTests(t *testing.T) {
	s := compileTestSchema(t)
	files, _ := filepath.Glob("../workflows/*.test.yaml")
	if len(files) < 4 {
		t.Fatalf("shipped test files: %v", files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(yamlInstance(t, data)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestTestSchema checks that the schema accepts a test file using every
// key the loader accepts, and rejects what the loader rejects by shape.
func TestTestSchema(t *testing.T) {
	s := compileTestSchema(t)
	all := `workflow: wf.yaml
tests:
  - name: every key
    vars: {feature: x, n: 1}
    files: {PLAN.md: "# plan"}
    sessions:
      review:
        - {exit_code: 1, output: FAIL, duration: 2m, writes: {a.go: x}, report: {metrics: {severity: minor}}}
        - {output: PASS}
      coding: {exit_code: "0"}
    checks: {review: [{exit_code: 1}]}
    human: {approve: {approved: true, input: {ticket: OPS-1}, reason: ok}}
    expect:
      exit_code: 0
      status: completed
      path: [coding, review]
      path_contains: [coding]
      steps: {coding: {status: COMPLETED, attempts: 1, iteration: 1, verdict: PASS, exit_code: 0, last_error: "^$"}}
      files: {a.go: x}
      prompt_contains: {coding: FAIL}
`
	if err := s.Validate(yamlInstance(t, []byte(all))); err != nil {
		t.Errorf("a test file with every key: %v", err)
	}
	for _, bad := range []string{
		"tests: [{name: a}]\n",
		"workflow: wf.yaml\ntests: []\n",
		"workflow: wf.yaml\ntests: [{name: a, sesions: {}}]\n",
		"workflow: wf.yaml\ntests: [{name: a, sessions: {review: {ouput: x}}}]\n",
		"workflow: wf.yaml\ntests: [{name: a, human: {approve: {reason: x}}}]\n",
		"workflow: wf.yaml\ntests: [{name: a, expect: {status: done}}]\n",
		"workflow: wf.yaml\ntests: [{name: a, expect: {exit_code: one}}]\n",
		"workflow: wf.yaml\ntests: [{name: a, expect: {steps: {Coding: {}}}}]\n",
	} {
		if err := s.Validate(yamlInstance(t, []byte(bad))); err == nil {
			t.Errorf("schema accepts %q", strings.TrimSpace(bad))
		}
	}
}
