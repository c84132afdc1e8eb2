package config_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"
)

// diagLines loads src and returns its diagnostics as "line:col message".
func diagLines(t *testing.T, format, src string) []string {
	t.Helper()
	_, err := config.Parse(afero.NewMemMapFs(), "wf."+format, format, []byte(src))
	if err == nil {
		return nil
	}
	var ds config.Diagnostics
	if !errors.As(err, &ds) {
		t.Fatalf("Parse: %v, want Diagnostics", err)
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%d:%d %s", d.Pos.Line, d.Pos.Col, d.Message)
	}
	return out
}

// ruleTest is a workflow and exactly the diagnostics it yields.
type ruleTest struct {
	name, format, src string
	want              []string
}

func runRules(t *testing.T, tests []ruleTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.format+"/"+tt.name, func(t *testing.T) {
			got := diagLines(t, tt.format, tt.src)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("diagnostics mismatch (-want +got):\n%s\n%s", diff, tt.src)
			}
		})
	}
}

const presetsOnly = "(preset: claude, codex or gemini)"

func TestAgentRules(t *testing.T) {
	runRules(t, []ruleTest{
		{"preset", "yaml", "name: x\nagents:\n  a: {preset: claude}\nsteps:\n  - {id: s, prompt: p, agent: a}\n", nil},
		{"run and preset", "yaml", "name: x\nagents:\n  a: {run: a, preset: claude}\nsteps:\n  - {id: s, prompt: p, agent: a}\n",
			[]string{`3:23 agent "a" has both run and preset; give one`}},
		{"neither run nor preset", "yaml", "name: x\nagents:\n  a: {env: {X: y}}\nsteps:\n  - {id: s, prompt: p, agent: a}\n",
			[]string{`3:3 agent "a": give run (a command) or preset (claude, codex or gemini)`}},
		{"unknown presets", "yaml", "name: x\nagents:\n  a: {preset: claud}\n  b: {preset: copilot}\n  c: {preset: [claude]}\nsteps:\n  - {id: s, prompt: p, agent: a}\n",
			[]string{
				`3:15 agent "a": unknown preset "claud" (did you mean "claude"?)`,
				`4:15 agent "b": unknown preset "copilot"; want claude, codex or gemini`,
				`5:15 preset: want a string, got a list`,
			}},
		{"preset keys on a run agent", "yaml", "name: x\nagents:\n  a:\n    run: a\n    model: sonnet\n    args: [-v]\n    resume: true\n    price: {input_per_mtok: 1}\nsteps:\n  - {id: s, prompt: p, agent: a}\n",
			[]string{
				`5:12 agent "a": model is for preset agents ` + presetsOnly + `; a run: agent names its model in its command`,
				`6:5 agent "a": args is for preset agents ` + presetsOnly + `; a run: agent puts its arguments in its command`,
				`7:13 agent "a": resume is for preset agents ` + presetsOnly + `; a run: agent cannot resume a conversation`,
				`8:5 agent "a": price is for preset agents ` + presetsOnly + `; flow reads no token counts from a run: agent`,
			}},
		{"bad preset values", "yaml", "name: x\nagents:\n  a:\n    preset: codex\n    model: \"\"\n    resume: yes\n    price: {input_per_mtok: -1, output_per_mtok: lots, cached_per_mtk: 1}\n  b:\n    preset: codex\n    price: {}\nsteps:\n  - {id: s, prompt: p, agent: a}\n",
			[]string{
				`5:12 agent "a": model is empty; leave it out for the tool's default`,
				`6:13 resume: want true or false, got "yes"`,
				`7:29 price.input_per_mtok: must be at least 0, got -1`,
				`7:50 price.output_per_mtok: want a number of at least 0, got "lots"`,
				`7:56 unknown key "cached_per_mtk" (did you mean "cached_per_mtok"?)`,
				`10:5 agent "b": price is empty; give input_per_mtok, output_per_mtok or cached_per_mtok`,
			}},
		{"unknown agent key", "yaml", "name: x\nagents:\n  a: {preset: claude, modle: opus}\nsteps:\n  - {id: s, prompt: p, agent: a}\n",
			[]string{`3:23 unknown key "modle" (did you mean "model"?)`}},
		{"cleanup runs a preset", "yaml", "name: x\nagents:\n  a: {preset: gemini}\nsteps:\n  - {id: s, run: r}\ncleanup: {prompt: Tidy up., agent: a}\n", nil},

		{"preset", "hcl", "name = \"x\"\nagent \"a\" {\n  preset = \"claude\"\n}\nstep \"s\" {\n  prompt = \"p\"\n  agent  = \"a\"\n}\n", nil},
		{"agent rules", "hcl", "name = \"x\"\nagent \"a\" {\n  run    = \"a\"\n  preset = \"claude\"\n}\nagent \"b\" {\n  preset = \"gemni\"\n  model  = \"m\"\n}\nagent \"c\" {\n  run   = \"c\"\n  model = \"m\"\n  args  = [\"-v\"]\n  price {\n    input_per_mtok = 1\n  }\n}\nagent \"d\" {\n  env = {}\n}\nstep \"s\" {\n  run = \"r\"\n}\n",
			[]string{
				`4:12 agent "a" has both run and preset; give one`,
				`7:12 agent "b": unknown preset "gemni" (did you mean "gemini"?)`,
				`12:11 agent "c": model is for preset agents ` + presetsOnly + `; a run: agent names its model in its command`,
				`13:3 agent "c": args is for preset agents ` + presetsOnly + `; a run: agent puts its arguments in its command`,
				`14:3 agent "c": price is for preset agents ` + presetsOnly + `; flow reads no token counts from a run: agent`,
				`18:7 agent "d": give run (a command) or preset (claude, codex or gemini)`,
			}},
		{"bad preset values", "hcl", "name = \"x\"\nagent \"a\" {\n  preset = \"codex\"\n  resume = \"yes\"\n  args   = \"-v\"\n  price {\n    output_per_mtok = -0.5\n  }\n}\nagent \"b\" {\n  preset = \"codex\"\n  price {}\n}\nstep \"s\" {\n  run = \"r\"\n}\n",
			[]string{
				`4:12 resume: want true or false, got "yes"`,
				`5:12 args: want a list ["...", ...]`,
				`7:23 price.output_per_mtok: must be at least 0, got -0.5`,
				`12:3 agent "b": price is empty; give input_per_mtok, output_per_mtok or cached_per_mtok`,
			}},
	})
}

