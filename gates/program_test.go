package gates

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"
)

var testScope = Scope{
	Steps: []string{"tests", "code_review", "a"},
	Vars:  []string{"feature"},
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name, src string
		kind      Kind
		want      Error
	}{
		{"unknown step", `steps.testz.exit_code == 0`, Bool, Error{1, 7, 6, `unknown step "testz" (did you mean "tests"?)`, "tests"}},
		{"unknown step indexed", `steps["testz"].exit_code == 0`, Bool, Error{1, 8, 7, `unknown step "testz" (did you mean "tests"?)`, "tests"}},
		{"unknown step no hint", `steps.zzzzzz.status == ""`, Bool, Error{1, 7, 6, `unknown step "zzzzzz"`, ""}},
		{"unknown step optional", `steps?.testz?.status == ""`, Bool, Error{1, 8, 7, `unknown step "testz" (did you mean "tests"?)`, "tests"}},
		{"unknown var", `vars.featur == "x"`, Bool, Error{1, 6, 5, `unknown var "featur" (did you mean "feature"?)`, "feature"}},
		{"unknown step field", `steps.a.statuss == "ok"`, Bool, Error{1, 9, 8, `unknown field "statuss" of step "a" (did you mean "status"?)`, "status"}},
		{"unknown field of indexed step", `steps[output].exit_cod == 0`, Bool, Error{1, 15, 14, `unknown field "exit_cod" of a step (did you mean "exit_code"?)`, "exit_code"}},
		{"unknown run field", `run.idd == ""`, Bool, Error{1, 5, 4, `unknown field "idd" of run (did you mean "id"?)`, "id"}},
		{"unknown feedback field", `feedback.reasn != ""`, Bool, Error{1, 10, 9, `unknown field "reasn" of feedback (did you mean "reason"?)`, "reason"}},
		{"unknown check field", `check.exit == 0`, Bool, Error{1, 7, 6, `unknown field "exit" of check`, ""}},
		{"unknown run usage field", `run.usage.cost_uds < 10`, Bool, Error{1, 11, 10, `unknown field "cost_uds" of run.usage (did you mean "cost_usd"?)`, "cost_usd"}},
		{"unknown run usage field no hint", `run.usage.typo > 0`, Bool, Error{1, 11, 10, `unknown field "typo" of run.usage`, ""}},
		{"unknown step usage field", `steps.a.usage.token_out < 100`, Bool, Error{1, 15, 14, `unknown field "token_out" of the usage of step "a" (did you mean "tokens_out"?)`, "tokens_out"}},
		{"unknown indexed step usage field", `steps[output].usage.turn > 1`, Bool, Error{1, 21, 20, `unknown field "turn" of the usage of a step (did you mean "turns"?)`, "turns"}},
		{"misspelt usage", `run.usag.cost_usd < 1`, Bool, Error{1, 5, 4, `unknown field "usag" of run (did you mean "usage"?)`, "usage"}},
		{"usage cost is a number", `run.usage.cost_usd == "1"`, Bool, Error{1, 20, 19, `invalid operation: == (mismatched types float64 and string)`, ""}},
		{"unknown name", `signal.PASS`, Bool, Error{1, 1, 0, `unknown name "signal" (did you mean "signals"?)`, "signals"}},
		{"unknown function", `lenn(output) > 0`, Bool, Error{1, 1, 0, `unknown name "lenn" (did you mean "len"?)`, "len"}},
		{"first error wins", `steps.x.status == "" && steps.y.status == ""`, Bool, Error{1, 7, 6, `unknown step "x"`, ""}},
		{"not bool", `exit_code`, Bool, Error{1, 1, 0, `expected bool, but got int`, ""}},
		{"mismatched types", `steps.tests.exit_code == "0"`, Bool, Error{1, 23, 22, `invalid operation: == (mismatched types int and string)`, ""}},
		{"syntax", `signals.PASS &&`, Bool, Error{1, 15, 14, `unexpected token EOF`, ""}},
		{"empty", ``, Any, Error{1, 1, 0, `unexpected token EOF`, ""}},
		{"unterminated string", `output == "abc`, Bool, Error{1, 15, 14, `literal not terminated`, ""}},
		{"second line", "signals.PASS &&\n  steps.tets.exit_code == 0", Bool, Error{2, 9, 24, `unknown step "tets" (did you mean "tests"?)`, "tests"}},
		{"runes before error", `"héllo wörld" == 1`, Bool, Error{1, 15, 16, `invalid operation: == (mismatched types string and int)`, ""}},
		{"let shadows", `let steps = 1; steps`, Any, Error{1, 5, 4, `let steps: "steps" is already an environment name`, ""}},
		{"now builtin replaced", `now(1)`, Any, Error{1, 1, 0, `too many arguments to call now`, ""}},
		{"too many nodes", strings.Repeat("1 + ", MaxNodes) + "1", Any, Error{}},
	}
	// One Compiler for every case, so that errors and the alternation of
	// kinds cannot leak from one compilation into the next.
	comp := NewCompiler(testScope)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				name    string
				compile func() (*Program, error)
			}{
				{"Compile", func() (*Program, error) { return Compile(tt.src, testScope, tt.kind) }},
				{"Compiler.Compile", func() (*Program, error) { return comp.Compile(tt.src, tt.kind) }},
			} {
				_, err := c.compile()
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("%s(%q) error = %v, want *Error", c.name, tt.src, err)
				}
				if tt.want == (Error{}) {
					checkPosition(t, tt.src, e)
					continue
				}
				if diff := cmp.Diff(tt.want, *e); diff != "" {
					t.Errorf("%s(%q) error mismatch (-want +got):\n%s", c.name, tt.src, diff)
				}
			}
		})
	}
}

