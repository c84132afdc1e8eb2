package config_test

import (
	"encoding/json"
	"flag"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"
	"go.yaml.in/yaml/v3"

	"github.com/flow-run/flow/config"
)

var updateEmit = flag.Bool("update-emit", false, "rewrite the golden files of config/testdata/emit")

// reemit writes w in format and loads the result as a file beside the
// one w was loaded from, so that its prompt files are found, checking
// that the model is the same (positions aside) and so is its digest.
func reemit(t *testing.T, w *config.Workflow, format string, o config.EmitOptions) []byte {
	t.Helper()
	out, err := config.Emit(w, format, o)
	if err != nil {
		t.Fatalf("Emit %s: %v", format, err)
	}
	path := filepath.Join(filepath.Dir(w.File), "emitted."+format)
	back, err := config.Parse(afero.NewOsFs(), path, format, out)
	if err != nil {
		t.Fatalf("the emitted %s does not load: %v\n%s", format, err, out)
	}
	if diff := cmp.Diff(w, back, ignorePositions); diff != "" {
		t.Fatalf("the emitted %s loads differently (-loaded +emitted):\n%s\n%s", format, diff, out)
	}
	if w.Digest() != back.Digest() {
		t.Errorf("the emitted %s has another digest\n%s", format, out)
	}
	return out
}