func TestBudgetRules(t *testing.T) {
	runRules(t, []ruleTest{
		{"budgets", "yaml", "name: x\nbudget: {cost_usd: 0.5}\nsteps:\n  - {id: s, run: r, budget: {tokens: 1}}\n", nil},
		{"bad values", "yaml", "name: x\nbudget: {}\nsteps:\n  - {id: s, run: r, budget: {cost: 1}}\n  - {id: t, run: r, budget: {cost_usd: 0, tokens: 1.5, sessions: -1}}\n  - {id: u, run: r, budget: {cost_usd: -2, tokens: 0, sessions: many}}\n  - {id: v, run: r, budget: {cost_usd: .nan}}\n",
			[]string{
				`2:1 budget is empty: give at least one of cost_usd, tokens or sessions`,
				`4:30 unknown key "cost"`,
				`5:40 budget.cost_usd: must be greater than 0, got 0`,
				`5:51 budget.tokens: want a positive integer, got "1.5"`,
				`5:66 budget.sessions: must be at least 1, got -1`,
				`6:40 budget.cost_usd: must be greater than 0, got -2`,
				`6:52 budget.tokens: must be at least 1, got 0`,
				`6:65 budget.sessions: want a positive integer, got "many"`,
				`7:40 budget.cost_usd: want a positive number, got ".nan"`,
			}},
		{"not a mapping", "yaml", "name: x\nbudget: 5\nsteps:\n  - {id: s, run: r}\n",
			[]string{`2:9 budget: want a mapping, got a number`}},
		{"human and loop steps", "yaml", "name: x\nsteps:\n  - id: h\n    human: {message: ok}\n    budget: {sessions: 1}\n  - id: l\n    for_each: [1]\n    budget: {sessions: 1}\n    steps:\n      - {id: b, run: r, budget: {sessions: 1}}\n",
			[]string{
				`5:5 step "h" is a human step: budget belongs on a step that runs sessions`,
				`8:5 step "l" is a for_each loop: budget belongs on a step of its body`,
			}},

		{"budgets", "hcl", "name = \"x\"\nbudget {\n  cost_usd = 0.5\n}\nstep \"s\" {\n  run = \"r\"\n  budget {\n    tokens = 1\n  }\n}\n", nil},
		{"bad values", "hcl", "name = \"x\"\nbudget {\n  cost_usd = 0\n  tokns    = 3\n}\nbudget = { sessions = 1 }\nstep \"s\" {\n  run = \"r\"\n  budget {}\n}\nstep \"t\" {\n  run = \"r\"\n  budget {\n    tokens   = 2.5\n    sessions = 0\n  }\n}\n",
			[]string{
				`3:14 budget.cost_usd: must be greater than 0, got 0`,
				`4:3 unknown key "tokns" (did you mean "tokens"?)`,
				`6:1 budget is a block: write budget { ... }`,
				`9:3 budget is empty: give at least one of cost_usd, tokens or sessions`,
				`14:16 budget.tokens: want a positive integer, got "2.5"`,
				`15:16 budget.sessions: must be at least 1, got 0`,
			}},
		{"human and loop steps", "hcl", "name = \"x\"\nstep \"h\" {\n  human {\n    message = \"ok\"\n  }\n  budget {\n    sessions = 1\n  }\n}\nstep \"l\" {\n  for_each = [1]\n  budget {\n    sessions = 1\n  }\n  step \"b\" {\n    run = \"r\"\n    budget {\n      sessions = 1\n    }\n  }\n}\n",
			[]string{
				`6:3 step "h" is a human step: budget belongs on a step that runs sessions`,
				`12:3 step "l" is a for_each loop: budget belongs on a step of its body`,
			}},
	})
}