// checkPosition fails unless e has a valid position in src.
func checkPosition(t *testing.T, src string, e *Error) {
	t.Helper()
	if e.Line < 1 || e.Col < 1 || e.Offset < 0 || e.Offset > len(src) {
		t.Fatalf("error %q at %d:%d offset %d, invalid for source of %d bytes", e.Msg, e.Line, e.Col, e.Offset, len(src))
	}
	line, col := lineCol(src, e.Offset)
	if line != e.Line || col != e.Col {
		t.Fatalf("error %q at %d:%d, but offset %d is %d:%d", e.Msg, e.Line, e.Col, e.Offset, line, col)
	}
	if strings.Contains(e.Msg, "\n") {
		t.Fatalf("error message %q has a snippet", e.Msg)
	}
}

// testEnv returns an Env with every field set.
func testEnv() *Env {
	fs := afero.NewMemMapFs()
	afero.WriteFile(fs, "/repo/PLAN.md", []byte("# Plan\n"), 0o644)
	afero.WriteFile(fs, "/repo/report.json", []byte(`{"severity": "none", "count": 3}`), 0o644)
	afero.WriteFile(fs, "/repo/docs/a.md", nil, 0o644)
	afero.WriteFile(fs, "/repo/docs/b.md", nil, 0o644)
	afero.WriteFile(fs, "/secret", []byte("s"), 0o644)
	return &Env{
		Vars: map[string]string{"feature": "dark mode"},
		Env:  map[string]string{"HOME": "/home/u"},
		Run: RunInfo{ID: "r1", Workflow: "sdlc", StartedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Iteration: 2,
			Usage: Usage{TokensIn: 5000, TokensOut: 900, TokensCached: 4000, CostUSD: 1.5, Turns: 7, Sessions: 4}},
		Steps: map[string]StepInfo{
			"tests": {Status: "succeeded", Attempts: 1, Iteration: 1, ExitCode: 0, Output: "ok\n",
				Signals: map[string]bool{"PASS": true}, Verdict: "PASS", Metrics: map[string]string{"coverage": "81"},
				Artifacts: []string{"cover.out"}, Report: map[string]any{"n": 1}, Input: map[string]any{"ok": true},
				Error: "", Duration: 90 * time.Second,
				Usage: Usage{TokensIn: 1200, TokensOut: 340, TokensCached: 800, CostUSD: 0.25, Turns: 3, Sessions: 2}},
		},
		ExitCode:  3,
		Output:    "PASS\n",
		Signals:   map[string]bool{"PASS": true, "FAIL": false},
		Verdict:   "PASS",
		Metrics:   map[string]string{"severity": "none"},
		Report:    map[string]any{"summary": "fine", "issues": []any{"a", "b"}},
		Attempt:   2,
		Iteration: 1,
		Error:     "boom",
		Feedback:  Feedback{Step: "code_review", Reason: "FAIL", Report: map[string]any{"k": "v"}},
		Check:     CheckInfo{ExitCode: 1, Output: "lint"},
		FS:        fs,
		Dir:       "/repo",
		Now:       time.Date(2025, 1, 2, 4, 0, 0, 0, time.UTC),
	}
}