// emitSubjects lists the workflow files under workflows/ and
// config/testdata that are workflows rather than their tests.
func emitSubjects(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, root := range []string{"../workflows", "testdata"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && d.Name() == "fuzz":
				return filepath.SkipDir
			case d.IsDir() || config.IsTestFile(path):
				return nil
			}
			switch filepath.Ext(path) {
			case ".yaml", ".yml", ".hcl":
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 10 {
		t.Fatalf("only %d workflows found: %v", len(files), files)
	}
	return files
}

func TestEmitRoundTrip(t *testing.T) {
	osfs := afero.NewOsFs()
	for _, path := range emitSubjects(t) {
		t.Run(strings.TrimPrefix(path, "../"), func(t *testing.T) {
			w, err := config.Load(osfs, path)
			if err != nil {
				if strings.HasPrefix(path, "testdata") && !strings.HasPrefix(path, "testdata/emit") {
					t.Skipf("not a valid workflow: %v", err)
				}
				t.Fatal(err)
			}
			o := config.EmitOptions{Header: []string{"converted from " + filepath.Base(path)}, StepNotes: map[string][]string{}}
			for _, s := range w.AllSteps() {
				o.StepNotes[s.ID] = []string{"step " + s.ID, "", "# " + s.ID + " again"}
			}
			for _, format := range []string{"yaml", "hcl"} {
				out := reemit(t, w, format, o)
				if !strings.HasPrefix(string(out), "# converted from ") || !strings.Contains(string(out), "# step "+w.Steps[0].ID+"\n") {
					t.Errorf("the %s has lost its comments:\n%s", format, out)
				}
			}
		})
	}
}

// TestEmitGolden checks the emitted forms of a workflow that uses every
// key; -update-emit rewrites them.
func TestEmitGolden(t *testing.T) {
	w := load(t, afero.NewOsFs(), "testdata/emit/everything.yaml")
	o := config.EmitOptions{
		Header:    []string{"everything.yaml, emitted", "", "every key of a flow file"},
		StepNotes: map[string][]string{"plan": {"the planner writes PLAN.md"}, "lint": {"once per file"}},
	}
	for _, format := range []string{"yaml", "hcl"} {
		got := reemit(t, w, format, o)
		golden := "testdata/emit/everything.out." + format
		if *updateEmit {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s differs (-want +got), rerun with -update-emit if the change is meant:\n%s", golden, diff)
		}
	}
}

// TestEmitEveryKey checks that the workflow of the golden test, emitted,
// and those of newKeys, write every key of the schema: a key added to
// keys.go needs its place in Emit and a use in one of them.
func TestEmitEveryKey(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal(config.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok {
				for k := range props {
					keys[k] = true
				}
			}
			for _, v := range x {
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(schema)
	w := load(t, afero.NewOsFs(), "testdata/emit/everything.yaml")
	out, err := config.Emit(w, "yaml", config.EmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	written := map[string]bool{}
	var collect func(n *yaml.Node)
	collect = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				written[n.Content[i].Value] = true
			}
		}
		for _, c := range n.Content {
			collect(c)
		}
	}
	collect(&doc)
	for _, tt := range newKeys {
		fsys := afero.NewMemMapFs()
		if err := afero.WriteFile(fsys, "/k/k.yaml", []byte(tt.src), 0o644); err != nil {
			t.Fatal(err)
		}
		if w, err := config.Load(fsys, "/k/k.yaml"); err == nil {
			out, err := config.Emit(w, "yaml", config.EmitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var doc yaml.Node
			if err := yaml.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			collect(&doc)
		}
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		if !written[k] {
			t.Errorf("key %q is not written: give it a place in Emit and a use in testdata/emit/everything.yaml or newKeys", k)
		}
	}
}

// TestEmitQuoting writes strings that need care in one format or the
// other wherever a workflow holds free text, and loads them back.
func TestEmitQuoting(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    string
		// template is set when s is a valid template, written as a
		// command too.
		template bool
		// hcl is a piece the HCL must hold.
		hcl string
	}{
		{"colon space", "key: value", true, ""},
		{"hash", "a # not a comment", true, ""},
		{"leading hash", "# not a comment", true, ""},
		{"leading star", "*alias", true, ""},
		{"leading ampersand", "&anchor", true, ""},
		{"leading dash", "- item", true, ""},
		{"leading question", "? key", true, ""},
		{"leading bang", "!tag", true, ""},
		{"leading percent", "%YAML", true, ""},
		{"leading at", "@x", true, ""},
		{"backtick", "`x`", true, ""},
		{"template", "{{ vars.v }}", true, ""},
		{"braces", "{a: 1}", true, ""},
		{"brackets", "[a, b]", true, ""},
		{"quotes", `say "hi" and 'bye'`, true, ""},
		{"backslash", `C:\path\n`, true, ""},
		{"shell", `echo "${HOME}" $PATH`, true, "$${HOME}"},
		{"hcl directive", "%{ if true }x%{ endif }", true, "%%{ if true }"},
		{"escaped already", "$${x} and %%{y}", true, ""},
		{"dollar brace in block", "line one ${A}\nline two %{B}\n", true, ""},
		{"newlines", "one\ntwo\n", true, ""},
		{"newline without end", "one\ntwo", true, ""},
		{"trailing newlines", "one\n\n\n", true, ""},
		{"leading spaces", "  indented\nnot\n", true, ""},
		{"all indented", "  a\n  b\n", true, ""},
		{"blank lines", "a\n\n\nb\n", true, ""},
		{"spaces only line", "a\n   \nb\n", true, ""},
		{"trailing spaces", "a  \nb\n", true, ""},
		{"tab", "a\tb\n\tc\n", true, ""},
		{"carriage return", "a\r\nb\r\n", true, ""},
		{"heredoc delimiter", "a\nEOT\n  EOT\nb\n", true, ""},
		{"unicode", "héllo ✓ 日本語 🚀", true, ""},
		{"bool-like", "true", true, ""},
		{"yes", "yes", true, ""},
		{"null-like", "null", true, ""},
		{"tilde", "~", true, ""},
		{"number-like", "0x1F", true, ""},
		{"octal-like", "0755", true, ""},
		{"float-like", "1e3", true, ""},
		{"empty", "", false, ""},
		{"space", " ", true, ""},
		{"document marker", "---", true, ""},
		{"control", "bell\a", true, ""},
		{"long", strings.Repeat("a long line of text ", 20), true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := quotingWorkflow(t, tt.s, tt.template)
			reemit(t, w, "yaml", config.EmitOptions{Header: []string{tt.s}})
			h := reemit(t, w, "hcl", config.EmitOptions{Header: []string{tt.s}})
			if tt.hcl != "" && !strings.Contains(string(h), tt.hcl) {
				t.Errorf("the HCL does not hold %q:\n%s", tt.hcl, h)
			}
		})
	}
}