// TestPresetTwins loads a workflow of preset agents and budgets written
// in both formats: the models and digests are equal, and hold what the
// file says.
func TestPresetTwins(t *testing.T) {
	y, h := loadTwins(t, "testdata/agents/presets")
	for _, w := range []*config.Workflow{y, h} {
		coder := w.Agents["coder"]
		want := &config.Agent{Name: "coder", Preset: "claude", Model: "sonnet", Args: []string{"--permission-mode", "acceptEdits"}, Resume: true,
			Price: &config.Price{InputPerMTok: 3, OutputPerMTok: 15, CachedPerMTok: 0.3}}
		if diff := cmp.Diff(want, coder, ignorePositions, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Env" }, cmp.Ignore())); diff != "" {
			t.Errorf("%s: coder (-want +got):\n%s", w.Format, diff)
		}
		if coder.Run != nil || len(coder.Env) != 1 {
			t.Errorf("%s: coder has run %v, env %v", w.Format, coder.Run, coder.Env)
		}
		if p := w.Agents["planner"]; p.Preset != "gemini" || p.Resume || p.Price != nil || p.Model != "" || p.Args != nil {
			t.Errorf("%s: planner %+v", w.Format, p)
		}
		if r := w.Agents["reviewer"]; r.Preset != "" || r.Run == nil || r.Resume {
			t.Errorf("%s: reviewer %+v", w.Format, r)
		}
		if b := w.Budget; b == nil || *b != (config.Budget{CostUSD: 25, Tokens: 5000000, Sessions: 200, Pos: b.Pos}) || b.Pos.Line == 0 {
			t.Errorf("%s: workflow budget %+v", w.Format, b)
		}
		budgets := map[string]config.Budget{"code": {CostUSD: 5.5}, "tests": {Sessions: 3}, "lint": {CostUSD: 1, Tokens: 200000}}
		for _, s := range w.AllSteps() {
			b, ok := budgets[s.ID]
			switch {
			case !ok && s.Budget != nil:
				t.Errorf("%s: step %s has budget %+v", w.Format, s.ID, s.Budget)
			case ok && (s.Budget == nil || s.Budget.CostUSD != b.CostUSD || s.Budget.Tokens != b.Tokens || s.Budget.Sessions != b.Sessions):
				t.Errorf("%s: step %s budget %+v, want %+v", w.Format, s.ID, s.Budget, b)
			}
		}
		if w.Cleanup == nil || w.Cleanup.Agent != "coder" {
			t.Errorf("%s: cleanup %+v, want the preset agent coder", w.Format, w.Cleanup)
		}
	}
	wantLine := map[string]int{"yaml": 17, "hcl": 24}
	for _, w := range []*config.Workflow{y, h} {
		if w.Budget.Pos.Line != wantLine[w.Format] || w.Budget.Pos.Col != 1 {
			t.Errorf("%s: budget at %d:%d, want %d:1", w.Format, w.Budget.Pos.Line, w.Budget.Pos.Col, wantLine[w.Format])
		}
	}
}

