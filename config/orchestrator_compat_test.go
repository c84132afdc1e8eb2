package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/gates"
)

// TestOrchestratorClash pins that a file with agent_orchestrator's
// shape and a key of flow's own is one error naming both keys, never
// read in either format.
func TestOrchestratorClash(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"a top-level key of flow's", `name: a
vars: {v: 1}
steps:
  - id: x
    agent: coder
    prompt: p.md
    next_on_success: []
`, `w.yaml:2:1: vars is a key of flow's own format, but next_on_success (line 7) is agent_orchestrator's`},
		{"a step key of flow's", `steps:
  - id: x
    agent: coder
    prompt: p.md
    loop: {items: [1]}
  - id: y
    run: echo
    when: "true"
`, `w.yaml:8:5: when is a key of flow's own format, but loop (line 5) is agent_orchestrator's`},
		{"md prompts and no agents", `defaults: {max_attempts: 3}
steps:
  - id: x
    agent: coder
    prompt: prompts/x.md
`, `w.yaml:1:1: defaults is a key of flow's own format, but prompt: prompts/x.md (line 5) is agent_orchestrator's`},
		{"agents and a marker", `agents:
  coder: {run: echo}
steps:
  - id: x
    agent: coder
    prompt: x.md
    human_in_the_loop: true
`, `w.yaml:1:1: agents is a key of flow's own format, but human_in_the_loop (line 7) is agent_orchestrator's`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadOrch(t, tt.src, OrchestratorOptions{Wrapper: "w.sh"})
			var ds Diagnostics
			if !errors.As(err, &ds) {
				t.Fatalf("err = %v, want Diagnostics", err)
			}
			if len(ds) != 1 || !strings.Contains(ds[0].String(), tt.want) {
				t.Fatalf("diagnostics:\n%s\nwant one holding %q", ds.Error(), tt.want)
			}
		})
	}
}