func TestEval(t *testing.T) {
	tests := []struct {
		src  string
		want any
	}{
		{`vars.feature`, "dark mode"},
		{`env.HOME`, "/home/u"},
		{`env.MISSING`, ""},
		{`run.id + " " + run.workflow`, "r1 sdlc"},
		{`run.iteration`, 2},
		{`run.started_at.Year()`, 2025},
		{`steps.tests.status`, "succeeded"},
		{`steps.tests.attempts`, 1},
		{`steps.tests.iteration`, 1},
		{`steps.tests.exit_code`, 0},
		{`steps.tests.output`, "ok\n"},
		{`steps.tests.signals.PASS`, true},
		{`steps.tests.verdict`, "PASS"},
		{`steps.tests.metrics.coverage`, "81"},
		{`steps.tests.artifacts[0]`, "cover.out"},
		{`steps.tests.report.n`, 1},
		{`steps.tests.input.ok`, true},
		{`steps.tests.error`, ""},
		{`steps.tests.duration.Seconds()`, 90.0},
		{`steps["tests"].exit_code`, 0},
		{`steps.tests.usage.tokens_in`, int64(1200)},
		{`steps.tests.usage.tokens_out < 100000`, true},
		{`steps.tests.usage.tokens_cached`, int64(800)},
		{`steps.tests.usage.cost_usd`, 0.25},
		{`steps.tests.usage.turns`, 3},
		{`steps.tests.usage.sessions`, 2},
		{`steps["tests"].usage.sessions`, 2},
		{`steps.a.usage.cost_usd`, 0.0},
		{`run.usage.cost_usd < 10`, true},
		{`run.usage.cost_usd`, 1.5},
		{`run.usage.tokens_in + run.usage.tokens_out`, 5900},
		{`run.usage.tokens_out > 1000`, false},
		{`run.usage.sessions`, 4},
		{`run.usage.turns >= 7 && run.usage.tokens_cached == 4000`, true},
		{`steps.a.status`, ""}, // in scope, not run yet: zero StepInfo
		{`exit_code`, 3},
		{`output`, "PASS\n"},
		{`signals.PASS && !signals.FAIL && !signals.DONE`, true},
		{`verdict`, "PASS"},
		{`metrics.severity`, "none"},
		{`report.summary`, "fine"},
		{`len(report.issues)`, 2},
		{`attempt`, 2},
		{`iteration`, 1},
		{`error`, "boom"},
		{`feedback.step + ":" + feedback.reason + ":" + feedback.report.k`, "code_review:FAIL:v"},
		{`check.exit_code`, 1},
		{`check.output`, "lint"},
		{`file_exists("PLAN.md")`, true},
		{`file_exists("./docs/../PLAN.md")`, true},
		{`file_exists("nope.md")`, false},
		{`read_file("PLAN.md")`, "# Plan\n"},
		{`read_json("report.json").severity`, "none"},
		{`read_json("report.json").count == 3`, true},
		{`glob("docs/*.md")`, []any{"docs/a.md", "docs/b.md"}},
		{`now().Sub(run.started_at).Minutes() > 55`, true},
		{`now().Hour()`, 4},
		{`"a" + "b"`, "ab"},
		{`report.summary + "!"`, "fine!"},
		{`join(["x", "y"], ",")`, "x,y"},
		{`max([1, 5, 3])`, 5},
	}
	env := testEnv()
	comp := NewCompiler(testScope)
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p1, err := Compile(tt.src, testScope, Any)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			p2, err := comp.Compile(tt.src, Any)
			if err != nil {
				t.Fatalf("Compiler.Compile: %v", err)
			}
			for _, p := range []*Program{p1, p2} {
				got, err := p.Eval(env)
				if err != nil {
					t.Fatalf("Eval: %v", err)
				}
				if s, ok := got.([]string); ok {
					got = toAny(s)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Eval(%q) mismatch (-want +got):\n%s", tt.src, diff)
				}
			}
		})
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func TestEvalZeroEnv(t *testing.T) {
	for _, src := range []string{
		`signals.PASS && !signals.FAIL && steps.tests.exit_code == 0`,
		`vars.feature == "" && env.X == "" && run.id == "" && metrics.x == ""`,
		`run.usage.cost_usd == 0 && steps.tests.usage.tokens_out == 0 && run.usage.sessions < 1`,
		`!file_exists("x") && len(glob("*")) == 0 && now().IsZero()`,
	} {
		p, err := Compile(src, testScope, Bool)
		if err != nil {
			t.Fatalf("Compile(%q): %v", src, err)
		}
		for _, env := range []*Env{nil, {}} {
			got, err := p.EvalBool(env)
			if err != nil || got != (src != `signals.PASS && !signals.FAIL && steps.tests.exit_code == 0`) {
				t.Errorf("EvalBool(%q, %v) = %v, %v", src, env, got, err)
			}
		}
	}
}

