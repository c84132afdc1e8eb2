package gates

import (
	"errors"
	"slices"
	"testing"
)

// loopScope is the scope of a loop body whose item is story and whose
// index is i.
var loopScope = Scope{
	Steps: []string{"plan", "implement"},
	Vars:  []string{"v"},
	Item:  "story", Index: "i",
	Elsewhere: map[string]string{"later": `step "later" runs after the loop`},
}

func storyEnv() *Env {
	return &Env{
		Item:  map[string]any{"id": "s1", "title": "Login", "points": 3.0, "tags": []any{"a", "b"}},
		Index: 2,
	}
}

func TestItemEval(t *testing.T) {
	c := NewCompiler(loopScope)
	tests := []struct {
		src  string
		want any
	}{
		{`story.title`, "Login"},
		{`story["id"]`, "s1"},
		{`story.points + 1`, 4.0},
		{`story.tags[1]`, "b"},
		{`i`, 2},
		{`i + 1`, 3},
		{`story.title + "!"`, "Login!"},
		{`len(story.tags) == i`, true},
		{`vars.v + story.id`, "s1"},
		{`story.missing`, nil},
	}
	for _, tt := range tests {
		p, err := c.Compile(tt.src, Any)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.src, err)
		}
		got, err := p.Eval(storyEnv())
		if err != nil || got != tt.want {
			t.Errorf("Eval(%q) = %v, %v; want %v", tt.src, got, err, tt.want)
		}
	}
	p, err := c.Compile(`story.title == "Login" && i == 2`, Bool)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := p.EvalBool(storyEnv()); !ok || err != nil {
		t.Errorf("EvalBool = %v, %v", ok, err)
	}
	// A scalar item.
	p, err = c.Compile(`story`, Any)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Eval(&Env{Item: "plain"}); got != "plain" || err != nil {
		t.Errorf("Eval(story) = %v, %v", got, err)
	}
}

func TestItemTemplate(t *testing.T) {
	tm, err := NewCompiler(loopScope).CompileTemplate(`Implement {{ story.title }} ({{ i }}).`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tm.Render(storyEnv())
	if err != nil || got != "Implement Login (2)." {
		t.Errorf("Render = %q, %v", got, err)
	}
	known, err := tm.RenderKnown(&Env{}, 0)
	if err != nil || known != "Implement <story.title> (<i>)." {
		t.Errorf("RenderKnown = %q, %v", known, err)
	}
	if !tm.Refs().Item {
		t.Errorf("Refs().Item = false")
	}
}

func TestItemErrors(t *testing.T) {
	outside := Scope{Steps: []string{"plan"}}
	tests := []struct {
		scope Scope
		src   string
		msg   string
		col   int
	}{
		{outside, `story.title`, `unknown name "story" (did you mean "sort"?)`, 1},
		{outside, `__item`, `unknown name "__item"`, 1},
		{loopScope, `__item.title`, `unknown name "__item"`, 1},
		{loopScope, `1 + __index`, `unknown name "__index"`, 5},
		{loopScope, `stroy.title`, `unknown name "stroy" (did you mean "story"?)`, 1},
		{loopScope, `let story = 1; story`, `let story: "story" is already the name of the loop's item`, 5},
		{loopScope, `let i = 1; i`, `let i: "i" is already the name of the item's index`, 5},
		{loopScope, `steps.later.status`, `step "later" runs after the loop`, 7},
		{loopScope, `steps.nope.status`, `unknown step "nope"`, 7},
	}
	for _, tt := range tests {
		_, err := Compile(tt.src, tt.scope, Any)
		var e *Error
		if !errors.As(err, &e) || e.Msg != tt.msg || e.Col != tt.col {
			t.Errorf("Compile(%q) = %+v; want %q at col %d", tt.src, e, tt.msg, tt.col)
		}
	}
}

func TestItemRefs(t *testing.T) {
	tests := []struct {
		src  string
		want Refs
	}{
		{`story.title`, Refs{Item: true}},
		{`story.output`, Refs{Item: true}},
		{`story.implement.output`, Refs{Item: true}},
		{`i > 0`, Refs{Item: true}},
		{`steps.implement.output + story.id`, Refs{RunWide: true, Item: true, Outputs: []string{"implement"}}},
		{`vars.v`, Refs{}},
	}
	for _, tt := range tests {
		p, err := Compile(tt.src, loopScope, Any)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.src, err)
		}
		got := p.Refs()
		if got.RunWide != tt.want.RunWide || got.AnyOutput != tt.want.AnyOutput || got.Item != tt.want.Item || !slices.Equal(got.Outputs, tt.want.Outputs) {
			t.Errorf("Refs(%q) = %+v; want %+v", tt.src, got, tt.want)
		}
	}
}

