package config

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

func TestDetectFormat(t *testing.T) {
	tests := []struct {
		name, file, src string
		want            string
		why             string
	}{
		{name: "next_on_success", src: `
name: a
steps:
  - id: x
    agent: coder
    prompt: p.txt
    next_on_success: [y]
  - id: y
    agent: coder
    prompt: p.txt
`, want: FormatOrchestrator, why: "it has next_on_success"},
		{name: "human_in_the_loop", src: `
steps:
  - id: x
    agent: coder
    prompt: p.txt
    human_in_the_loop: false
`, want: FormatOrchestrator, why: "it has human_in_the_loop"},
		{name: "loop", src: `
description: d
steps:
  - id: x
    agent: coder
    prompt: p.txt
    loop: {items: [1, 2]}
`, want: FormatOrchestrator, why: "it has loop"},
		{name: "md prompt and no agents", src: `
name: a
steps:
  - id: x
    agent: coder
    prompt: prompts/x.MD
`, want: FormatOrchestrator, why: "prompt files (prompts/x.MD)"},
		{name: "yml extension", file: "w.yml", src: `
steps:
  - {id: x, agent: coder, prompt: x.md}
`, want: FormatOrchestrator, why: "prompt files (x.md)"},
		{name: "flow's agents block", src: `
name: a
agents:
  coder: {run: echo}
steps:
  - id: x
    agent: coder
    prompt: prompts/x.md
`, want: FormatFlow},
		{name: "a flow-only top-level key with a marker", src: `
name: a
vars: {v: 1}
steps:
  - id: x
    agent: coder
    prompt: p.md
    next_on_success: []
`, want: FormatFlow},
		{name: "a flow-only step key with a marker", src: `
steps:
  - id: x
    agent: coder
    prompt: p.md
    loop: {items: [1]}
    gate: {pass: "true"}
`, want: FormatFlow},
		{name: "keys both formats know count for neither", src: `
steps:
  - id: x
    agent: coder
    prompt: p.md
    loop: {items: [1]}
    max_attempts: 3
    needs: []
    loop_back_to: x
`, want: FormatOrchestrator, why: "it has loop"},
		{name: "keys of neither format decide nothing", src: `
name: a
metadata: {owner: me}
steps:
  - id: x
    agent: coder
    prompt: p.txt
    next_on_success: []
    retries: 3
`, want: FormatOrchestrator, why: "it has next_on_success"},
		{name: "md prompts and a flow-only key", src: `
vars: {v: 1}
steps:
  - id: x
    agent: coder
    prompt: p.md
`, want: FormatFlow},
		{name: "a plain flow file", src: `
name: a
steps:
  - id: x
    run: echo hi
`, want: FormatFlow},
		{name: "an inline prompt ending in .md", src: `
steps:
  - id: x
    agent: coder
    prompt: |
      Write README.md
`, want: FormatFlow},
		{name: "a .md prompt with no agent", src: `
steps:
  - id: x
    prompt: x.md
`, want: FormatFlow},
		{name: "no steps", src: "name: a\n", want: FormatFlow},
		{name: "steps not a list", src: "steps: {x: 1}\n", want: FormatFlow},
		{name: "a step not a mapping", src: "steps: [x]\n", want: FormatFlow},
		{name: "not a mapping", src: "- a\n- b\n", want: FormatFlow},
		{name: "empty", src: "", want: FormatFlow},
		{name: "unparsable", src: "steps: [\n", want: FormatFlow},
		{name: "HCL", file: "w.hcl", src: `name = "a"`, want: FormatFlow},
		{name: "anchors resolved", src: `
x: &s
  id: x
steps:
  - *s
`, want: FormatFlow},
		{name: "aliased step with a marker", src: `
name: a
steps:
  - &s {id: x, agent: coder, prompt: p.txt, human_in_the_loop: true}
  - *s
`, want: FormatOrchestrator, why: "human_in_the_loop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = "w.yaml"
			}
			got, why := DetectFormat(file, []byte(tt.src))
			if got != tt.want {
				t.Fatalf("DetectFormat = %q (%q), want %q", got, why, tt.want)
			}
			if tt.want == FormatFlow && why != "" {
				t.Errorf("why = %q for flow's format, want none", why)
			}
			if !strings.Contains(why, tt.why) {
				t.Errorf("why = %q, want it to hold %q", why, tt.why)
			}
		})
	}
}