func TestEvalErrors(t *testing.T) {
	tests := []struct {
		src, want string
		off       int
	}{
		{`read_file("/secret")`, `read_file "/secret": path must be relative and stay inside the repository`, 0},
		{`read_file("../secret")`, `read_file "../secret": path must be relative and stay inside the repository`, 0},
		{`file_exists("docs/../../secret")`, `file_exists "docs/../../secret": path must be relative and stay inside the repository`, 0},
		{`glob("/*")`, `glob "/*": path must be relative and stay inside the repository`, 0},
		{`read_file("nope")`, `read_file "nope": open /repo/nope: file does not exist`, 0},
		{`read_json("PLAN.md")`, `read_json "PLAN.md": invalid character '#' looking for beginning of value`, 0},
		{`1 + steps.tests.artifacts[5] == ""`, `index out of range: 5 (array length is 1)`, 24},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p, err := Compile(tt.src, testScope, Any)
			if err != nil {
				if !strings.HasPrefix(tt.src, "1 +") {
					t.Fatalf("Compile: %v", err)
				}
				return
			}
			_, err = p.Eval(env)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Eval error = %v, want *Error", err)
			}
			checkPosition(t, tt.src, e)
			if e.Msg != tt.want {
				t.Errorf("Eval(%q) error = %q, want %q", tt.src, e.Msg, tt.want)
			}
		})
	}
}

func TestEvalBoolOnAny(t *testing.T) {
	p, err := Compile(`report.summary`, testScope, Any)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.EvalBool(testEnv())
	if err == nil || err.Error() != "expected bool, but got string" {
		t.Errorf("EvalBool error = %v", err)
	}
}

func TestReadFileLimit(t *testing.T) {
	env := testEnv()
	afero.WriteFile(env.FS, "/repo/big", make([]byte, MaxReadFile+1), 0o644)
	p, err := Compile(`len(read_file("big"))`, testScope, Any)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Eval(env); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Errorf("Eval error = %v, want larger than 4 MiB", err)
	}
}

func TestHostile(t *testing.T) {
	doubling := `let a0 = "xxxxxxxxxxxxxxxx"`
	for i := 1; i <= 30; i++ {
		doubling += fmt.Sprintf("; let a%d = a%d + a%d", i, i-1, i-1)
	}
	doubling += "; len(a30)"
	tree := `let a = map(1..999, 1); let b = map(1..999, a); let c = map(1..999, b); `
	for _, src := range []string{
		`map(1..100000000, # * 2)`,
		`len(1..1000000000)`,
		`len(repeat("x", 100000000))`,
		`len(repeat(repeat("x", 10000), 10000))`,
		`sum(1..999, sum(1..999, sum(1..999, 1)))`,
		doubling,
		tree + `len(toJSON(c))`,
		tree + `len(string(c))`,
		tree + `len(flatten(c))`,
		tree + `max(c)`,
		`let a = repeat("x", 1000); len(replace(replace(a, "x", a), "x", a))`,
		`let a = repeat("x", 100000); len(replace(a, "", a))`,
		`let a = map(1..900, repeat("x", 900)); len(join(map(1..900, join(a)), ""))`,
		`reduce(1..100000, #acc + "xxxxxxxxxxxxxxxxxxxxxxxx", "")`,
	} {
		name := src
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			p, err := Compile(src, testScope, Any)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			start := time.Now()
			_, err = p.Eval(&Env{})
			if !overLimit(err) {
				t.Errorf("Eval error = %v, want memory budget exceeded or too much work", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Eval took %v", d)
			}
		})
	}
}

