package config_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/gates"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"
)

// TestLoopExample loads the example loops in both formats: equal
// models and digests, the loop's fields, the body's ids, needs and
// scope, and the graph methods.
func TestLoopExample(t *testing.T) {
	y, h := loadTwins(t, "testdata/loops/stories")
	for _, w := range []*config.Workflow{y, h} {
		var ids []string
		for _, s := range w.Steps {
			ids = append(ids, s.ID)
		}
		if want := []string{"breakdown", "stories", "langs", "integrate"}; !slices.Equal(ids, want) {
			t.Errorf("%s: Steps %v, want %v", w.Format, ids, want)
		}
		ids = nil
		for _, s := range w.AllSteps() {
			ids = append(ids, s.ID)
		}
		if want := []string{"breakdown", "stories", "implement", "review", "notes", "langs", "build", "integrate"}; !slices.Equal(ids, want) {
			t.Errorf("%s: AllSteps %v, want %v", w.Format, ids, want)
		}
		l := w.Step("stories")
		fe := l.ForEach
		if l.Kind != config.KindLoop || fe == nil || fe.Items == nil || fe.Items.Src != `read_json("stories.json").stories` ||
			fe.List != nil || fe.As != "story" || fe.IndexAs != "i" || fe.Key == nil || fe.Key.Src != "story.id" ||
			fe.MaxParallel != 2 || !fe.ContinueOnError || len(fe.Body) != 3 || l.MaxIterations.N != 2 {
			t.Errorf("%s: loop %+v %+v", w.Format, l, fe)
		}
		if w.Limits().MaxItems != 100 {
			t.Errorf("%s: MaxItems %d", w.Format, w.Limits().MaxItems)
		}
		review := w.Step("review")
		if review == nil || review.Loop != "stories" || !slices.Equal(review.Needs, []string{"implement"}) || review.LoopBack() != "implement" {
			t.Errorf("%s: review %+v", w.Format, review)
		}
		if impl := w.Step("implement"); len(impl.Needs) != 0 || impl.Agent != "coder" {
			t.Errorf("%s: implement needs %v agent %q", w.Format, impl.Needs, impl.Agent)
		}
		if n := w.Step("notes"); !slices.Equal(n.Needs, []string{"breakdown", "implement"}) {
			t.Errorf("%s: notes needs %v", w.Format, n.Needs)
		}
		if w.LoopOf("review") != l || w.LoopOf("stories") != nil || w.LoopOf("nope") != nil || w.LoopOf("build") != w.Step("langs") {
			t.Errorf("%s: LoopOf wrong", w.Format)
		}
		langs := w.Step("langs").ForEach
		wantList := []any{"go", map[string]any{"name": "rust", "edition": 2021.0}, 3.0, true}
		if diff := cmp.Diff(wantList, langs.List); diff != "" || langs.Items != nil || langs.As != "item" || langs.IndexAs != "index" || langs.MaxParallel != 1 {
			t.Errorf("%s: langs %+v %s", w.Format, langs, diff)
		}
		if got := w.Order(); !slices.Equal(got, []string{"breakdown", "stories", "langs", "integrate"}) {
			t.Errorf("%s: Order %v", w.Format, got)
		}
		if got := w.Upstream("integrate"); !slices.Equal(got, []string{"breakdown", "stories", "langs"}) {
			t.Errorf("%s: Upstream %v", w.Format, got)
		}
		if got := w.Upstream("review"); len(got) != 0 {
			t.Errorf("%s: Upstream of a body step %v", w.Format, got)
		}
	}

	// The body's templates render the item.
	env := &gates.Env{Item: map[string]any{"id": "s1", "title": "Login"}, Index: 4,
		Steps: map[string]gates.StepInfo{"breakdown": {ExitCode: 0}, "implement": {Verdict: "PASS"}}}
	if got, err := y.Step("implement").Prompt.Compiled().Render(env); err != nil || got != "Implement Login (4)." {
		t.Errorf("implement prompt = %q, %v", got, err)
	}
	if got, err := y.Step("notes").Run.Compiled().Render(env); err != nil || got != `echo "0 PASS s1"` {
		t.Errorf("notes run = %q, %v", got, err)
	}
	if k, err := y.Step("stories").ForEach.Key.Program().Eval(env); err != nil || k != "s1" {
		t.Errorf("key = %v, %v", k, err)
	}
}

