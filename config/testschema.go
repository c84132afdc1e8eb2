package config

import (
	"fmt"
	"strings"
)

// TestSchema returns a JSON Schema (draft 2020-12) of the YAML workflow
// test file format (*.test.yaml, docs/testing.md), with descriptions, for
// editors: a test file that starts with
// "# yaml-language-server: $schema=<path to it>" is checked and completed
// as it is typed. Each level lists exactly the keys the loader accepts
// there (the key lists of testfile_load.go; building it fails when a
// list and the schema disagree), and test-schema.json in this directory
// is a copy of it, kept equal by a test. The schema checks shape only;
// LoadTests checks the rest (steps, vars and the workflow itself).
func TestSchema() []byte {
	integer := obj{
		{"description", "A whole number."},
		{"type", []string{"integer", "string"}},
		{"pattern", `^[+-]?[0-9]+$`},
	}
	stepMap := func(desc string, val any) obj {
		return obj{
			{"description", desc},
			{"type", "object"},
			{"propertyNames", obj{{"pattern", stepKeyPattern}}},
			{"additionalProperties", val},
		}
	}
	oneOrList := func(ref string) obj {
		return obj{{"oneOf", []any{defRef(ref), obj{{"type", "array"}, {"items", defRef(ref)}}}}}
	}
	stepList := obj{{"type", "array"}, {"items", defRef("stepId")}}
	with := func(o obj, desc string) obj { return append(obj{{"description", desc}}, o...) }

	defs := obj{
		{"stepId", obj{{"description", "A step, or one item's instance of a step of a for_each loop's body: loop[item].step."}, {"type", "string"}, {"pattern", stepKeyPattern}}},
		{"integer", integer},
		{"controlState", obj{{"description", "A control state: what flow pause, continue, run-once and cleanup set."}, {"enum", controlStates}}},
		{"files", obj{
			{"description", "Files by path relative to the repository, with their content."},
			{"type", "object"},
			{"additionalProperties", scalarValue()},
		}},
		{"test", keyedObject("A test: a run of the workflow with scripted sessions, checks and human decisions, and what it expects.", testKeys, []string{"name"}, map[string]any{
			"name": obj{{"description", "The test's name, unique in the file; flow test -run matches it."}, {"type", "string"}, {"minLength", 1}},
			"vars": obj{
				{"description", "Values of the workflow's vars, as flow run --var gives them."},
				{"type", "object"},
				{"additionalProperties", scalarValue()},
			},
			"files":    with(defRef("files"), "The simulated repository the run starts with."),
			"sessions": stepMap("The outcomes of each step's sessions, in order; the last one repeats.", oneOrList("outcome")),
			"checks":   stepMap("The outcomes of each step's gate.check, in order; the last one repeats.", oneOrList("outcome")),
			"human":    stepMap("The decisions of each human step, in order; the last one repeats.", oneOrList("decision")),
			"merges": obj{
				{"description", "The outcomes of the merges of each item (loop[key]) of a loop whose items have worktrees, in order; the last one repeats, and an item not scripted merges."},
				{"type", "object"},
				{"propertyNames", obj{{"pattern", `^[a-z0-9][a-z0-9_-]*\[[A-Za-z0-9_-]{1,48}\]$`}}},
				{"additionalProperties", oneOrList("mergeOutcome")},
			},
			"control": stepMap("Control states a person sets while the step's first session runs (the first), and to go on each time the run then stops paused (the next ones).",
				obj{{"oneOf", []any{defRef("controlState"), obj{{"type", "array"}, {"items", defRef("controlState")}}}}}),
			"expect": defRef("expect"),
		})},
		{"outcome", keyedObject("What one scripted session or gate check does.", outcomeKeys, nil, map[string]any{
			"exit_code": with(defRef("integer"), "The exit code (0 unless given)."),
			"output":    append(obj{{"description", "What it prints."}}, scalarValue()...),
			"report":    obj{{"description", "The JSON object it writes to $FLOW_REPORT_PATH."}, {"type", "object"}},
			"writes":    with(defRef("files"), "Files it writes into the repository."),
			"duration":  obj{{"description", "How far it moves the fake clock, such as 90s or 5m."}, {"type", "string"}},
			"usage": keyedObject("What a session of a preset agent reports it used (its JSON output is simulated with it).", usageKeys, nil, map[string]any{
				"tokens_in":     with(defRef("integer"), "Input tokens, cached ones included."),
				"tokens_out":    with(defRef("integer"), "Output tokens."),
				"tokens_cached": with(defRef("integer"), "Cached input tokens."),
				"cost_usd":      obj{{"description", "The cost in USD the tool reports."}, {"type", []string{"number", "string"}}},
				"turns":         with(defRef("integer"), "Turns."),
			}),
		})},
		{"mergeOutcome", keyedObject("What one scripted merge of an item does.", mergeKeys, []string{"status"}, map[string]any{
			"status": obj{{"description", "merged; conflict (in files); waiting (the shared checkout refuses, for reason; the run is resumed and tries again); failed (git fails, with reason)."}, {"enum", MergeOutcomes}},
			"files":  obj{{"description", "The conflicting files."}, {"type", "array"}, {"items", obj{{"type", "string"}}}},
			"reason": append(obj{{"description", "Why the checkout refused, or why git failed."}}, scalarValue()...),
		})},
		{"decision", keyedObject("A scripted human decision, as in a manual input file.", decisionKeys, []string{"approved"}, map[string]any{
			"approved": obj{{"description", "Whether the step is approved."}, {"type", []string{"boolean", "string"}}, {"pattern", "^(1|t|T|TRUE|true|True|0|f|F|FALSE|false|False)$"}},
			"input":    obj{{"description", "The values of the step's inputs."}, {"type", "object"}},
			"reason":   append(obj{{"description", "Why; a rejection's reason becomes the step's error."}}, scalarValue()...),
		})},
		{"expect", keyedObject("What the run must end with; a key left out is not checked.", expectKeys, nil, map[string]any{
			"exit_code":       with(defRef("integer"), "The exit code flow run would exit with."),
			"status":          obj{{"description", "The run's final status."}, {"enum", runStatusKeys}},
			"path":            with(stepList, "The exact order in which steps started."),
			"path_contains":   with(stepList, "Steps that started in this order, others between them allowed."),
			"steps":           stepMap("The final state of single steps.", defRef("stepExpect")),
			"files":           with(defRef("files"), "Files the repository must hold at the end, with their content."),
			"prompt_contains": stepMap("Text the last prompt of a step must contain.", append(obj{}, scalarValue()...)),
		})},
		{"stepExpect", keyedObject("What a step's final state must be; each key given must match.", stepWantKeys, nil, map[string]any{
			"status":     obj{{"description", "The step's status, such as COMPLETED, FAILED, SKIPPED or PENDING."}, {"type", "string"}},
			"attempts":   with(defRef("integer"), "Its attempt count, as run_state.json records it."),
			"iteration":  with(defRef("integer"), "Its iteration count (how many times a loop-back sent the run back to it), as run_state.json records it."),
			"verdict":    obj{{"description", "Its gate's verdict, such as PASS or FAIL."}, {"type", "string"}},
			"exit_code":  with(defRef("integer"), "The exit code of its last session."),
			"last_error": obj{{"description", "A regular expression its last error must match."}, {"type", "string"}},
		})},
	}
	root := obj{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", "https://github.com/flow-run/flow/config/test-schema.json"},
		{"title", "flow workflow tests"},
	}
	root = append(root, keyedObject("A workflow test file (*.test.yaml): the workflow and its tests.", testFileKeys, []string{"workflow", "tests"}, map[string]any{
		"workflow": obj{{"description", "The workflow file the tests run, relative to this file."}, {"type", "string"}, {"minLength", 1}},
		"defaults": with(defRef("outcome"), "What a session does that its test does not script (exit 0, no output, unless given)."),
		"tests":    obj{{"description", "The tests."}, {"type", "array"}, {"minItems", 1}, {"items", defRef("test")}},
	})...)
	root = append(root, member{"$defs", defs})
	return indented(root)
}

