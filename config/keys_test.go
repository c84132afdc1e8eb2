package config

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

// The keys of each block, as the tests read them.
var (
	workflowKeys = workflowTable.yamlKeys
	defaultsKeys = defaultsTable.yamlKeys
	agentKeys    = agentTable.yamlKeys
	stepKeys     = stepTable.yamlKeys
	gateKeys     = gateTable.yamlKeys
	humanKeys    = humanTable.yamlKeys
	retryKeys    = retryTable.yamlKeys
	cleanupKeys  = cleanupTable.yamlKeys
	signalsKeys  = signalsTable.yamlKeys

	hclWorkflowAttrs = workflowTable.hclAttrs
	hclWorkflowBlock = workflowTable.hclBlocks
	hclDefaultsAttrs = defaultsTable.hclAttrs
	hclStepAttrs     = stepTable.hclAttrs
	hclStepBlocks    = stepTable.hclBlocks
)

// TestListKeysInBothFormats checks that a key declared as a list is one
// in both formats: HCL took a single string for artifacts, which YAML and
// the schema refuse.
func TestListKeysInBothFormats(t *testing.T) {
	tests := []struct {
		format, src string
		line, col   int
		text        string
	}{
		{"yaml", "name: x\nsteps:\n  - id: a\n    run: a\n    artifacts: out.txt\n", 5, 16, "artifacts: want a list, got the string \"out.txt\""},
		{"hcl", "name = \"x\"\nstep \"a\" {\n  run = \"a\"\n  artifacts = \"out.txt\"\n}\n", 4, 15, "artifacts: want a list [\"...\", ...]"},
		{"hcl", "name = \"x\"\nsecrets = \"A\"\nstep \"a\" {\n  run = \"a\"\n}\n", 2, 11, "secrets: want a list [\"...\", ...]"},
	}
	for _, tt := range tests {
		_, err := Parse(afero.NewMemMapFs(), "wf."+tt.format, tt.format, []byte(tt.src))
		var ds Diagnostics
		if !errors.As(err, &ds) || len(ds) != 1 {
			t.Errorf("%s: got %v, want one diagnostic\n%s", tt.format, err, tt.src)
			continue
		}
		if d := ds[0]; d.Pos.Line != tt.line || d.Pos.Col != tt.col || d.Message != tt.text {
			t.Errorf("%s: got %d:%d %q, want %d:%d %q", tt.format, d.Pos.Line, d.Pos.Col, d.Message, tt.line, tt.col, tt.text)
		}
	}
	for _, src := range []string{"name: x\nsteps:\n  - id: a\n    run: a\n    needs: []\n  - id: b\n    run: b\n    needs: a\n", "name = \"x\"\nstep \"a\" {\n  run = \"a\"\n  needs = []\n}\nstep \"b\" {\n  run = \"b\"\n  needs = \"a\"\n}\n"} {
		format := "yaml"
		if strings.HasPrefix(src, "name =") {
			format = "hcl"
		}
		w, err := Parse(afero.NewMemMapFs(), "wf."+format, format, []byte(src))
		if err != nil || !slices.Equal(w.Step("b").Needs, []string{"a"}) {
			t.Errorf("%s: needs of one step: %v", format, err)
		}
	}
}

// TestTablesDescribeEveryKey checks that every block and every key of
// the tables has a description, which the schema and the reference
// show, and that a default is given as the key's default, not in its
// description.
func TestTablesDescribeEveryKey(t *testing.T) {
	seen := map[schemaTable]bool{}
	var walk func(path string, tb schemaTable)
	walk = func(path string, tb schemaTable) {
		if seen[tb] {
			return
		}
		seen[tb] = true
		if tb.blockDoc() == "" {
			t.Errorf("%s has no description", path)
		}
		for _, k := range tb.keyDocs() {
			switch {
			case k.description == "":
				t.Errorf("%s.%s has no description", path, k.name)
			case strings.Contains(k.description, "(default"), strings.Contains(k.description, "the default"):
				t.Errorf("%s.%s says its default in its description: give it as the key's default", path, k.name)
			}
			if k.sub != nil {
				walk(path+"."+k.name, k.sub)
			}
		}
	}
	walk("workflow", workflowTable)
	var doc map[string]any
	if err := json.Unmarshal(Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	props := doc["$defs"].(map[string]any)["step"].(map[string]any)["properties"].(map[string]any)
	if d, _ := props["max_parallel"].(map[string]any)["description"].(string); !strings.HasSuffix(d, "Default: 1.") {
		t.Errorf("the schema does not give a step's max_parallel its default: %q", d)
	}
}

// TestSchemaStepDescription checks that editors are told of a step's
// description, and that it is a string.
func TestSchemaStepDescription(t *testing.T) {
	s := compileSchema(t)
	ok := "name: x\nsteps:\n  - id: a\n    description: Build it all.\n    run: make\n"
	if err := s.Validate(yamlInstance(t, []byte(ok))); err != nil {
		t.Errorf("schema rejects a step description: %v", err)
	}
	bad := "name: x\nsteps:\n  - id: a\n    description: [a]\n    run: make\n"
	if err := s.Validate(yamlInstance(t, []byte(bad))); err == nil {
		t.Error("schema accepts a step description that is a list")
	}
}