// TestLoopDigest: editing a loop's body changes the workflow's digest.
func TestLoopDigest(t *testing.T) {
	base := "name: x\nsteps:\n  - id: l\n    for_each: [a, b]\n    steps:\n      - id: b1\n        run: echo {{ item }}\n"
	d := parse(t, "yaml", base).Digest()
	for _, edit := range []string{
		strings.Replace(base, "echo", "printf", 1),
		strings.Replace(base, "[a, b]", "[a, c]", 1),
		strings.Replace(base, "    steps:", "    max_parallel: 2\n    steps:", 1),
		strings.Replace(base, "    steps:", "    index_as: i\n    steps:", 1),
		strings.Replace(base, "    steps:", "    key: item\n    steps:", 1),
	} {
		if parse(t, "yaml", edit).Digest() == d {
			t.Errorf("digest unchanged by the edit:\n%s", edit)
		}
	}
	spec, _ := parse(t, "yaml", base).Spec()
	if !strings.Contains(string(spec), `"for_each"`) || !strings.Contains(string(spec), `"b1"`) {
		t.Errorf("spec has no loop:\n%s", spec)
	}
}

// loopDiag is a diagnostic a workflow is expected to give.
type loopDiag struct {
	line, col int
	msg       string
}

// checkDiags parses src and compares its diagnostics, all of them.
func checkDiags(t *testing.T, format, src string, want []loopDiag) {
	t.Helper()
	_, err := config.Parse(afero.NewMemMapFs(), "wf."+format, format, []byte(src))
	var ds config.Diagnostics
	if len(want) == 0 {
		if err != nil {
			t.Errorf("%s: unexpected error:\n%v\n%s", format, err, src)
		}
		return
	}
	if !errors.As(err, &ds) {
		t.Errorf("%s: got %v, want diagnostics\n%s", format, err, src)
		return
	}
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%d:%d %s", d.Pos.Line, d.Pos.Col, d.Message))
	}
	var exp []string
	for _, w := range want {
		exp = append(exp, fmt.Sprintf("%d:%d %s", w.line, w.col, w.msg))
	}
	if diff := cmp.Diff(exp, got); diff != "" {
		t.Errorf("%s: diagnostics (-want +got):\n%s\n%s", format, diff, src)
	}
}