// quotingWorkflow loads a workflow and puts s in its free text: the
// description, a variable, an input's description and default, an item
// of a loop, a notify command and, when s is a template, a command, a
// prompt, a message and an env value.
func quotingWorkflow(t *testing.T, s string, template bool) *config.Workflow {
	t.Helper()
	fsys := afero.NewMemMapFs()
	src := `name: quoting
vars: {v: x}
agents:
  a: {run: "true"}
notify: {command: "true"}
steps:
  - id: cmd
    run: "true"
  - id: ask
    agent: a
    prompt: p
  - id: approve
    human:
      message: m
      inputs: [{name: i, default: d, description: x}]
  - id: each
    for_each: [x]
    steps:
      - id: inner
        run: "true"
        env: {E: x}
`
	if err := afero.WriteFile(fsys, "/q/quoting.yaml", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	w := load(t, fsys, "/q/quoting.yaml")
	w.File = "testdata/emit/quoting.yaml" // reemit loads beside it
	if s != "" {
		w.Description = s
	}
	w.Vars["v"] = s
	w.Notify.Command = s + "x"
	in := &w.Step("approve").Human.Inputs[0]
	in.Description, in.Default = s, s
	w.Step("each").ForEach.List = []any{s, []any{s, 1.5, nil, true}, map[string]any{s: s, "n": 3.0}}
	if template {
		w.Step("cmd").Run.Src = s
		w.Step("ask").Prompt.Src = s
		w.Step("approve").Human.Message.Src = s
		w.Step("inner").Env["E"].Src = s
	}
	return w
}

// newKeys are workflows that use the keys of a step added after the
// emitter was first written, one each; a workflow whose key the loader
// does not know is skipped.
var newKeys = []struct{ name, src string }{
	{"sandbox", `name: k
defaults: {sandbox: required}
steps:
  - {id: s, run: "true", sandbox: off}
`},
	{"prompt_path", `name: k
agents: {a: {run: "true"}}
steps:
  - {id: s, agent: a, prompt_path: prompts/next.md}
`},
	{"model", `name: k
agents: {a: {preset: claude}}
defaults: {agent: a}
steps:
  - {id: s, prompt: hi, model: opus}
`},
	{"metadata", `name: k
steps:
  - id: s
    run: "true"
    metadata: {owner: me, tags: [a, "b: c"], n: 2, f: 0.5, ok: true, none: null, nested: {x: [1, {y: "${z}"}]}}
  - id: l
    for_each: [1]
    metadata: {}
    steps:
      - {id: t, run: "true", metadata: {"key with space": v}}
`},
	{"external_gates", `name: k
steps:
  - {id: s, run: "true", external_gates: [deploy.ok, qa-1]}
`},
	{"max_items", `name: k
steps:
  - id: l
    for_each: [1, 2]
    max_items: 5
    steps:
      - {id: t, run: "true"}
`},
	{"retention", `name: k
defaults: {retention: {keep: 5, older_than: 7d}}
steps:
  - {id: s, run: "true"}
`},
}

// loadNewKey loads a workflow of newKeys, skipping the test when the
// loader does not know its key.
func loadNewKey(t *testing.T, name, src string) *config.Workflow {
	t.Helper()
	fsys := afero.NewMemMapFs()
	if err := afero.WriteFile(fsys, "/k/k.yaml", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := config.Load(fsys, "/k/k.yaml")
	if err != nil {
		if strings.Contains(err.Error(), `unknown key "`+name+`"`) {
			t.Skipf("the loader does not know %s", name)
		}
		t.Fatal(err)
	}
	w.File = "testdata/emit/k.yaml" // reemit loads beside it
	return w
}

func TestEmitNewKeys(t *testing.T) {
	for _, tt := range newKeys {
		t.Run(tt.name, func(t *testing.T) {
			w := loadNewKey(t, tt.name, tt.src)
			for _, format := range []string{"yaml", "hcl"} {
				if out := reemit(t, w, format, config.EmitOptions{}); !strings.Contains(string(out), tt.name) {
					t.Errorf("the %s does not write %s:\n%s", format, tt.name, out)
				}
			}
		})
	}
}

func TestEmitErrors(t *testing.T) {
	w := load(t, afero.NewOsFs(), "../workflows/demo.yaml")
	if _, err := config.Emit(w, "json", config.EmitOptions{}); err == nil {
		t.Error("Emit json: no error")
	}
	if _, err := config.Emit(w, "yaml", config.EmitOptions{StepNotes: map[string][]string{"nope": {"x"}}}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("a note of an unknown step: %v", err)
	}
	q := quotingWorkflow(t, "x", true)
	for _, n := range []float64{math.NaN(), math.Inf(1)} {
		q.Step("each").ForEach.List = []any{"a", n}
		for _, format := range []string{"yaml", "hcl"} {
			if _, err := config.Emit(q, format, config.EmitOptions{}); err == nil {
				t.Errorf("Emit %s of the number %v: no error", format, n)
			}
		}
	}
}

// TestEmitOrchestrator converts a workflow in agent_orchestrator's
// format, its notes above its steps, as flow convert does: the file
// loads as flow's to the same model but for the dialect, the notes and
// Human.AnyFile, which no key of flow's says.
func TestEmitOrchestrator(t *testing.T) {
	src := `name: orch
description: from agent_orchestrator
steps:
  - id: plan
    agent: planner
    prompt: prompts/plan.md
    model: opus
    metadata: {team: core}
    gates: [design]
  - id: build
    agent: coder
    prompt: prompts/build.md
    needs: [plan]
    loop:
      items: [a, b]
      item_var: thing
      max_iterations: 5
    loop_back_to: build
    human_in_the_loop: true
  - id: review
    agent: reviewer
    prompt: prompts/review.md
    needs: [build]
    next_on_success: [plan]
`
	fsys := afero.NewMemMapFs()
	if err := afero.WriteFile(fsys, "/o/orch.yaml", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := config.LoadWith(fsys, "/o/orch.yaml", config.Options{Orchestrator: config.OrchestratorOptions{Wrapper: "wrap.py", PauseForHumanInput: true}})
	if err != nil {
		t.Fatal(err)
	}
	if w.Dialect != config.DialectOrchestrator {
		t.Fatalf("dialect %q", w.Dialect)
	}
	dialect := cmp.FilterPath(func(p cmp.Path) bool {
		switch p.Last().String() {
		case ".Dialect", ".DialectReason", ".Warnings", ".Notes":
			return true
		}
		return false
	}, cmp.Ignore())
	for _, format := range []string{"yaml", "hcl"} {
		out, err := config.Emit(w, format, config.EmitOptions{StepNotes: w.Notes})
		if err != nil {
			t.Fatal(err)
		}
		back, err := config.Parse(fsys, "/o/converted."+format, format, out)
		if err != nil {
			t.Fatalf("the %s does not load: %v\n%s", format, err, out)
		}
		if diff := cmp.Diff(w, back, ignorePositions, dialect); diff != "" || back.Dialect != config.DialectFlow {
			t.Errorf("the %s loads as %s differently (-orchestrator +flow):\n%s\n%s", format, back.Dialect, diff, out)
		}
		if h := back.Step("build_item").Human; h == nil || !h.AnyFile {
			t.Errorf("the %s loads build_item's human as %+v, want one with any_file", format, h)
		}
		for _, note := range []string{"# read in agent_orchestrator's format: compat keeps", "# model: opus → $STEP_MODEL\n"} {
			if !strings.Contains(string(out), note) {
				t.Errorf("the %s lacks the note %q:\n%s", format, note, out)
			}
		}
	}
}

// TestEmitAnyFile checks that a human step whose manual-input file any
// content decides is written with any_file.
func TestEmitAnyFile(t *testing.T) {
	w := load(t, afero.NewOsFs(), "../workflows/examples/release.yaml")
	w.Step("approval").Human.AnyFile = true
	for _, format := range []string{"yaml", "hcl"} {
		out, err := config.Emit(w, format, config.EmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		back, err := config.Parse(afero.NewOsFs(), "../workflows/examples/converted."+format, format, out)
		if err != nil {
			t.Fatalf("the %s does not load: %v\n%s", format, err, out)
		}
		if h := back.Step("approval").Human; h == nil || !h.AnyFile {
			t.Errorf("the %s loads approval's human as %+v, want any_file:\n%s", format, h, out)
		}
	}
}
