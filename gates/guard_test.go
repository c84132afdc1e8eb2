package gates

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// maxHostileAlloc bounds the bytes one hostile evaluation may allocate:
// the evaluation budget (MaxEvalSize), with room for the estimates
// being short of what the builtins really allocate by a small factor,
// and for expr's own ranges and arrays. Without the guards, each
// evaluation would allocate gigabytes.
const maxHostileAlloc = 3 * MaxEvalSize

// overLimit reports whether err is the error of an evaluation over the
// size budget or over the budget of work (MaxSteps): a range, for
// one, is charged to both, its steps first.
func overLimit(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "memory budget exceeded") ||
		strings.Contains(err.Error(), "expression does too much work"))
}

// allocated returns the bytes allocated while running fn.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostileAllocations evaluates expressions that would each build
// gigabytes, or more memory than the machine has, and checks that each
// fails with a budget error having allocated little. Without the
// guards, the first ones end the test binary with "fatal error: out of
// memory", which no recover catches.
func TestHostileAllocations(t *testing.T) {
	big := `let s = repeat(repeat("x", 1000), 4000); `
	tests := []struct{ name, src string }{
		{"repeat of repeat", `len(repeat(repeat("x", 999999), 999999)) > 0`},
		{"repeat overflowing int", `len(repeat("xx", 9223372036854775807))`},
		{"repeat in a loop", `sum(1..100, len(repeat(repeat("x", 1000), 999)))`},
		{"range", `len(1..1000000000000)`},
		{"range in a loop", `sum(1..1000, len(1..999999))`},
		{"split by every separator in a loop", `let s = repeat(",", 999999); sum(1..10, len(split(s, ",")))`},
		{"split into runes", big + `len(split(s, ""))`},
		{"split with a huge count", big + `len(split(s, "y", 999999999))`},
		{"splitAfter with a huge count", big + `len(splitAfter(s, "y", 999999999))`},
		{"join with a long separator", `let a = split(repeat("x,", 90000), ","); len(join(a, repeat("y", 1000)))`},
		{"toJSON of a deep value", `let d = reduce(1..5000, [#acc], []); len(toJSON(d))`},
		{"toJSON of escaped strings", `len(toJSON(map(1..200000, repeat("<", 40))))`},
		{"string of a too deep value", `let d = reduce(1..200000, [#acc], []); len(string(d))`},
		{"flatten of a too deep value", `let d = reduce(1..200000, [#acc], []); len(flatten(d))`},
		{"fromJSON of many values", `len(fromJSON("[" + repeat("1,", 999999) + "1]"))`},
		{"toBase64", big + `sum(1..10, len(toBase64(s)))`},
		{"fromBase64", `let s = toBase64(repeat(repeat("x", 1000), 3000)); sum(1..10, len(fromBase64(s)))`},
		{"upper in a loop", big + `sum(1..10, len(upper(s)))`},
		{"lower in a loop", big + `sum(1..10, len(lower(s)))`},
		{"concat", `let a = 1..900000; len(concat(a, a, a, a, a, a))`},
		{"sort", `let a = 1..900000; len(sort(a)) + len(sort(a)) + len(sort(a)) + len(sort(a)) + len(sort(a))`},
		{"reverse", `let a = 1..900000; sum(1..5, len(reverse(a)))`},
		{"uniq", `let a = split(repeat(",", 999999), ","); sum(1..5, len(uniq(take(a, 1))) + len(uniq(a)))`},
		{"keys and values", `let m = fromJSON(toJSON(groupBy(1..300000, #))); sum(1..5, len(keys(m)) + len(values(m)) + len(toPairs(m)))`},
		{"fromPairs", `let p = map(1..100000, [string(#), #]); sum(1..10, len(fromPairs(p)))`},
		{"replace growing", `let a = repeat("x", 1000); len(replace(replace(a, "x", a), "x", a))`},
		{"string concatenation doubling", `let a = repeat("x", 999999); let b = a + a; let c = b + b; let d = c + c; let e = d + d; len(e + e)`},
		{"reduce concatenating", `reduce(1..100000, #acc + repeat("x", 900), "")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(tt.src, testScope, Any)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.src, err)
			}
			var out any
			n := allocated(func() { out, err = p.Eval(&Env{}) })
			if !overLimit(err) {
				t.Errorf("Eval(%q) = %.40v, %v; want memory budget exceeded or too much work", tt.src, out, err)
			}
			if n > maxHostileAlloc {
				t.Errorf("Eval(%q) allocated %d MiB, want at most %d MiB", tt.src, n>>20, maxHostileAlloc>>20)
			}
			t.Logf("allocated %d KiB", n>>10)
		})
	}
}

// TestGuardedBuiltinsUnchanged checks that the guarded builtins give
// the results expr's own do on values within the limits.
func TestGuardedBuiltinsUnchanged(t *testing.T) {
	tests := []struct {
		src  string
		want string
	}{
		{`repeat("ab", 3)`, `ababab`},
		{`repeat("ab", 0)`, ``},
		{`split("a,b,c", ",")`, `[a b c]`},
		{`split("a,b,c", ",", 2)`, `[a b,c]`},
		{`split("héllo", "")`, `[h é l l o]`},
		{`splitAfter("a,b,c", ",")`, `[a, b, c]`},
		{`splitAfter("a,b,c", ",", 9)`, `[a, b, c]`},
		{`upper("abc") + lower("DEF")`, `ABCdef`},
		{`toBase64("hi") + fromBase64("aGk=")`, `aGk=hi`},
		{`fromJSON("{\"a\": [1, 2]}").a[1]`, `2`},
		{`toJSON({"a": [1, "<"]})`, "{\n  \"a\": [\n    1,\n    \"\\u003c\"\n  ]\n}"},
		{`sort([3, 1, 2])`, `[1 2 3]`},
		{`sort(["b", "a"], "desc")`, `[b a]`},
		{`reverse([1, 2, 3])`, `[3 2 1]`},
		{`uniq([1, 2, 1, 3])`, `[1 2 3]`},
		{`concat([1], [2, 3], [])`, `[1 2 3]`},
		{`sort(keys({"a": 1, "b": 2}))`, `[a b]`},
		{`sort(values({"a": 1, "b": 2}))`, `[1 2]`},
		{`toPairs({"a": 1})`, `[[a 1]]`},
		{`fromPairs([["a", 1]]).a`, `1`},
		{`"x" | repeat(2) | upper()`, `XX`},
		// The type check before the budget is added picked an overload
		// of join with one argument fewer, and compiling panicked.
		{`join(split("x,y", ","), upper("-"))`, `x-y`},
		{`join(report.issues, string(1))`, `a1b`},
		{`len(repeat(repeat("x", 1000), 8000))`, `8000000`},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p, err := Compile(tt.src, testScope, Any)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := p.Eval(env)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if s := fmt.Sprint(got); s != tt.want {
				t.Errorf("Eval(%q) = %s, want %s", tt.src, s, tt.want)
			}
		})
	}
}

// TestGuardedCallsKeepTypes checks that a guarded builtin's result
// keeps its type at compile time, so that a kind mismatch is still a
// compile error and not a run-time one.
func TestGuardedCallsKeepTypes(t *testing.T) {
	for _, src := range []string{
		`upper(report.summary) + lower(output)`,
		`repeat("x", 2)`,
		`toJSON(report) + "!"`,
		`join(split(output, "\n"), ",")`,
	} {
		_, err := Compile(src, testScope, Bool)
		if err == nil || err.Error() != "expected bool, but got string" {
			t.Errorf("Compile(%q, Bool) error = %v, want expected bool, but got string", src, err)
		}
	}
}