// TestPresetDigest: editing a preset, its keys or a budget changes the
// digest; a workflow of run: agents without budgets has none of the new
// keys in its spec, so that its digest is what it was.
func TestPresetDigest(t *testing.T) {
	base := "name: x\nagents:\n  a: {preset: claude, model: sonnet, args: [-v], price: {input_per_mtok: 3}}\nbudget: {cost_usd: 25}\nsteps:\n  - {id: s, prompt: p, agent: a, budget: {sessions: 2}}\n"
	edits := map[string][2]string{
		"preset":      {"preset: claude", "preset: codex"},
		"model":       {"model: sonnet", "model: opus"},
		"args":        {"args: [-v]", "args: [-q]"},
		"resume":      {"preset: claude,", "preset: claude, resume: false,"},
		"price":       {"input_per_mtok: 3", "input_per_mtok: 4"},
		"run budget":  {"cost_usd: 25", "cost_usd: 26"},
		"step budget": {"sessions: 2", "sessions: 3"},
		"no budget":   {"budget: {cost_usd: 25}\n", ""},
	}
	d := parse(t, "yaml", base).Digest()
	for name, e := range edits {
		src := strings.Replace(base, e[0], e[1], 1)
		if src == base {
			t.Fatalf("%s: edit %q not found", name, e[0])
		}
		if parse(t, "yaml", src).Digest() == d {
			t.Errorf("%s: digest unchanged by %q", name, e[1])
		}
	}
	plain := parse(t, "yaml", "name: x\nagents:\n  a: {run: a}\nsteps:\n  - {id: s, prompt: p, agent: a}\n")
	spec, _ := plain.Spec()
	for _, key := range []string{"preset", "model", "args", "resume", "price", "budget"} {
		if strings.Contains(string(spec), `"`+key+`"`) {
			t.Errorf("spec of a workflow without %s has it:\n%s", key, spec)
		}
	}
	if want := `"a": {
      "run": "a"
    }`; !strings.Contains(string(spec), want) {
		t.Errorf("spec of a run: agent:\n%s\nwant %s", spec, want)
	}
}

// TestUsageInExpressions: the usage of run and of steps compiles in a
// workflow's expressions, and a misspelt field is a positioned error.
func TestUsageInExpressions(t *testing.T) {
	ok := "name: x\nsteps:\n  - id: code\n    run: make\n  - id: review\n    run: review\n    when: run.usage.cost_usd < 10\n    gate: {pass: steps.code.usage.tokens_out < 100000}\n"
	w := parse(t, "yaml", ok)
	if s := w.Step("review"); s.When == nil || s.Gate.Pass == nil {
		t.Fatalf("review: %+v", s)
	}
	got := diagLines(t, "yaml", strings.Replace(ok, "run.usage.cost_usd", "run.usage.cost_usb", 1))
	if want := []string{`7:21 when: unknown field "cost_usb" of run.usage (did you mean "cost_usd"?)`}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	got = diagLines(t, "yaml", strings.Replace(ok, "usage.tokens_out", "usage.typo", 1))
	if want := []string{`8:35 gate.pass: unknown field "typo" of the usage of step "code"`}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