func TestNames(t *testing.T) {
	want := []string{"vars", "env", "run", "steps", "exit_code", "output", "signals", "verdict",
		"metrics", "report", "attempt", "iteration", "error", "feedback", "check",
		"file_exists", "read_file", "read_json", "glob", "now"}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Errorf("Names mismatch (-want +got):\n%s", diff)
	}
	fields := []string{"status", "attempts", "iteration", "exit_code", "output", "signals", "verdict",
		"metrics", "artifacts", "report", "input", "error", "duration", "usage", "metadata", "items"}
	if diff := cmp.Diff(fields, StepFields()); diff != "" {
		t.Errorf("StepFields mismatch (-want +got):\n%s", diff)
	}
	usage := []string{"tokens_in", "tokens_out", "tokens_cached", "cost_usd", "turns", "sessions"}
	if diff := cmp.Diff(usage, UsageFields()); diff != "" {
		t.Errorf("UsageFields mismatch (-want +got):\n%s", diff)
	}
}

func TestSource(t *testing.T) {
	p, err := Compile(` signals.PASS `, testScope, Bool)
	if err != nil || p.Source() != " signals.PASS " {
		t.Errorf("Source = %q, %v", p.Source(), err)
	}
}

func BenchmarkEvalBool(b *testing.B) {
	p, err := Compile(`signals.PASS && !signals.FAIL && steps.tests.exit_code == 0`, testScope, Bool)
	if err != nil {
		b.Fatal(err)
	}
	env := testEnv()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.EvalBool(env); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// benchGates are typical gate expressions: flags and numbers, string
// comparisons, a regular expression over the output, and loops.
var benchGates = []struct{ name, src string }{
	{"signals", `signals.PASS && !signals.FAIL && steps.tests.exit_code == 0`},
	{"strings", `steps.tests.status == "succeeded" && metrics.severity != "none" || report.summary == "fine"`},
	{"matches", `output matches "(?m)^PASS$" && !(steps.tests.output matches "FAIL|panic")`},
	{"loops", `all(steps.tests.artifacts, # endsWith ".out") && any(split(output, "\n"), # == "PASS")`},
}

// BenchmarkEvalGates evaluates each of benchGates.
func BenchmarkEvalGates(b *testing.B) {
	env := testEnv()
	for _, g := range benchGates {
		b.Run(g.name, func(b *testing.B) {
			p, err := Compile(g.src, testScope, Bool)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.EvalBool(env); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.EvalBool(env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestConcurrentEval(t *testing.T) {
	p, err := Compile(`len(join(map(1..100, output + "x"))) > 0 && file_exists("PLAN.md")`, testScope, Bool)
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv()
	done := make(chan error)
	for range 4 {
		go func() {
			var err error
			for range 50 {
				if ok, e := p.EvalBool(env); !ok || e != nil {
					err = fmt.Errorf("EvalBool = %v, %v", ok, e)
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestErrorExcerpt(t *testing.T) {
	for _, tt := range []struct {
		src        string
		head, tail string
	}{
		{`int(repeat(repeat("x", 1000), 8000))`, "invalid operation: int(xxx", "xxx)"},
		{`read_file(repeat(repeat("é", 1000), 1000))`, `read_file "ééé`, `éé: file does not exist`},
	} {
		p, err := Compile(tt.src, testScope, Any)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Eval(testEnv())
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("Eval(%q) error = %v, want *Error", tt.src, err)
		}
		msg := e.Msg
		if len(msg) > MaxMessage || !utf8.ValidString(msg) || !strings.HasPrefix(msg, tt.head) || !strings.Contains(msg, " bytes cut] … ") {
			t.Errorf("Eval(%q) error of %d bytes = %.80q...; want an excerpt of at most %d bytes", tt.src, len(msg), msg, MaxMessage)
		}
		if !strings.Contains(msg[len(msg)-MaxMessage/4:], tt.tail) {
			t.Errorf("Eval(%q) error ends %q, want it to contain %q", tt.src, msg[len(msg)-100:], tt.tail)
		}
	}
	if got := excerpt("short"); got != "short" {
		t.Errorf("excerpt(short) = %q", got)
	}
}

// TestInt converts the values a limit or budget expression may give.
func TestInt(t *testing.T) {
	tests := []struct {
		in   any
		want int
		bad  bool
	}{
		{in: 3, want: 3},
		{in: int64(4), want: 4},
		{in: 5.0, want: 5},
		{in: "6", want: 6},
		{in: 1.5, bad: true},
		{in: "six", bad: true},
		{in: true, bad: true},
	}
	for _, tt := range tests {
		got, err := Int(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("Int(%#v) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.bad)
		}
	}
}