// defRef refers to a definition of $defs.
func defRef(name string) obj { return obj{{"$ref", "#/$defs/" + name}} }

// keyedObject is the schema of a mapping of exactly keys, in their
// order, each with its schema in props. A key without a schema, or a
// schema without a key, is a mistake in TestSchema: it panics, which its
// tests catch.
func keyedObject(desc string, keys, required []string, props map[string]any) obj {
	if len(keys) != len(props) {
		panic(fmt.Sprintf("test schema: keys %v, schemas for %d keys", keys, len(props)))
	}
	p := make(obj, 0, len(keys))
	for _, k := range keys {
		s, ok := props[k]
		if !ok {
			panic(fmt.Sprintf("test schema: no schema for key %q", k))
		}
		p = append(p, member{k, s})
	}
	o := obj{{"description", desc}, {"type", "object"}, {"properties", p}, {"additionalProperties", false}}
	if len(required) > 0 {
		o = append(o, member{"required", required})
	}
	return o
}

// stepKeyPattern matches what a test names a step by: a step id, or the
// key of a loop's instance, loop[item].step (docs/architecture.md, "The record").
var stepKeyPattern = func() string {
	id := strings.TrimSuffix(strings.TrimPrefix(namePattern.String(), "^"), "$")
	return "^" + id + `(\[[A-Za-z0-9_-]{1,48}\]\.` + id + ")?$"
}()