// TestOrchestratorForcedFormat pins Options.Format: a file is read in
// the format forced, whatever its shape.
func TestOrchestratorForcedFormat(t *testing.T) {
	fs := afero.NewMemMapFs()
	write := func(name, src string) {
		if err := afero.WriteFile(fs, "/r/"+name, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// No marker: flow's by detection, agent_orchestrator's when forced.
	write("plain.yaml", "steps:\n  - {id: a, agent: x, prompt: a.txt}\n")
	if _, err := LoadWith(fs, "/r/plain.yaml", Options{Repo: "/r"}); err == nil || !strings.Contains(err.Error(), `unknown agent "x"`) {
		t.Errorf("detected: err = %v, want flow's unknown agent", err)
	}
	w, err := LoadWith(fs, "/r/plain.yaml", Options{Repo: "/r", Format: FormatOrchestrator})
	if err != nil || w.Dialect != DialectOrchestrator || w.DialectReason != "" {
		t.Errorf("forced orchestrator: %v, %+v", err, w)
	}
	// A clash forced either way is read in that format.
	clash := "vars: {v: 1}\nsteps:\n  - {id: a, agent: x, prompt: a.md, next_on_success: []}\n"
	write("clash.yaml", clash)
	w, err = LoadWith(fs, "/r/clash.yaml", Options{Repo: "/r", Format: FormatOrchestrator})
	if err != nil || len(w.Warnings) != 1 || !strings.Contains(w.Warnings[0].Message, `unknown workflow key "vars"`) {
		t.Errorf("forced orchestrator: %v, warnings %v", err, w)
	}
	_, err = LoadWith(fs, "/r/clash.yaml", Options{Repo: "/r", Format: FormatFlow})
	if err == nil || !strings.Contains(err.Error(), `unknown key "next_on_success"`) {
		t.Errorf("forced flow: err = %v, want flow's unknown key", err)
	}
}

// TestOrchestratorUnknownKeys pins that keys agent_orchestrator's format
// does not know are warnings with a did-you-mean, never a fall-back to
// flow's format, and that the file loads without them.
func TestOrchestratorUnknownKeys(t *testing.T) {
	w, err := loadOrch(t, `name: a
descripton: typo
steps:
  - id: plan
    agent: planner
    prompt: p.md
    next_on_sucess: [code]
    owner: alice
  - id: code
    agent: coder
    prompt: c.md
    needs: [plan]
    loop:
      items: [1, 2]
      item_vr: n
`, OrchestratorOptions{Wrapper: "w.sh"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range w.Warnings {
		got = append(got, d.String())
	}
	want := []string{
		`/r/w.yaml:2:1: warning: unknown workflow key "descripton" (did you mean "description"?): ignored, as agent_orchestrator ignores it`,
		`/r/w.yaml:7:5: warning: unknown step key "next_on_sucess" (did you mean "next_on_success"?): ignored, as agent_orchestrator ignores it`,
		`/r/w.yaml:8:5: warning: unknown step key "owner": ignored, as agent_orchestrator ignores it`,
		`/r/w.yaml:15:7: warning: unknown loop key "item_vr" (did you mean "item_var"?): ignored, as agent_orchestrator ignores it`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if w.Warnings[1].Suggestion != "next_on_success" {
		t.Errorf("suggestion = %q", w.Warnings[1].Suggestion)
	}
	if w.Dialect != DialectOrchestrator || w.Step("code") == nil || w.Step("code").ForEach.As != "item" {
		t.Errorf("workflow = %+v", w)
	}
}

// TestOrchestratorShippedKeys pins keys agent_orchestrator's shipped
// workflows write: max_attempts (honoured, as flow's), a top-level
// metadata (read by neither), a timeout in seconds (ignored).
func TestOrchestratorShippedKeys(t *testing.T) {
	w, err := loadOrch(t, `name: doctor
description: d
metadata:
  owner: qa
  tags: [flaky]
steps:
  - id: mine
    agent: miner
    prompt: prompts/mine.md
    needs: []
    next_on_success: [fix]
    timeout: 600
    max_attempts: 3
  - id: fix
    agent: fixer
    prompt: prompts/fix.md
    needs: [mine]
    max_attempts: 1
    human_in_the_loop: true
`, OrchestratorOptions{Wrapper: "w.sh"})
	if err != nil {
		t.Fatal(err)
	}
	if m := w.Step("mine").MaxAttempts; m == nil || m.N != 3 {
		t.Errorf("mine.MaxAttempts = %+v, want 3", m)
	}
	if m := w.Step("fix").MaxAttempts; m == nil || m.N != 1 {
		t.Errorf("fix.MaxAttempts = %+v, want 1", m)
	}
	if len(w.Warnings) != 1 || !strings.Contains(w.Warnings[0].Message, "timeout is ignored") {
		t.Errorf("warnings = %v, want only timeout's", w.Warnings)
	}
	if !slicesHas(w.Notes[""], "metadata is read by neither format") {
		t.Errorf("notes = %q", w.Notes[""])
	}
}

func slicesHas(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestOrchestratorItemsFrom pins where a loop's items come from:
// items_from_step reads the step's first artifact (made relative to the
// repository by the runner), items_from_artifact the file it names,
// each a JSON list or an object whose items is one.
func TestOrchestratorItemsFrom(t *testing.T) {
	w, err := loadOrch(t, `steps:
  - id: breakdown
    agent: planner
    prompt: b.md
  - id: each
    agent: coder
    prompt: c.md
    loop: {items_from_step: breakdown}
  - id: more
    agent: coder
    prompt: c.md
    needs: [breakdown]
    loop: {items_from_artifact: out/more.json}
`, OrchestratorOptions{Wrapper: "w.sh"})
	if err != nil {
		t.Fatal(err)
	}
	each, more := w.Step("each"), w.Step("more")
	if !reflect.DeepEqual(each.Needs, []string{"breakdown"}) {
		t.Errorf("each.Needs = %v", each.Needs)
	}
	tests := []struct {
		name, file, content string
		prog                *Expr
		want                any
		err                 string
	}{
		{"a list", "stories.json", `["a", "b"]`, each.ForEach.Items, []any{"a", "b"}, ""},
		{"an object's items", "stories.json", `{"items": [{"id": 1}], "other": 2}`, each.ForEach.Items, []any{map[string]any{"id": 1.0}}, ""},
		{"an object without items", "stories.json", `{"stories": []}`, each.ForEach.Items, nil, ""},
		{"the artifact file", "out/more.json", `{"items": ["x"]}`, more.ForEach.Items, []any{"x"}, ""},
		{"no such file", "elsewhere.json", `[]`, more.ForEach.Items, nil, "out/more.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := afero.NewMemMapFs()
			if err := afero.WriteFile(fs, "/r/"+tt.file, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			env := &gates.Env{FS: fs, Dir: "/r", Steps: map[string]gates.StepInfo{"breakdown": {Artifacts: []string{"stories.json", "second.json"}}}}
			got, err := tt.prog.Program().Eval(env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("items = %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestOrchestratorGateNames pins that agent_orchestrator's gates are
// named with any string, in its format and under compat, while flow's
// own gates keep their names plain.
func TestOrchestratorGateNames(t *testing.T) {
	w, err := loadOrch(t, `steps:
  - id: ship
    agent: shipper
    prompt: s.md
    next_on_success: []
    gates: ["ci.tests: passed", "review done"]
`, OrchestratorOptions{Wrapper: "w.sh"})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Step("ship").Gates(); !reflect.DeepEqual(got, []string{"ci.tests: passed", "review done"}) {
		t.Errorf("gates = %q", got)
	}
	fs := afero.NewMemMapFs()
	native := "name: n\n%sagents:\n  a: {run: echo}\nsteps:\n  - id: ship\n    agent: a\n    prompt: x\n    external_gates: [\"ci.tests: passed\"]\n"
	_ = afero.WriteFile(fs, "/r/compat.yaml", []byte(strings.Replace(native, "%s", "compat: agent_orchestrator\n", 1)), 0o644)
	if _, err := LoadWith(fs, "/r/compat.yaml", Options{Repo: "/r"}); err != nil {
		t.Errorf("compat: %v", err)
	}
	_ = afero.WriteFile(fs, "/r/flow.yaml", []byte(strings.Replace(native, "%s", "", 1)), 0o644)
	if _, err := LoadWith(fs, "/r/flow.yaml", Options{Repo: "/r"}); err == nil || !strings.Contains(err.Error(), `gate "ci.tests: passed": want letters`) {
		t.Errorf("flow: err = %v", err)
	}
}

// TestOrchestratorCommandArgs pins that wrapper arguments follow a
// command template too, and a .py wrapper's interpreter.
func TestOrchestratorCommandArgs(t *testing.T) {
	tests := []struct {
		o    OrchestratorOptions
		want string
	}{
		{OrchestratorOptions{CommandTemplate: "run {agent}", WrapperArgs: []string{"--x", "a b"}}, "run " + bare("AGENT_ID") + " --x 'a b'"},
		{OrchestratorOptions{Wrapper: "w.py", Python: "/opt/py 3/bin/python"}, `'/opt/py 3/bin/python' w.py --run-id`},
		{OrchestratorOptions{Wrapper: "w.py"}, `python3 w.py --run-id`},
		{OrchestratorOptions{Wrapper: "w.sh", Python: "python3.12"}, `w.sh --run-id`},
	}
	for _, tt := range tests {
		if got := OrchestratorCommand(tt.o, "a"); !strings.HasPrefix(got, tt.want) {
			t.Errorf("OrchestratorCommand(%+v) = %s, want it to start %s", tt.o, got, tt.want)
		}
	}
}
