package config

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/spf13/afero"
	"go.yaml.in/yaml/v3"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("flow.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("flow.schema.json")
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	return s
}

// yamlInstance reads a YAML document as the JSON value the schema checks.
func yamlInstance(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func TestSchemaValidatesShippedWorkflows(t *testing.T) {
	s := compileSchema(t)
	files, _ := filepath.Glob("../workflows/*.yaml")
	files = slices.DeleteFunc(files, IsTestFile) // workflow tests live beside the workflows
	if len(files) < 3 {
		t.Fatalf("shipped workflows: %v", files)
	}
	examples, _ := filepath.Glob("../workflows/examples/*.yaml")
	files = append(files, examples...)
	osfs := afero.NewOsFs()
	for _, f := range files {
		data, err := afero.ReadFile(osfs, f)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(yamlInstance(t, data)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestSchemaRejects(t *testing.T) {
	s := compileSchema(t)
	tests := map[string]string{
		"unknown step key":     "name: x\nsteps:\n  - id: a\n    run: a\n    loop_bak_to: a\n",
		"unknown top key":      "name: x\ncolour: red\nsteps: []\n",
		"unknown gate key":     "name: x\nsteps:\n  - id: a\n    run: a\n    gate: {pas: x}\n",
		"bad name":             "name: X Y\nsteps: []\n",
		"no name":              "steps: []\n",
		"zero max_attempts":    "name: x\nsteps:\n  - id: a\n    run: a\n    max_attempts: 0\n",
		"agent without run":    "name: x\nagents:\n  a: {env: {}}\nsteps: []\n",
		"unknown default key":  "name: x\ndefaults: {max_attempt: 2}\nsteps: []\n",
		"zero log_limit":       "name: x\ndefaults: {log_limit: 0}\nsteps: []\n",
		"size without number":  "name: x\ndefaults: {prompt_limit: MiB}\nsteps: []\n",
		"size in bits":         "name: x\ndefaults: {prompt_limit: 8Mb}\nsteps: []\n",
		"bad secret name":      "name: x\nsecrets: [DEPLOY-KEY]\nsteps: []\n",
		"secret not a list":    "name: x\nsecrets: DEPLOY_KEY\nsteps: []\n",
		"run and preset":       "name: x\nagents:\n  a: {run: a, preset: claude}\nsteps: []\n",
		"unknown preset":       "name: x\nagents:\n  a: {preset: claud}\nsteps: []\n",
		"args not a list":      "name: x\nagents:\n  a: {preset: claude, args: -v}\nsteps: []\n",
		"resume not a bool":    "name: x\nagents:\n  a: {preset: claude, resume: yes}\nsteps: []\n",
		"negative price":       "name: x\nagents:\n  a: {preset: claude, price: {input_per_mtok: -1}}\nsteps: []\n",
		"empty price":          "name: x\nagents:\n  a: {preset: claude, price: {}}\nsteps: []\n",
		"empty budget":         "name: x\nbudget: {}\nsteps: []\n",
		"zero cost budget":     "name: x\nbudget: {cost_usd: 0}\nsteps: []\n",
		"fractional tokens":    "name: x\nbudget: {tokens: 1.5}\nsteps: []\n",
		"unknown budget key":   "name: x\nsteps:\n  - {id: a, run: a, budget: {cost: 1}}\n",
		"unknown notify event": "name: x\nnotify: {on: [faild], command: n}\nsteps: []\n",
		"notify event twice":   "name: x\nnotify: {on: [failed, failed], command: n}\nsteps: []\n",
		"empty notify":         "name: x\nnotify: {}\nsteps: []\n",
		"unknown notify key":   "name: x\ndefaults: {notify: {comand: n}}\nsteps: []\n",
	}
	for name, src := range tests {
		if err := s.Validate(yamlInstance(t, []byte(src))); err == nil {
			t.Errorf("%s: schema accepts\n%s", name, src)
		}
	}
}

func TestSchemaAcceptsPresetsAndBudgets(t *testing.T) {
	s := compileSchema(t)
	data, err := afero.ReadFile(afero.NewOsFs(), "testdata/agents/presets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(yamlInstance(t, data)); err != nil {
		t.Errorf("schema rejects testdata/agents/presets.yaml: %v", err)
	}
}

func TestSchemaAcceptsNotify(t *testing.T) {
	s := compileSchema(t)
	data, err := afero.ReadFile(afero.NewOsFs(), "testdata/notify/notify.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(yamlInstance(t, data)); err != nil {
		t.Errorf("schema rejects testdata/notify/notify.yaml: %v", err)
	}
	if err := s.Validate(yamlInstance(t, []byte("name: x\nnotify: {on: failed, webhook: https://h.example/x}\nsteps: []\n"))); err != nil {
		t.Errorf("schema rejects on: as one event: %v", err)
	}
}

func TestSchemaAcceptsSizesAndSecrets(t *testing.T) {
	s := compileSchema(t)
	src := "name: x\nsecrets: [DEPLOY_CREDENTIAL, SENTRY_DSN]\ndefaults:\n  prompt_limit: 64MiB\n  command_limit: 100 KiB\n  report_limit: 1048576\n  log_limit: 1GB\nsteps: []\n"
	if err := s.Validate(yamlInstance(t, []byte(src))); err != nil {
		t.Errorf("schema rejects\n%s: %v", src, err)
	}
}

// TestSchemaKeys checks that the schema knows exactly the keys the YAML
// decoder does.
func TestSchemaKeys(t *testing.T) {
	var doc struct {
		Properties map[string]struct {
			Properties           map[string]any  `json:"properties"`
			AdditionalProperties json.RawMessage `json:"additionalProperties"`
		} `json:"properties"`
		Defs map[string]struct {
			Properties map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	var agent struct {
		Properties map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(doc.Properties["agents"].AdditionalProperties, &agent)
	step := doc.Defs["step"].Properties
	tests := []struct {
		what   string
		schema []string
		keys   []string
	}{
		{"workflow", keysOf(doc.Properties), workflowKeys},
		{"defaults", keysOf(doc.Properties["defaults"].Properties), defaultsKeys},
		{"agent", keysOf(agent.Properties), agentKeys},
		{"step", keysOf(step), stepKeys},
		{"gate", keysOf(step["gate"].Properties), gateKeys},
		{"human", keysOf(step["human"].Properties), humanKeys},
		{"retry", keysOf(doc.Defs["retry"].Properties), retryKeys},
		{"cleanup", keysOf(doc.Properties["cleanup"].Properties), cleanupKeys},
		{"signals", keysOf(doc.Properties["signals"].Properties), signalsKeys},
		{"price", keysOf(agent.Properties["price"].Properties), priceTable.yamlKeys},
		{"budget", keysOf(doc.Defs["budget"].Properties), budgetTable.yamlKeys},
		{"notify", keysOf(doc.Defs["notify"].Properties), notifyTable.yamlKeys},
	}
	for _, tt := range tests {
		keys := slices.Clone(tt.keys)
		sort.Strings(keys)
		if !slices.Equal(tt.schema, keys) {
			t.Errorf("%s: schema has %v, decoder %v", tt.what, tt.schema, keys)
		}
	}
	if !strings.Contains(string(Schema()), `"additionalProperties": false`) {
		t.Error("schema does not close its objects")
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestHCLKeys checks that the HCL decoder knows the keys the YAML one
// does: step ids are block labels, agents and steps (also a loop's body)
// are labelled blocks.
func TestHCLKeys(t *testing.T) {
	sorted := func(parts ...[]string) []string {
		out := slices.Concat(parts...)
		sort.Strings(out)
		return out
	}
	if got, want := sorted(hclStepAttrs, hclStepBlocks, []string{"id", "steps"}), sorted(stepKeys, []string{"step"}); !slices.Equal(got, want) {
		t.Errorf("step: HCL %v, YAML %v", got, want)
	}
	if got, want := sorted(hclWorkflowAttrs, hclWorkflowBlock, []string{"agents", "steps"}), sorted(workflowKeys, []string{"agent", "step"}); !slices.Equal(got, want) {
		t.Errorf("workflow: HCL %v, YAML %v", got, want)
	}
	if got, want := sorted(hclDefaultsAttrs, []string{"retry", "notify", "retention"}), sorted(defaultsKeys); !slices.Equal(got, want) {
		t.Errorf("defaults: HCL %v, YAML %v", got, want)
	}
}
