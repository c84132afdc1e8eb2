package gates

import (
	"errors"
	"strings"
	"testing"
)

// evalError compiles src, evaluates it against env and returns the
// *Error of the evaluation, failing the test when there is none.
func evalError(t *testing.T, src string, env *Env) *Error {
	t.Helper()
	p, err := Compile(src, testScope, Any)
	if err != nil {
		t.Fatalf("Compile(%q): %v", src, err)
	}
	out, err := p.Eval(env)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Eval(%q) = %.40v, %v; want an *Error", src, out, err)
	}
	checkPosition(t, src, e)
	return e
}

// at returns the byte offset of the first occurrence of mark in src,
// failing the test when there is none.
func at(t *testing.T, src, mark string) int {
	t.Helper()
	i := strings.Index(src, mark)
	if i < 0 {
		t.Fatalf("%q not in %q", mark, src)
	}
	return i
}

// TestPatternLimits: patterns over MaxPattern bytes or MaxPatternSize
// parts are refused before they are compiled, at compile time when
// they are written in the expression and when matched otherwise,
// having allocated little; the others match as before.
func TestPatternLimits(t *testing.T) {
	long := `"` + strings.Repeat("a", MaxPattern+1) + `"`
	tests := []struct {
		name, src string
		compile   bool   // refused at compile time
		mark      string // where the error is
		want      string
	}{
		{"repeated alternation, built", `"a" matches repeat("(a|a)*", 1000)`, false, "matches",
			"regular expression longer than 4096 bytes"},
		{"repeated repetition, built", `"a" matches repeat("(a{1000})", 3000)`, false, "matches",
			"regular expression longer than 4096 bytes"},
		{"short pattern of many parts, built", `"a" matches repeat("(?:a{100})", 30)`, false, "matches",
			"regular expression too large: more than 2000 parts with its repetitions expanded"},
		{"nested repetitions, built", `let p = "(?:(?:a{10}b{10}){10}){5}"; "a" matches p + p`, false, "matches",
			"regular expression too large: more than 2000 parts with its repetitions expanded"},
		{"nested repetitions, written", `"a" matches "(?:(?:a{10}b{10}){10}){10}"`, true, "(?:",
			"regular expression too large: more than 2000 parts with its repetitions expanded"},
		{"long pattern, written", `output matches ` + long, true, `aaa`,
			"regular expression longer than 4096 bytes"},
		{"invalid pattern, written", `output matches "("`, true, "matches",
			"error parsing regexp: missing closing ): `(`"},
		{"invalid pattern, built", `output matches "(" + ""`, false, "matches",
			"error parsing regexp: missing closing ): `(`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *Error
			n := allocated(func() {
				p, err := Compile(tt.src, testScope, Bool)
				if tt.compile {
					if !errors.As(err, &e) {
						t.Fatalf("Compile(%.60q) = %v; want an *Error", tt.src, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Compile(%.60q): %v", tt.src, err)
				}
				_, err = p.Eval(testEnv())
				if !errors.As(err, &e) {
					t.Fatalf("Eval(%.60q) = %v; want an *Error", tt.src, err)
				}
			})
			if e == nil {
				return
			}
			checkPosition(t, tt.src, e)
			if e.Msg != tt.want || e.Offset != at(t, tt.src, tt.mark) {
				t.Errorf("error = %q at %d, want %q at %d", e.Msg, e.Offset, tt.want, at(t, tt.src, tt.mark))
			}
			// Compiling repeat("(a{1000})", 3000) takes 1.4 GB.
			if n > 4<<20 {
				t.Errorf("allocated %d KiB, want at most 4 MiB", n>>10)
			}
		})
	}
}

// TestPatternsMatch: patterns within the limits match as expr's own
// matches does, written or built, over strings of any size.
func TestPatternsMatch(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{`output matches "(?m)^PASS$"`, true},
		{`output matches "^FAIL"`, false},
		{`"abc-123" matches "^[a-z]+-\\d{3}$"`, true},
		{`"x7" matches "x" + "\\d"`, true},
		{`report.summary matches "fi(n|x)e"`, true},
		{`report.missing matches "x"`, false},
		{`repeat("a", 1000) matches "^a{1000}$"`, true},
		{`repeat("ab", 100000) + "c" matches "(a|b)*c"`, true},
		{`count(1..1000, string(#) matches "^" + string(# % 7) + "$") == 6`, true},
		{`"PASS" not matches "FAIL"`, true},
		{`none(split(output, "\n"), # matches "FAIL|panic")`, true},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p, err := Compile(tt.src, testScope, Bool)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := p.EvalBool(testEnv())
			if err != nil || got != tt.want {
				t.Errorf("EvalBool = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestPatternCache: a pattern built at run time is compiled once per
// evaluation, its compilation charged once; an evaluation keeps at
// most maxCachedPatterns of them.
func TestPatternCache(t *testing.T) {
	var b budget
	p1, err := b.pattern(`a\d+`)
	if err != nil {
		t.Fatal(err)
	}
	spent := b.steps
	p2, err := b.pattern(`a\d+`)
	if err != nil {
		t.Fatal(err)
	}
	if p1 != p2 || b.steps != spent {
		t.Errorf("second compilation: same pattern %v, steps %d -> %d; want the cached one, uncharged", p1 == p2, spent, b.steps)
	}
	for i := range 2 * maxCachedPatterns {
		if _, err := b.pattern(strings.Repeat("x", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if len(b.patterns) != maxCachedPatterns {
		t.Errorf("%d patterns cached, want %d", len(b.patterns), maxCachedPatterns)
	}
	var other budget
	if _, ok := other.patterns[`a\d+`]; ok {
		t.Error("a new evaluation's budget has the pattern of another")
	}
}

// hostileWork are expressions that would each run for minutes or
// more, with where the work budget stops them: the last occurrence of
// mark.
var hostileWork = []struct{ name, src, mark string }{
	{"huge range", `len(1..1000000000 | filter(# % 2 == 0))`, ".."},
	{"nested loops over an array", `let a = 1..999999; sum(a, sum(a, 1))`, "sum(a, 1)"},
	{"nested loops ending early", `let a = 1..999999; all(a, all(a, true))`, "all(a, true)"},
	{"scanning a long string in a loop", `let s = repeat(repeat("x", 1000), 8000); count(1..1000000, s contains "y")`, "s contains"},
	{"comparing long strings in a loop", `let s = repeat(repeat("x", 1000), 8000); let t = repeat(repeat("x", 1000), 8000); count(1..1000000, s == t)`, "t)"},
	{"measuring a long string in a loop", `let s = repeat(repeat("x", 1000), 8000); count(1..1000000, len(s) > 0)`, "s) > 0"},
	{"looking a long key up in a loop", `let s = repeat(repeat("x", 1000), 8000); count(1..1000000, report[s] == nil)`, "s] =="},
	{"matching a long string", `let s = repeat("ab", 500000); count(1..100, s matches "(a|b)*c")`, "matches"},
	{"compiling a pattern in a loop", `count(1..100000, "a" matches "(a|b)*c" + string(#))`, "matches"},
	{"comparing shared values in depth", `let d = reduce(1..60, [#acc, #acc], []); let f = reduce(1..60, [#acc, #acc], []); d == f`, "f"},
	{"looking a shared value up", `let d = reduce(1..60, [#acc, #acc], []); let f = reduce(1..60, [#acc, #acc], []); d in [f]`, "in"},
	{"looking a long string up", `let s = repeat(repeat("x", 1000), 8000); let t = repeat(repeat("x", 1000), 7999) + repeat("y", 1000); t in map(1..1000, s)`, "in map"},
	{"uniq", `len(uniq(map(1..3000, #)))`, "uniq"},
	{"sort in a loop", `sum(1..1000, len(sort(1..9999)))`, "sort"},
	{"sortBy with long keys", `let s = repeat(repeat("x", 1000), 1000); len(sortBy(1..1000, s))`, "s)"},
	{"file_exists in a loop", `count(1..100000, file_exists("PLAN.md"))`, "file_exists"},
}

// TestWorkBudget: each of hostileWork stops with the error of the work
// budget, positioned at the operation that went over it, having done
// at most MaxSteps steps of work.
func TestWorkBudget(t *testing.T) {
	want := "expression does too much work: more than 5000000 steps"
	for _, tt := range hostileWork {
		t.Run(tt.name, func(t *testing.T) {
			e := evalError(t, tt.src, testEnv())
			if off := strings.LastIndex(tt.src, tt.mark); e.Msg != want || e.Offset != off {
				t.Errorf("Eval(%.50q) error = %q at %d, want %q at %d", tt.src, e.Msg, e.Offset, want, off)
			}
		})
	}
}

// TestWorkBudgetDeterministic: the same expression over the same
// environment stops at the same point, with the same error, however
// many times it is evaluated and whether compiled once or again.
func TestWorkBudgetDeterministic(t *testing.T) {
	env := testEnv()
	for _, tt := range hostileWork {
		t.Run(tt.name, func(t *testing.T) {
			first := evalError(t, tt.src, env)
			p, err := Compile(tt.src, testScope, Any)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				_, err := p.Eval(env)
				var e *Error
				if !errors.As(err, &e) || *e != *first {
					t.Errorf("Eval error = %+v, want %+v as the first time", err, first)
				}
			}
		})
	}
}

// TestWorkCounted: an expression within the budget does the same work
// every time it is evaluated, counted from its values.
func TestWorkCounted(t *testing.T) {
	p, err := Compile(`sum(1..1000, len(filter(split(output, "\n"), # matches "^P"))) + len(uniq(1..100))`, testScope, Any)
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv()
	var counts []int
	for range 3 {
		steps := 0
		if _, err := p.eval(env, &steps); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, steps)
	}
	if counts[0] < 1000 || counts[0] != counts[1] || counts[1] != counts[2] {
		t.Errorf("steps = %v, want the same number, over 1000, each time", counts)
	}
}

// TestWorkWithinBudget: expressions that do a lot of work, but less
// than MaxSteps, give their results as before.
func TestWorkWithinBudget(t *testing.T) {
	env := testEnv()
	env.Output = strings.Repeat("ok 1 - a test\n", 4000) + "PASS\n" // 56 KiB
	tests := []struct {
		src  string
		want any
	}{
		{`sum(1..999999, 1)`, 999999},
		{`len(map(1..999999, # * 2))`, 999999},
		{`count(split(output, "\n"), # startsWith "ok")`, 4000},
		{`output matches "(?m)^PASS$" && !(output matches "(?m)^(FAIL|panic:)")`, true},
		{`len(uniq(map(1..1000, # % 10)))`, 10},
		{`sort(map(1..100000, -#))[0]`, -100000},
		{`all(1..1000, # in 1..1000)`, true},
		{`report.issues == ["a", "b"] && ["b"] != report.issues`, true},
		{`sum(1..300, len(filter(1..300, # > 150)))`, 45000},
		{`len(groupBy(1..10000, # % 3))`, 3},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p, err := Compile(tt.src, testScope, Any)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := p.Eval(env)
			if err != nil || got != tt.want {
				t.Errorf("Eval = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestTemplateWorkBudget: the parts of a template share one budget of
// work, so that many parts cannot do MaxSteps each.
func TestTemplateWorkBudget(t *testing.T) {
	part := `{{ len(map(1..999999, #)) }}`
	src := strings.Repeat(part+" ", 3)
	tmpl, err := CompileTemplate(src, testScope)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(&Env{})
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Msg, "too much work") {
		t.Fatalf("Render error = %v, want too much work", err)
	}
	if third := 2 * (len(part) + 1); e.Offset < third {
		t.Errorf("error at %d, want in the third part, from %d", e.Offset, third)
	}
	one, err := CompileTemplate(part, testScope)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := one.Render(&Env{}); got != "999999" || err != nil {
		t.Errorf("Render of one part = %q, %v", got, err)
	}
}
