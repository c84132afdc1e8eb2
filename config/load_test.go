package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/flow-run/flow/config"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/afero"
)

// ignorePositions leaves out of a comparison what differs between a
// workflow's YAML and HCL forms: positions, file names and bytes, and the
// compiled programs.
var ignorePositions = cmp.Options{
	cmp.FilterPath(func(p cmp.Path) bool {
		switch p.Last().String() {
		case ".Pos", ".LoopPos", ".NeedsPos", ".AgentPos", ".ReviewersPos", ".File", ".Format":
			return true
		}
		return false
	}, cmp.Ignore()),
	cmpopts.IgnoreUnexported(config.Workflow{}, config.Expr{}, config.Template{}),
}

func shippedPairs(t *testing.T) []string {
	t.Helper()
	yamls, err := filepath.Glob("../workflows/*.yaml")
	yamls = slices.DeleteFunc(yamls, config.IsTestFile) // workflow tests live beside the workflows
	if err != nil || len(yamls) < 3 {
		t.Fatalf("shipped workflows: %v %v", yamls, err)
	}
	return yamls
}

func load(t *testing.T, fsys afero.Fs, path string) *config.Workflow {
	t.Helper()
	w, err := config.Load(fsys, path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return w
}

func TestShippedTwins(t *testing.T) {
	osfs := afero.NewOsFs()
	for _, y := range shippedPairs(t) {
		h := strings.TrimSuffix(y, ".yaml") + ".hcl"
		t.Run(filepath.Base(y), func(t *testing.T) {
			wy, wh := load(t, osfs, y), load(t, osfs, h)
			if wy.Format != "yaml" || wh.Format != "hcl" {
				t.Errorf("formats %q %q", wy.Format, wh.Format)
			}
			if diff := cmp.Diff(wy, wh, ignorePositions); diff != "" {
				t.Errorf("YAML and HCL models differ (-yaml +hcl):\n%s", diff)
			}
			if wy.Digest() != wh.Digest() {
				sy, _ := wy.Spec()
				sh, _ := wh.Spec()
				t.Errorf("digests differ:\n%s\n%s", sy, sh)
			}
			if !strings.HasPrefix(wy.Digest(), "sha256:") || len(wy.Digest()) != 7+64 {
				t.Errorf("digest %q", wy.Digest())
			}
		})
	}
}

func TestShippedShapes(t *testing.T) {
	osfs := afero.NewOsFs()
	sdlc := load(t, osfs, "../workflows/sdlc.yaml")
	if got, want := sdlc.Order(), []string{"planning", "coding", "tests", "code_review", "manual_approval", "merge"}; !slices.Equal(got, want) {
		t.Errorf("sdlc order %v, want %v", got, want)
	}
	review := sdlc.Step("code_review")
	if review.Gate == nil || review.Gate.LoopBackTo != "coding" || review.Kind != config.KindAgent || review.Agent != "reviewer" {
		t.Errorf("code_review: %+v", review)
	}
	if l := sdlc.StepMaxIterations(review); l.N != 3 {
		t.Errorf("code_review max iterations %+v, want 3", l)
	}
	if c := sdlc.Step("coding"); c.PromptFile() != "prompts/coding.md" || c.Prompt == nil || !strings.Contains(c.Prompt.Src, "PLAN.md") || c.Agent != "coder" {
		t.Errorf("coding: %+v", c)
	}
	if h := sdlc.Step("manual_approval"); h.Kind != config.KindHuman || h.Human.Timeout.D != 24*time.Hour || h.When == nil {
		t.Errorf("manual_approval: %+v", h)
	}
	hail := load(t, osfs, "../workflows/hailstone.hcl")
	round := hail.Step("round")
	if round.LoopBack() != "round" || hail.StepMaxIterations(round).Expr == nil || round.Gate.Check == nil {
		t.Errorf("hailstone round: %+v", round)
	}
}

func TestNeedsAndGraph(t *testing.T) {
	src := `name: graph
steps:
  - id: a
    run: a
  - id: b
    run: b
  - id: c
    needs: []
    run: c
  - id: d
    needs: [b, c]
    run: d
  - id: e
    needs: a
    run: e
  - id: f
    run: f
`
	w := parse(t, "yaml", src)
	needs := map[string][]string{"a": {}, "b": {"a"}, "c": {}, "d": {"b", "c"}, "e": {"a"}, "f": {"e"}}
	for id, want := range needs {
		s := w.Step(id)
		if !slices.Equal(s.Needs, want) {
			t.Errorf("%s needs %v, want %v", id, s.Needs, want)
		}
		if set := id == "c" || id == "d" || id == "e"; s.NeedsSet() != set {
			t.Errorf("%s NeedsSet %v", id, s.NeedsSet())
		}
	}
	tests := []struct {
		id       string
		up, down []string
	}{
		{"a", []string{}, []string{"b", "d", "e", "f"}},
		{"c", []string{}, []string{"d"}},
		{"d", []string{"a", "b", "c"}, []string{}},
		{"f", []string{"a", "e"}, []string{}},
		{"zz", []string{}, []string{}},
	}
	for _, tt := range tests {
		if got := w.Upstream(tt.id); !slices.Equal(got, tt.up) {
			t.Errorf("Upstream(%s) = %v, want %v", tt.id, got, tt.up)
		}
		if got := w.Downstream(tt.id); !slices.Equal(got, tt.down) {
			t.Errorf("Downstream(%s) = %v, want %v", tt.id, got, tt.down)
		}
	}
	if got, want := w.Order(), []string{"a", "b", "c", "d", "e", "f"}; !slices.Equal(got, want) {
		t.Errorf("Order() = %v, want %v", got, want)
	}
	if w.Step("nope") != nil {
		t.Error("Step(nope) is not nil")
	}
	// A step needing a later one comes after it.
	w = parse(t, "yaml", "name: x\nsteps:\n  - {id: a, needs: [c], run: a}\n  - {id: b, needs: [], run: b}\n  - {id: c, needs: [], run: c}\n")
	if got, want := w.Order(), []string{"b", "c", "a"}; !slices.Equal(got, want) {
		t.Errorf("Order() = %v, want %v", got, want)
	}
}

func TestDefaults(t *testing.T) {
	bare := parse(t, "yaml", "name: x\nsteps:\n  - {id: a, run: a}\n")
	a := bare.Step("a")
	if a.MaxAttempts != nil || a.MaxIterations != nil || a.Timeout != nil {
		t.Errorf("unset values are not nil: %+v", a)
	}
	if bare.StepMaxAttempts(a).N != config.DefaultMaxAttempts || bare.StepMaxIterations(a).N != config.DefaultMaxIterations {
		t.Error("seed defaults not applied")
	}
	if bare.StepTimeout(a) != nil || bare.StepIdleTimeout(a) != nil || bare.StepRetry(a) != nil {
		t.Error("no timeout or retry expected")
	}
	if bare.MaxParallel != 1 || bare.Signals != (config.Signals{Done: "DONE", Pass: "PASS", Fail: "FAIL"}) {
		t.Errorf("max_parallel %d signals %+v", bare.MaxParallel, bare.Signals)
	}
	w := parse(t, "hcl", `
name = "x"
max_parallel = 3
vars = { n = "7" }
defaults {
  max_attempts = 5
  max_iterations = "int(vars.n)"
  timeout = "1d2h"
  idle_timeout = 90
  retry {
    backoff = "10s"
    max_backoff = "5m"
    jitter = true
  }
}
signals {
  done = "FINISHED"
}
step "a" { run = "a" }
step "b" {
  run = "b"
  max_attempts = "3"
  timeout = "vars.n + 's'"
  gate {
    loop_back_to = "a"
    max_iterations = 2
  }
}
`)
	a, b := w.Step("a"), w.Step("b")
	if w.StepMaxAttempts(a).N != 5 || w.StepMaxAttempts(b).N != 3 {
		t.Errorf("max attempts %+v %+v", w.StepMaxAttempts(a), w.StepMaxAttempts(b))
	}
	if l := w.StepMaxIterations(a); l.Expr == nil || l.Expr.Src != "int(vars.n)" || l.Expr.Program() == nil {
		t.Errorf("max iterations of a: %+v", l)
	}
	if w.StepMaxIterations(b).N != 2 {
		t.Errorf("max iterations of b: %+v", w.StepMaxIterations(b))
	}
	if d := w.StepTimeout(a); d.D != 26*time.Hour {
		t.Errorf("timeout of a: %+v", d)
	}
	if d := w.StepTimeout(b); d.Expr == nil {
		t.Errorf("timeout of b: %+v", d)
	}
	if d := w.StepIdleTimeout(b); d.D != 90*time.Second {
		t.Errorf("idle timeout: %+v", d)
	}
	if r := w.StepRetry(a); *r != (config.Retry{Backoff: 10 * time.Second, MaxBackoff: 5 * time.Minute, Jitter: true}) {
		t.Errorf("retry: %+v", r)
	}
	if w.MaxParallel != 3 || w.Signals.Done != "FINISHED" || w.Signals.Pass != "PASS" {
		t.Errorf("max_parallel %d signals %+v", w.MaxParallel, w.Signals)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90s", 90 * time.Second, true},
		{"1h30m", 90 * time.Minute, true},
		{"2d", 48 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"0.5d", 12 * time.Hour, true},
		{"30", 30 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"-5m", -5 * time.Minute, true},
		{"30 minutes", 0, false},
		{"d", 0, false},
		{"1d-2h", 0, false},
		{"1e400", 0, false},
		{"", 0, false},
		{"5x", 0, false},
	}
	for _, tt := range tests {
		got, err := config.ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestExprPositions checks that an error inside an expression or a
// template points at the character of the file it comes from, whatever
// the quoting. Each source names the unknown step "nope" once; the error
// must point at its first letter, or at the position of the » marker
// (which is removed) when there is one.
func TestExprPositions(t *testing.T) {
	tests := []struct {
		name, format, src string
	}{
		{"yaml plain", "yaml", "    when: steps.nope.status == \"x\"\n"},
		{"yaml plain multi-line", "yaml", "    when: exit_code == 0 &&\n      exit_code != 3 &&\n        steps.nope.status == \"x\"\n"},
		{"yaml single-quoted", "yaml", "    run: 'it''s {{ '''' + steps.nope.output }}'\n"},
		{"yaml double-quoted", "yaml", "    run: \"say \\\"hi\\\"\\t\\\\ {{ steps.nope.output }}\"\n"},
		{"yaml double-quoted unicode", "yaml", "    run: \"\\u00e9\\x41 日本 {{ steps.nope.output }}\"\n"},
		{"yaml double-quoted escaped letter", "yaml", "    run: \"{{ steps.»\\x6eope.output }}\"\n"},
		{"yaml double-quoted continued", "yaml", "    run: \"one \\\n      two {{ steps.nope.output }}\"\n"},
		{"yaml literal", "yaml", "    run: |\n      echo one\n        echo {{ steps.nope.output }}\n"},
		{"yaml literal keep", "yaml", "    run: |+\n\n      echo {{ steps.nope.output }}\n"},
		{"yaml folded", "yaml", "    run: >-\n      echo one\n      echo two\n\n      echo {{ steps.nope.output }}\n"},
		{"yaml flow mapping", "yaml", "    gate: {pass: 'steps.nope.status == \"x\"'}\n"},
		{"yaml flow mapping after unicode", "yaml", "    gate: {check: \"日本語\", pass: 'steps.nope.status == \"x\"'}\n"},
		{"yaml tab in comment line", "yaml", "    run: \"\\t{{ steps.nope.output }}\"\n"},
		{"hcl quoted", "hcl", "  run = \"say \\\"hi\\\" \\\\ {{ steps.nope.output }}\"\n"},
		{"hcl quoted unicode", "hcl", "  run = \"\\u00e9 日本 {{ steps.nope.output }}\"\n"},
		{"hcl dollar escape", "hcl", "  run = \"$${HOME} %%{x} {{ steps.nope.output }}\"\n"},
		{"hcl heredoc", "hcl", "  run = <<EOT\necho one\n  echo {{ steps.nope.output }}\nEOT\n"},
		{"hcl indented heredoc", "hcl", "  run = <<-EOT\n    echo one\n      echo {{ steps.nope.output }}\n  EOT\n"},
		{"hcl when", "hcl", "  when = \"exit_code == 0 && steps.nope.status == \\\"x\\\"\"\n"},
		{"hcl gate", "hcl", "  gate {\n    pass = \"steps.nope.status == \\\"x\\\"\"\n  }\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var src string
			if tt.format == "yaml" {
				src = "name: pos\nsteps:\n  - id: a\n" + tt.src
				if !strings.Contains(tt.src, "run:") {
					src += "    run: a\n"
				}
			} else {
				src = "name = \"pos\"\nstep \"a\" {\n" + tt.src
				if !strings.Contains(tt.src, "run =") {
					src += "  run = \"a\"\n"
				}
				src += "}\n"
			}
			mark := strings.Index(src, "»")
			if mark >= 0 {
				src = src[:mark] + src[mark+len("»"):]
			} else {
				mark = strings.Index(src, "nope")
			}
			wantLine := strings.Count(src[:mark], "\n") + 1
			wantCol := utf8.RuneCountInString(src[strings.LastIndex(src[:mark], "\n")+1:mark]) + 1

			_, err := config.Parse(afero.NewMemMapFs(), "wf."+tt.format, tt.format, []byte(src))
			var ds config.Diagnostics
			if !errors.As(err, &ds) || len(ds) != 1 {
				t.Fatalf("got %v, want one diagnostic\n%s", err, src)
			}
			d := ds[0]
			if !strings.Contains(d.Message, `unknown step "nope"`) || d.Pos.Line != wantLine || d.Pos.Col != wantCol {
				var buf bytes.Buffer
				_ = ds.Render(&buf, func(string) []byte { return []byte(src) })
				t.Errorf("got %d:%d %s, want %d:%d\n%s", d.Pos.Line, d.Pos.Col, d.Message, wantLine, wantCol, buf.String())
			}
		})
	}
}

func TestPromptFile(t *testing.T) {
	mem := afero.NewMemMapFs()
	wf := "name: p\nagents:\n  coder: {run: cat}\ndefaults: {agent: coder}\nsteps:\n  - id: a\n    prompt_file: prompts/a.md\n"
	_ = afero.WriteFile(mem, "/dir/wf.yaml", []byte(wf), 0o644)
	_ = afero.WriteFile(mem, "/dir/prompts/a.md", []byte("Do the thing.\n\nUse {{ steps.a.output }} and\n  {{ steps.nope.output }}.\n"), 0o644)
	_, err := config.Load(mem, "/dir/wf.yaml")
	var ds config.Diagnostics
	if !errors.As(err, &ds) || len(ds) != 1 {
		t.Fatalf("got %v, want one diagnostic", err)
	}
	if got := ds[0].Pos; got != (config.Pos{File: filepath.Join("/dir", "prompts", "a.md"), Line: 4, Col: 12}) {
		t.Errorf("error in prompt file at %+v", got)
	}

	_ = afero.WriteFile(mem, "/dir/prompts/a.md", []byte("Fix {{ vars.x }}"), 0o644)
	_, err = config.Load(mem, "/dir/wf.yaml")
	if !errors.As(err, &ds) || !strings.Contains(ds[0].Message, "unknown var") {
		t.Fatalf("got %v", err)
	}
	_ = afero.WriteFile(mem, "/dir/prompts/a.md", []byte("Fine."), 0o644)
	w := load(t, mem, "/dir/wf.yaml")
	if p := w.Step("a").Prompt; p.Src != "Fine." {
		t.Errorf("prompt %q", p.Src)
	}

	_ = mem.Remove("/dir/prompts/a.md")
	_, err = config.Load(mem, "/dir/wf.yaml")
	if !errors.As(err, &ds) || ds[0].Pos.Line != 7 || ds[0].Pos.Col != 18 || !strings.Contains(ds[0].Message, "prompt_file: read /dir/prompts/a.md") {
		t.Fatalf("got %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	mem := afero.NewMemMapFs()
	_, err := config.Load(mem, "missing.yaml")
	var ds config.Diagnostics
	if !errors.Is(err, fs.ErrNotExist) || errors.As(err, &ds) {
		t.Errorf("missing file: %v", err)
	}
	_ = afero.WriteFile(mem, "wf.toml", []byte(""), 0o644)
	if _, err := config.Load(mem, "wf.toml"); err == nil || !strings.Contains(err.Error(), "unknown file type") {
		t.Errorf("toml: %v", err)
	}
	_ = afero.WriteFile(mem, "sdlc.flow.hcl", []byte("name = \"x\"\nstep \"a\" { run = \"a\" }\n"), 0o644)
	if w, err := config.Load(mem, "sdlc.flow.hcl"); err != nil || w.Format != "hcl" {
		t.Errorf(".flow.hcl: %v", err)
	}
	for _, src := range []string{"", "# just a comment\n", "- a list\n", "name: x\n"} {
		_, err := config.Parse(mem, "wf.yaml", "yaml", []byte(src))
		if !errors.As(err, &ds) || ds[0].Pos.Line < 1 {
			t.Errorf("%q: %v", src, err)
		}
	}
	_, err = config.Parse(mem, "wf.hcl", "hcl", nil)
	if !errors.As(err, &ds) || ds[0].Message != "name is required" {
		t.Errorf("empty HCL: %v", err)
	}
}

func TestRender(t *testing.T) {
	src := "name: r\nsteps:\n\t- id: a\n  - id: b\n    run: x\n"
	ds := config.Diagnostics{
		{Pos: config.Pos{File: "wf.yaml", Line: 3, Col: 4}, Severity: config.SeverityError, Message: `bad "thing"`},
		{Pos: config.Pos{File: "wf.yaml", Line: 5, Col: 10}, Severity: config.SeverityError, Message: "unknown step \"b\" (did you mean \"a\"?)", Suggestion: "a"},
		{Pos: config.Pos{File: "gone.yaml", Line: 1, Col: 1}, Severity: config.SeverityError, Message: "no source"},
	}
	var buf bytes.Buffer
	if err := ds.Render(&buf, func(f string) []byte {
		if f == "wf.yaml" {
			return []byte(src)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := "wf.yaml:3:4: bad \"thing\"\n    \t- id: a\n    \t  ^\n" +
		"wf.yaml:5:10: unknown step \"b\" (did you mean \"a\"?)\n        run: x\n             ^\n" +
		"gone.yaml:1:1: no source\n"
	if buf.String() != want {
		t.Errorf("Render:\n%s\nwant:\n%s", buf.String(), want)
	}
	b, err := ds.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1]["file"] != "wf.yaml" || got[1]["line"] != 5.0 || got[1]["col"] != 10.0 ||
		got[1]["severity"] != "error" || got[1]["suggestion"] != "a" || !strings.Contains(got[1]["message"].(string), "did you mean") {
		t.Errorf("JSON: %s", b)
	}
	if b, _ := (config.Diagnostics{}).JSON(); string(b) != "[]" {
		t.Errorf("empty JSON: %s", b)
	}
	if !strings.Contains(ds.Error(), "wf.yaml:5:10: unknown step") {
		t.Errorf("Error(): %s", ds.Error())
	}
}

func TestDigestChanges(t *testing.T) {
	a := parse(t, "yaml", "name: x\nsteps:\n  - {id: a, run: echo one}\n")
	b := parse(t, "yaml", "name: x\nsteps:\n  - {id: a, run: echo two}\n")
	c := parse(t, "hcl", "name = \"x\"\nstep \"a\" {\n  run = \"echo one\"\n}\n")
	if a.Digest() == b.Digest() || a.Digest() != c.Digest() {
		t.Errorf("digests %s %s %s", a.Digest(), b.Digest(), c.Digest())
	}
	j, err := json.Marshal(a)
	if err != nil || !json.Valid(j) || !strings.Contains(string(j), `"run":"echo one"`) {
		t.Errorf("MarshalJSON: %s %v", j, err)
	}
}

func TestGraphs(t *testing.T) {
	w := load(t, afero.NewOsFs(), "../workflows/sdlc.yaml")
	var m bytes.Buffer
	if err := w.Mermaid(&m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"flowchart TD",
		`s3 -. "FAIL, max 3 iterations" .-> s1`,
		`s4{{"manual_approval<br/>human<br/>when: steps.code_review.metrics.severity != #quot;none#quot;"}}`,
		"pass: signals.PASS #amp;#amp; !signals.FAIL",
		"s4 --> s5",
		"s0 --> s1",
	} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("mermaid lacks %q:\n%s", want, m.String())
		}
	}
	var d bytes.Buffer
	if err := w.Dot(&d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`digraph "sdlc" {`,
		`"code_review" -> "coding" [style=dashed, constraint=false, label="FAIL, max 3 iterations"];`,
		`"manual_approval" [label="manual_approval\nhuman\nwhen: steps.code_review.metrics.severity != \"none\"", shape=hexagon];`,
		`"planning" -> "coding";`,
	} {
		if !strings.Contains(d.String(), want) {
			t.Errorf("dot lacks %q:\n%s", want, d.String())
		}
	}
}

func parse(t *testing.T, format, src string) *config.Workflow {
	t.Helper()
	w, err := config.Parse(afero.NewMemMapFs(), "wf."+format, format, []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, src)
	}
	return w
}

// TestLoopGraphs: a loop is drawn as a subgraph (Mermaid) or a cluster
// (Graphviz) holding its body; its body's needs and loop-backs are
// edges between the body's nodes, and the YAML and HCL twins draw the
// same graph.
func TestLoopGraphs(t *testing.T) {
	var yml, hcl bytes.Buffer
	w := load(t, afero.NewOsFs(), "testdata/loops/stories.yaml")
	if err := w.Mermaid(&yml); err != nil {
		t.Fatal(err)
	}
	if err := load(t, afero.NewOsFs(), "testdata/loops/stories.hcl").Mermaid(&hcl); err != nil {
		t.Fatal(err)
	}
	if yml.String() != hcl.String() {
		t.Errorf("the twins draw different graphs:\n%s\n%s", yml.String(), hcl.String())
	}
	m := yml.String()
	for _, want := range []string{"  subgraph s1 [\"stories<br/>for each story in ", "    s1_0", "  end\n", "s1_0 --> s1_1", "s0 --> s1", "s1_1 -. \"FAIL, max 3 iterations\" .-> s1_0"} {
		if !strings.Contains(m, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, m)
		}
	}
	var d bytes.Buffer
	if err := w.Dot(&d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`subgraph "cluster_stories" {`, `"stories" -> "implement" [style=dotted];`, `shape=folder`} {
		if !strings.Contains(d.String(), want) {
			t.Errorf("dot lacks %q:\n%s", want, d.String())
		}
	}
}