func TestItemNamesHidden(t *testing.T) {
	for _, n := range Names() {
		if n == itemName || n == indexName {
			t.Errorf("Names() lists %q", n)
		}
	}
}

func TestReserved(t *testing.T) {
	for _, name := range []string{"vars", "steps", "read_json", "output", "len", "map", "not", "in", "true"} {
		if _, ok := Reserved(name); !ok {
			t.Errorf("Reserved(%q) = false", name)
		}
	}
	for _, name := range []string{"story", "item", "index", "i"} {
		if what, ok := Reserved(name); ok {
			t.Errorf("Reserved(%q) = %s", name, what)
		}
	}
}

func TestStepInfoMap(t *testing.T) {
	s := StepInfo{Status: "COMPLETED", Verdict: "PASS", ExitCode: 1, Usage: Usage{TokensOut: 42, CostUSD: 0.5, Sessions: 1}}
	m := s.Map()
	u, ok := m["usage"].(map[string]any)
	if !ok {
		t.Fatalf("Map()[usage] = %#v, want a map", m["usage"])
	}
	for _, f := range UsageFields() {
		if _, ok := u[f]; !ok {
			t.Errorf("Map()[usage] has no %q", f)
		}
	}
	if len(u) != len(UsageFields()) || u["tokens_out"] != int64(42) || u["cost_usd"] != 0.5 || u["sessions"] != 1 {
		t.Errorf("Map()[usage] = %v", u)
	}
	for _, f := range StepFields() {
		if _, ok := m[f]; !ok && f != "items" {
			t.Errorf("Map() has no %q", f)
		}
	}
	if m["status"] != "COMPLETED" || m["verdict"] != "PASS" || m["exit_code"] != 1 {
		t.Errorf("Map() = %v", m)
	}
	if _, ok := m["items"]; ok {
		t.Error("Map() has items for a step that is no loop")
	}
	loop := StepInfo{Items: []map[string]any{{"key": "s1", "implement": s.Map()}}}
	if len(loop.Map()["items"].([]map[string]any)) != 1 {
		t.Error("Map() of a loop lost its items")
	}
	// steps.<loop>.items[i].<body step>.verdict reads the map.
	p, err := Compile(`steps.stories.items[0].implement.verdict == "PASS"`, Scope{Steps: []string{"stories"}}, Bool)
	if err != nil {
		t.Fatal(err)
	}
	ok, err = p.EvalBool(&Env{Steps: map[string]StepInfo{"stories": loop}})
	if !ok || err != nil {
		t.Errorf("EvalBool = %v, %v", ok, err)
	}
	// So does an item's usage.
	p, err = Compile(`steps.stories.items[0].implement.usage.cost_usd == 0.5`, Scope{Steps: []string{"stories"}}, Bool)
	if err != nil {
		t.Fatal(err)
	}
	ok, err = p.EvalBool(&Env{Steps: map[string]StepInfo{"stories": loop}})
	if !ok || err != nil {
		t.Errorf("EvalBool(usage) = %v, %v", ok, err)
	}
}

// TestUsageAllocs: reading usage costs no more than reading another
// field of run.
func TestUsageAllocs(t *testing.T) {
	env := &Env{Run: RunInfo{Iteration: 1, Usage: Usage{CostUSD: 1}}}
	p, err := Compile(`run.usage.cost_usd < 10`, Scope{}, Bool)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Compile(`run.iteration < 10`, Scope{}, Bool)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = p.EvalBool(env) })
	base := testing.AllocsPerRun(100, func() { _, _ = q.EvalBool(env) })
	if allocs > base {
		t.Errorf("%v allocations per evaluation reading run.usage, %v reading run.iteration", allocs, base)
	}
}

// TestItemUnusedAllocs: an expression that does not read the item
// costs no more to evaluate than before there were items.
func TestItemUnusedAllocs(t *testing.T) {
	p, err := NewCompiler(loopScope).Compile(`exit_code == 0`, Bool)
	if err != nil {
		t.Fatal(err)
	}
	env := storyEnv()
	allocs := testing.AllocsPerRun(100, func() { _, _ = p.EvalBool(env) })
	q, _ := Compile(`exit_code == 0`, Scope{}, Bool)
	base := testing.AllocsPerRun(100, func() { _, _ = q.EvalBool(env) })
	if allocs > base {
		t.Errorf("%v allocations per evaluation in a loop body, %v outside", allocs, base)
	}
}