// loadOrch loads src as w.yaml in agent_orchestrator's format.
func loadOrch(t *testing.T, src string, o OrchestratorOptions) (*Workflow, error) {
	t.Helper()
	fs := afero.NewMemMapFs()
	if err := afero.WriteFile(fs, "/r/w.yaml", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return LoadWith(fs, "/r/w.yaml", Options{Repo: "/r", Orchestrator: o})
}

func TestOrchestratorMapping(t *testing.T) {
	w, err := loadOrch(t, `name: big
steps:
  - id: breakdown
    agent: planner
    prompt: prompts/breakdown.md
    metadata: {owner: alice, tags: [a, b]}
    model: m-1
  - id: implement
    agent: coder
    prompt: prompts/implement.md
    loop:
      items_from_step: breakdown
      item_var: story
      index_var: story_index
      max_iterations: 7
    metadata: {kind: loop}
  - id: review
    agent: reviewer
    prompt: prompts/review.md
    needs: implement
    loop_back_to: implement
    next_on_success: [docs]
  - id: docs
    agent: coder
    prompt: prompts/docs.md
    needs: [review]
    timeout: 10m
`, OrchestratorOptions{Wrapper: "/w/wrap.sh", WrapperArgs: []string{"--x"}})
	if err != nil {
		t.Fatal(err)
	}
	if w.Dialect != DialectOrchestrator {
		t.Errorf("Dialect = %q", w.Dialect)
	}
	b := w.Step("breakdown")
	if b == nil || len(b.Needs) != 0 || b.Model != "m-1" || b.PromptPath != "prompts/breakdown.md" {
		t.Fatalf("breakdown = %+v", b)
	}
	if want := map[string]any{"owner": "alice", "tags": []any{"a", "b"}}; !reflect.DeepEqual(b.Metadata(), want) {
		t.Errorf("breakdown.Metadata = %#v, want %#v", b.Metadata(), want)
	}
	loop := w.Step("implement")
	if loop == nil || loop.ForEach == nil {
		t.Fatalf("implement is not a loop: %+v", loop)
	}
	fe := loop.ForEach
	if fe.As != "story" || fe.IndexAs != "story_index" || fe.MaxItems != 7 || len(fe.Body) != 1 {
		t.Errorf("implement's for_each = %+v", fe)
	}
	// items_from_step makes the loop need the step it reads.
	if !reflect.DeepEqual(loop.Needs, []string{"breakdown"}) {
		t.Errorf("implement.Needs = %v, want [breakdown]", loop.Needs)
	}
	if want := map[string]any{"kind": "loop"}; !reflect.DeepEqual(loop.Metadata(), want) {
		t.Errorf("implement.Metadata = %#v", loop.Metadata())
	}
	body := fe.Body[0]
	if body.ID != "implement_item" || body.Loop != "implement" || body.Agent != "coder" || body.PromptPath != "prompts/implement.md" || body.Metadata() != nil {
		t.Errorf("implement's body = %+v", body)
	}
	if r := w.Step("review"); r == nil || r.LoopBackTo() != "implement" {
		t.Errorf("review loops back to %v", r)
	}
	// Four loop-backs: flow's five iterations.
	if l := w.Defaults.MaxIterations; l == nil || l.N != DefaultMaxIterations+1 {
		t.Errorf("Defaults.MaxIterations = %+v, want %d", l, DefaultMaxIterations+1)
	}
	if len(w.Warnings) != 1 || !strings.Contains(w.Warnings[0].String(), "w.yaml:27:14: warning: timeout is ignored") {
		t.Errorf("Warnings = %v", w.Warnings)
	}
	for _, a := range []string{"planner", "coder", "reviewer"} {
		ag := w.Agents[a]
		if ag == nil || ag.Run == nil {
			t.Fatalf("agent %s not defined: %+v", a, w.Agents)
		}
	}
	if len(w.Agents) != 3 {
		t.Errorf("agents = %v, want 3", w.Agents)
	}
}

func TestOrchestratorNoWrapper(t *testing.T) {
	// Without --wrapper or --command-template the file loads, and its
	// agents are left undeclared for the run to refuse.
	w, err := loadOrch(t, "steps:\n  - {id: a, agent: x, prompt: a.md}\n", OrchestratorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Agents) != 0 {
		t.Errorf("agents = %v, want none", w.Agents)
	}
	if w.Name != "w" {
		t.Errorf("Name = %q, want the file's", w.Name)
	}
}

func TestOrchestratorErrors(t *testing.T) {
	opts := OrchestratorOptions{Wrapper: "wrap.sh"}
	tests := []struct {
		name, src string
		want      []string
	}{
		{"missing agent", `
steps:
  - id: a
    prompt: a.md
    next_on_success: []
`, []string{`w.yaml:2:9: step "a": agent is required (the name the wrapper is given)`}},
		{"missing prompt", `
steps:
  - id: a
    agent: x
    next_on_success: []
`, []string{`w.yaml:2:9: step "a": prompt is required (the path of its prompt file)`}},
		{"unknown next_on_success", `
steps:
  - id: coding
    agent: x
    prompt: a.md
  - id: review
    agent: x
    prompt: a.md
    next_on_success: [docs, codng]
`, []string{
			`w.yaml:8:23: next_on_success: unknown step "docs"`,
			`w.yaml:8:29: next_on_success: unknown step "codng" (did you mean "coding"?)`,
		}},
		{"two item sources", `
steps:
  - id: plan
    agent: x
    prompt: a.md
  - id: each
    agent: x
    prompt: a.md
    loop:
      items: [1, 2]
      items_from_step: plan
`, []string{`w.yaml:8:5: step "each": loop has both items and items_from_step; give one`}},
		{"three item sources", `
steps:
  - id: each
    agent: x
    prompt: a.md
    loop:
      items_from_artifact: items.json
      items: [1]
      items_from_step: plan
  - id: plan
    agent: x
    prompt: a.md
`, []string{`w.yaml:5:5: step "each": loop has both items and items_from_step; give one`}},
		{"no item source", `
steps:
  - id: each
    agent: x
    prompt: a.md
    loop: {item_var: it}
`, []string{`w.yaml:5:5: step "each": loop needs one of items, items_from_step or items_from_artifact`}},
		{"items not a list", `
steps:
  - id: each
    agent: x
    prompt: a.md
    loop: {items: 3}
`, []string{`w.yaml:5:19: loop.items: want a list`}},
		{"human_in_the_loop not a bool", `
steps:
  - id: a
    agent: x
    prompt: a.md
    human_in_the_loop: maybe
`, []string{`w.yaml:5:24: human_in_the_loop: want true or false, got "maybe"`}},
		{"metadata not a mapping", `
steps:
  - id: a
    agent: x
    prompt: a.md
    metadata: [1]
    next_on_success: []
`, []string{`w.yaml:5:15: metadata: want a mapping`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadOrch(t, strings.TrimPrefix(tt.src, "\n"), opts)
			var ds Diagnostics
			if !errors.As(err, &ds) {
				t.Fatalf("err = %v, want Diagnostics", err)
			}
			text := ds.Error()
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("diagnostics:\n%s\nwant one holding %q", text, w)
				}
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	tests := map[string]string{
		"":                  "''",
		"plain":             "plain",
		"/a/b-c_d.py":       "/a/b-c_d.py",
		"--flag=x,y:z@1+%2": "--flag=x,y:z@1+%2",
		"two words":         "'two words'",
		"it's":              `'it'\''s'`,
		"$(rm -rf /)":       "'$(rm -rf /)'",
		"a\nb":              "'a\nb'",
		"*":                 "'*'",
		"~":                 "'~'",
	}
	for in, want := range tests {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// bare is a placeholder outside quotes: one word, or none when empty.
func bare(name string) string { return "${" + name + `:+"${` + name + `}"}` }

func TestExpandPlaceholders(t *testing.T) {
	tests := []struct{ tmpl, want string }{
		{"run {step_id}", `run ` + bare("STEP_ID")},
		{`run "{prompt}"`, `run "${PROMPT_PATH}"`},
		{`run '{report}'`, `run ''"${REPORT_PATH}"''`},
		{`run "x {run_id} y"`, `run "x ${RUN_ID} y"`},
		{"{repo}/{attempt} {manual_input}", bare("REPO_DIR") + "/" + bare("STEP_ATTEMPT") + " " + bare("MANUAL_RESULT_PATH")},
		{"{agent}", bare("AGENT_ID")},
		// Not placeholders: left as written.
		{"echo {} {x} {step_id", "echo {} {x} {step_id"},
		{"awk '{print $1}'", "awk '{print $1}'"},
		// An escaped quote does not open a quoted string.
		{`echo \" {step_id}`, `echo \" ` + bare("STEP_ID")},
		{`echo "a\"b {step_id}"`, `echo "a\"b ${STEP_ID}"`},
		// A single-quoted backslash is a backslash.
		{`echo '\' {step_id}`, `echo '\' ` + bare("STEP_ID")},
	}
	for _, tt := range tests {
		if got := expandPlaceholders(tt.tmpl, "a"); got != tt.want {
			t.Errorf("expandPlaceholders(%q) = %s, want %s", tt.tmpl, got, tt.want)
		}
	}
}

func TestOrchestratorCommand(t *testing.T) {
	base := ` --run-id "$RUN_ID" --step-id "$STEP_ID" --agent %s --prompt "$PROMPT_PATH" --repo "$REPO_DIR" --report "$REPORT_PATH"`
	tests := []struct {
		o     OrchestratorOptions
		agent string
		want  string
	}{
		{OrchestratorOptions{Wrapper: "/w/wrap.sh"}, "coder", "/w/wrap.sh" + strings.Replace(base, "%s", "coder", 1)},
		{OrchestratorOptions{Wrapper: "/my tools/wrap.py", WrapperArgs: []string{"--fast", "two words"}}, "a b",
			"python3 '/my tools/wrap.py'" + strings.Replace(base, "%s", "'a b'", 1) + " --fast 'two words'"},
		{OrchestratorOptions{Wrapper: "/w/wrap.PY"}, "c", "/w/wrap.PY" + strings.Replace(base, "%s", "c", 1)},
		{OrchestratorOptions{CommandTemplate: "run {agent} --p '{prompt}'"}, "c", `run ` + bare("AGENT_ID") + ` --p ''"${PROMPT_PATH}"''`},
	}
	for _, tt := range tests {
		if got := OrchestratorCommand(tt.o, tt.agent); got != tt.want {
			t.Errorf("OrchestratorCommand(%+v, %q) =\n%s\nwant\n%s", tt.o, tt.agent, got, tt.want)
		}
	}
}

// TestOrchestratorCommandShell runs commands through sh to check that
// every value reaches the program as one word, as it is.
func TestOrchestratorCommandShell(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "my wrapper.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"RUN_ID=r 1", "STEP_ID=s", "AGENT_ID=it's", "PROMPT_PATH=/p/$(touch x)", "REPO_DIR=/r e p o",
		"REPORT_PATH=/rep/`x`", "STEP_ATTEMPT=2", "MANUAL_RESULT_PATH=*")
	run := func(cmd string) string {
		c := exec.Command("sh", "-c", cmd)
		c.Env, c.Dir = env, dir
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		return string(out)
	}
	got := run(OrchestratorCommand(OrchestratorOptions{Wrapper: script, WrapperArgs: []string{"a b", "$HOME"}}, "it's"))
	want := "[--run-id]\n[r 1]\n[--step-id]\n[s]\n[--agent]\n[it's]\n[--prompt]\n[/p/$(touch x)]\n[--repo]\n[/r e p o]\n[--report]\n[/rep/`x`]\n[a b]\n[$HOME]\n"
	if got != want {
		t.Errorf("wrapper got\n%s\nwant\n%s", got, want)
	}
	tmpl := `'` + script + `' {run_id} "{repo}/x" '{prompt}' pre{attempt}post {manual_input} '{agent}' "{report}"`
	got = run(OrchestratorCommand(OrchestratorOptions{CommandTemplate: tmpl}, "ignored"))
	want = "[r 1]\n[/r e p o/x]\n[/p/$(touch x)]\n[pre2post]\n[*]\n[it's]\n[/rep/`x`]\n"
	if got != want {
		t.Errorf("template got\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a value was run by the shell")
	}
}