func TestLoopRules(t *testing.T) {
	const head = "name: x\nsteps:\n"
	tests := []struct {
		name string
		src  string // the steps, after head (line 3 on)
		want []loopDiag
	}{
		{"good literal maps", `  - id: l
    for_each: [{id: 1}, {id: 2}]
    key: item.id
    steps:
      - {id: a, run: "echo {{ item.id }} {{ index }}"}
`, nil},
		{"good before and body refs", `  - id: p
    run: p
  - id: l
    for_each: steps.p.output
    when: steps.p.exit_code == 0 && steps.after.status == ""
    steps:
      - {id: a, run: a}
      - {id: b, run: "{{ steps.a.output }} {{ steps.p.output }}", when: "item != nil", gate: {pass: steps.a.exit_code == 0, loop_back_to: a}}
      - {id: c, run: c, loop_back_to: p}
  - id: after
    run: "echo {{ steps.l.items }}"
    loop_back_to: l
`, nil},
		{"loop keys on a loop", `  - id: l
    for_each: [a]
    run: x
    prompt: y
    agent: z
    gate: {pass: "true"}
    loop_back_to: l
    retry: {backoff: 1s}
    retry_if: "true"
    max_attempts: 2
    timeout: 1m
    idle_timeout: 1m
    artifacts: [a]
    env: {A: b}
    feedback: none
    human: {message: m}
    model: m
    steps:
      - {id: a, run: a}
`, []loopDiag{
			{5, 5, `step "l" is a for_each loop: run belongs on a step of its body`},
			{6, 5, `step "l" is a for_each loop: prompt belongs on a step of its body`},
			{7, 5, `step "l" is a for_each loop: agent belongs on a step of its body`},
			{8, 5, `step "l" is a for_each loop: gate belongs on a step of its body`},
			{9, 5, `step "l" is a for_each loop: loop_back_to belongs on a step of its body`},
			{10, 5, `step "l" is a for_each loop: retry belongs on a step of its body`},
			{11, 5, `step "l" is a for_each loop: retry_if belongs on a step of its body`},
			{12, 5, `step "l" is a for_each loop: max_attempts belongs on a step of its body`},
			{13, 5, `step "l" is a for_each loop: timeout belongs on a step of its body`},
			{14, 5, `step "l" is a for_each loop: idle_timeout belongs on a step of its body`},
			{15, 5, `step "l" is a for_each loop: artifacts belongs on a step of its body`},
			{16, 5, `step "l" is a for_each loop: env belongs on a step of its body`},
			{17, 5, `step "l" is a for_each loop: feedback belongs on a step of its body`},
			{18, 5, `step "l" is a for_each loop: human belongs on a step of its body`},
			{19, 5, `step "l" is a for_each loop: model belongs on a step of its body`},
		}},
		{"no body", `  - id: l
    for_each: [a]
  - id: m
    for_each: [a]
    steps: []
`, []loopDiag{
			{4, 15, `step "l" is a for_each loop: give it a body, steps: with at least one step`},
			{7, 5, `step "m" is a for_each loop: give it a body, steps: with at least one step`},
		}},
		{"loop keys without for_each", `  - id: a
    run: a
    as: x
    index_as: i
    key: x
    max_parallel: 2
    continue_on_error: true
    steps:
      - {id: b, run: b}
`, []loopDiag{
			{5, 5, `as: step "a" has no for_each; only a for_each loop has as`},
			{6, 5, `index_as: step "a" has no for_each; only a for_each loop has index_as`},
			{7, 5, `key: step "a" has no for_each; only a for_each loop has key`},
			{8, 5, `max_parallel: step "a" has no for_each; only a for_each loop has max_parallel`},
			{9, 5, `continue_on_error: step "a" has no for_each; only a for_each loop has continue_on_error`},
			{10, 5, `steps: step "a" has no for_each; only a for_each loop has a body of steps`},
		}},
		{"names", `  - id: l
    for_each: [a]
    as: Story
    index_as: steps
    max_parallel: 0
    continue_on_error: maybe
    steps:
      - {id: a, run: a}
  - id: m
    for_each: [a]
    as: same
    index_as: same
    steps:
      - {id: b, run: b}
  - id: n
    for_each: [a]
    as: len
    steps:
      - {id: c, run: c}
`, []loopDiag{
			{5, 9, `as: "Story": want lowercase letters, digits and _, not starting with a digit`},
			{6, 15, `index_as: "steps" is a name of the expression environment; give the index another name`},
			{7, 19, `max_parallel: must be at least 1, got 0`},
			{8, 24, `continue_on_error: want true or false, got "maybe"`},
			{14, 15, `index_as: "same" is also the name of the item (as); give them different names`},
			{19, 9, `as: "len" is a builtin function; give the item another name`},
		}},
		{"nested loop and duplicate ids", `  - id: a
    run: a
  - id: l
    for_each: [a]
    steps:
      - id: a
        run: a
      - id: inner
        for_each: [b]
        steps:
          - {id: x, run: x}
  - id: m
    for_each: [a]
    steps:
      - {id: inner, run: b}
`, []loopDiag{
			{8, 13, `duplicate step id "a"`},
			{11, 19, `for_each inside the body of "l": loops nest one level`},
			{17, 14, `duplicate step id "inner"`},
		}},
		{"body needs", `  - id: p
    run: p
  - id: l
    for_each: [a]
    steps:
      - {id: a, run: a, needs: [p, b]}
      - {id: b, run: b, needs: [after]}
      - {id: c, run: c, needs: [l]}
      - {id: d, run: d, needs: [x]}
      - {id: e, run: e, needs: [nope]}
  - id: m
    for_each: [a]
    steps:
      - {id: x, run: x, needs: [a]}
  - id: after
    run: after
    needs: [b]
`, []loopDiag{
			{9, 33, `needs: "after" is neither a step of the body of "l" nor a step before it; a step of a loop's body needs steps of its body or steps before the loop`},
			{10, 33, `needs: "l" is neither a step of the body of "l" nor a step before it; a step of a loop's body needs steps of its body or steps before the loop`},
			{11, 33, `needs: "x" is neither a step of the body of "l" nor a step before it; a step of a loop's body needs steps of its body or steps before the loop`},
			{12, 33, `needs: unknown step "nope"`},
			{16, 33, `needs: "a" is neither a step of the body of "m" nor a step before it; a step of a loop's body needs steps of its body or steps before the loop`},
			{19, 13, `needs: "b" is a step of the body of loop "l"; need the loop "l", which is done when every item is`},
		}},
		{"cycle through a body need", `  - id: p
    run: p
    needs: [l]
  - id: l
    for_each: [a]
    needs: []
    steps:
      - {id: a, run: a, needs: [p]}
  - id: m
    for_each: [a]
    steps:
      - {id: x, run: x, needs: [y]}
      - {id: y, run: y, needs: [x]}
`, []loopDiag{
			{5, 5, `dependency cycle: p -> l -> p`},
			{14, 25, `dependency cycle: x -> y -> x`},
		}},
		{"loop-backs", `  - id: p
    run: p
  - id: q
    run: q
    needs: []
  - id: l
    for_each: [a]
    needs: [p]
    steps:
      - {id: a, run: a}
      - {id: b, run: b, loop_back_to: c}
      - {id: c, run: c, gate: {pass: "true", loop_back_to: q}}
      - {id: d, run: d, loop_back_to: l}
      - {id: e, run: e, loop_back_to: x}
      - {id: f, run: f, loop_back_to: p}
      - {id: g, run: g, loop_back_to: nope}
  - id: m
    for_each: [a]
    steps:
      - {id: x, run: x}
  - id: after
    run: after
    loop_back_to: a
`, []loopDiag{
			{13, 39, `loop_back_to "c" is downstream of "b"; a loop-back must go to this step or one it depends on`},
			{14, 60, `gate.loop_back_to "q": a step of the body of "l" loops back to a step of its body that does not depend on it, or to a step loop "l" depends on (which runs all items again)`},
			{15, 39, `loop_back_to "l": a step of the body of "l" loops back to a step of its body that does not depend on it, or to a step loop "l" depends on (which runs all items again)`},
			{16, 39, `loop_back_to "x": a step of the body of "l" loops back to a step of its body that does not depend on it, or to a step loop "l" depends on (which runs all items again)`},
			{18, 39, `loop_back_to: unknown step "nope"`},
			{25, 19, `loop_back_to "a" is a step of the body of loop "l"; loop back to "l" instead, which runs all items again`},
		}},
		{"scopes", `  - id: p
    run: p
  - id: l
    for_each: steps.a.output
    when: item == 1
    key: steps.after.status
    steps:
      - {id: a, run: "{{ steps.x.output }}"}
      - {id: b, run: "{{ steps.l.status }}"}
  - id: m
    for_each: "[1]"
    steps:
      - {id: x, run: x}
  - id: after
    run: "{{ index }}"
    when: steps.a.status == ""
`, []loopDiag{
			{6, 21, `for_each: step "a" is a step of the body of loop "l": outside the body read it per item, as steps.l.items[i].a`},
			{7, 11, `when: unknown name "item"`},
			{8, 16, `key: step "after" is not before loop "l": the body of a loop reads the steps before the loop and those of its body`},
			{10, 32, `run: step "x" is a step of the body of loop "m": outside the body read it per item, as steps.m.items[i].x`},
			{11, 32, `run: step "l" is not before loop "l": the body of a loop reads the steps before the loop and those of its body`},
			{17, 14, `run: unknown name "index" (did you mean "indexOf"?)`},
			{18, 17, `when: step "a" is a step of the body of loop "l": outside the body read it per item, as steps.l.items[i].a`},
		}},
		{"max items", `  - id: l
    for_each: [a, b, c]
    steps:
      - {id: a, run: a}
`, nil},
		// A body named twice through an alias is decoded twice (it once
		// panicked: the first decoding let the shared nodes go).
		{"a body named twice by an alias", `  - id: l
    for_each: [1, 2]
    steps: &body
      - id: a
        run: echo {{ item }}
  - id: m
    for_each: [1, 2]
    steps: *body
`, []loopDiag{
			{6, 13, `duplicate step id "a"`},
		}},
		{"bad literal", `  - id: l
    for_each: [a, {? [x] : y}]
    steps:
      - {id: a, run: a}
  - id: m
    for_each: {a: b}
    steps:
      - {id: b, run: b}
`, []loopDiag{
			{4, 22, `for_each: a key must be a string, got a list`},
			{8, 15, `for_each: want a string, got a mapping`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDiags(t, "yaml", head+tt.src, tt.want)
		})
	}
	checkDiags(t, "yaml", "name: x\ndefaults: {max_items: 2}\nsteps:\n  - id: l\n    for_each: [a, b, c]\n    steps:\n      - {id: a, run: a}\n",
		[]loopDiag{{5, 15, `for_each: 3 items; a loop has at most 2 (defaults.max_items)`}})
	checkDiags(t, "yaml", "name: x\ndefaults: {max_items: 0}\nsteps:\n  - {id: a, run: a}\n",
		[]loopDiag{{2, 23, `max_items: must be at least 1, got 0`}})
}

// TestLoopRulesHCL checks the HCL forms: positions, a literal list with
// a reference, nested step blocks and a loop's keys on a plain step.
func TestLoopRulesHCL(t *testing.T) {
	checkDiags(t, "hcl", `name = "x"
step "l" {
  for_each = ["a", { id = "b" }]
  as       = "story"
  step "a" {
    run = "echo {{ story }}"
  }
  step "b" {
    for_each = ["x"]
    step "c" {
      run = "c"
    }
  }
}
step "m" {
  for_each = [vars.x]
  step "d" {
    run = "d"
  }
}
step "n" {
  run = "n"
  as  = "x"
  step "e" {
    run = "e"
  }
}
step "o" {
  for_each = "steps.a.output"
  run      = "x"
  step "f" {
    run = "f"
  }
}
`, []loopDiag{
		{9, 16, `for_each inside the body of "l": loops nest one level`},
		{16, 15, `for_each: must be a literal value, not a reference (an expression is a string)`},
		{23, 3, `as: step "n" has no for_each; only a for_each loop has as`},
		{24, 3, `steps: step "n" has no for_each; only a for_each loop has a body of steps`},
		{29, 21, `for_each: step "a" is a step of the body of loop "l": outside the body read it per item, as steps.l.items[i].a`},
		{30, 3, `step "o" is a for_each loop: run belongs on a step of its body`},
	})
}

// loadTwins loads base.yaml and base.hcl, and checks that they give
// equal models (positions aside) and equal digests.
func loadTwins(t *testing.T, base string) (y, h *config.Workflow) {
	t.Helper()
	osfs := afero.NewOsFs()
	y = load(t, osfs, base+".yaml")
	h = load(t, osfs, base+".hcl")
	if diff := cmp.Diff(y, h, ignorePositions); diff != "" {
		t.Errorf("YAML and HCL models differ (-yaml +hcl):\n%s", diff)
	}
	if y.Digest() != h.Digest() {
		sy, _ := y.Spec()
		sh, _ := h.Spec()
		t.Errorf("digests differ:\n%s\n%s", sy, sh)
	}
	return y, h
}
