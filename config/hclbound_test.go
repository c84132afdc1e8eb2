package config_test

import (
	"fmt"
	"strings"
	"testing"
)

// numbers is an HCL list of the numbers from 0 to n-1.
func numbers(n int) string {
	var items []string
	for i := range n {
		items = append(items, fmt.Sprint(i))
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// hclBomb is an HCL workflow of some 8 KB whose loops would run their
// bodies 200⁴ times each: loading it once took memory and time without
// end.
func hclBomb() string {
	l := numbers(200)
	return `name = "bomb"
vars = {
  v = "%{for a in ` + l + `}%{for b in ` + l + `}%{for c in ` + l + `}%{for d in ` + l + `}${a}${b}${c}${d}%{endfor}%{endfor}%{endfor}%{endfor}"
}
step "a" {
  run      = "true"
  metadata = { m = [for a in ` + l + ` : [for b in ` + l + ` : [for c in ` + l + ` : [for d in ` + l + ` : "${a}${b}${c}${d}"]]]] }
}
`
}

// hclDoubling is an HCL workflow whose loops run their bodies once but
// repeat the value of the loop around them twenty times at each level:
// a kilobyte becomes 160 MB.
func hclDoubling() string {
	rep := func(v string) string { return strings.Repeat("${"+v+"}", 20) }
	return `name = "doubling"
vars = {
  v = "%{for a in ["` + strings.Repeat("x", 1000) + `"]}%{for b in ["` + rep("a") + `"]}%{for c in ["` + rep("b") + `"]}%{for d in ["` + rep("c") + `"]}` + rep("d") + `%{endfor}%{endfor}%{endfor}%{endfor}"
}
step "a" {
  run = "true"
}
`
}

const (
	tooManyRuns = `could run their bodies more than 10000 times; the for expressions and %{for} directives of one value may run them at most 10000 times in all (write the value out, or loop over shorter lists)`
	tooLarge    = `could make a value of more than 1 MiB; a value with for expressions or %{for} directives may hold at most that (write it out, or loop over shorter lists)`
)

// TestHCLLoopsBounded: the for expressions and %{for} directives of an
// HCL value are bounded before it is evaluated, by how many times they
// could run their bodies and how large they could make it; a value
// beyond either is refused at its outermost loop too large, or at the
// value when only the loops' sum is.
func TestHCLLoopsBounded(t *testing.T) {
	sideBySide := fmt.Sprintf("[for x in %s : [for y in %s : y]]", numbers(100), numbers(40))
	tests := []struct {
		name string
		src  string
		want []loopDiag
	}{
		{"nested loops over long lists", hclBomb(), []loopDiag{
			{3, 8, "vars.v: these for loops " + tooManyRuns},
			{7, 20, "metadata: these for loops " + tooManyRuns},
		}},
		{"a loop's value repeated at each level", hclDoubling(), []loopDiag{
			{3, 8, "vars.v: these for loops " + tooLarge},
		}},
		{"loops side by side", `name = "x"
step "a" {
  run      = "true"
  metadata = { a = ` + sideBySide + `, b = ` + sideBySide + `, c = ` + sideBySide + ` }
}
`, []loopDiag{
			{4, 14, "metadata: these for loops " + tooManyRuns},
		}},
		{"a key", `name = "x"
vars = {
  ("%{for a in ` + numbers(200) + `}%{for b in ` + numbers(200) + `}${a}${b}%{endfor}%{endfor}") = "v"
}
step "a" {
  run = "true"
}
`, []loopDiag{
			{3, 5, "vars: these for loops " + tooManyRuns},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDiags(t, "hcl", tt.src, tt.want)
		})
	}
}

// TestHCLLoopsLoad: loops within the bounds load to their values.
func TestHCLLoopsLoad(t *testing.T) {
	w := parse(t, "hcl", `name = "x"
vars = {
  v = "%{for a in ["x", "y"]}${a}-%{endfor}"
  w = "%{for a in [1, 2, 3]}%{for b in [4, 5]}${a}${b} %{endfor}%{endfor}"
  n = "%{for a in `+numbers(100)+`}%{for b in `+numbers(99)+`}.%{endfor}%{endfor}"
  e = "%{for a in []}%{for b in `+numbers(200)+`}%{for c in `+numbers(200)+`}.%{endfor}%{endfor}%{endfor}"
}
step "a" {
  run      = "true"
  metadata = { list = [for s in ["a", "b"] : "${s}-x"], m = { for k, v in { a = 1, b = 2 } : k => [v, v] } }
}
`)
	if got := w.Vars["v"] + "|" + w.Vars["w"]; got != "x-y-|14 15 24 25 34 35 " {
		t.Errorf("vars v|w = %q", got)
	}
	if got := len(w.Vars["n"]); got != 9900 {
		t.Errorf("len(vars.n) = %d, want 9900", got)
	}
	if got := w.Vars["e"]; got != "" {
		t.Errorf("vars.e = %q", got)
	}
	if got := fmt.Sprint(w.Steps[0].Metadata()); got != "map[list:[a-x b-x] m:map[a:[1 1] b:[2 2]]]" {
		t.Errorf("metadata %s", got)
	}
}

// TestHCLNesting: an HCL file nested deeper than 1000 levels, which
// overflowed the parser's stack and ended the process, is refused
// before it is parsed; one nested less deeply is parsed.
func TestHCLNesting(t *testing.T) {
	const tooDeep = "hcl: nested more than 1000 levels deep (brackets, strings, interpolations and template directives)"
	brackets := func(n int) string { return strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }
	ifs := func(n int) string {
		return `"` + strings.Repeat("%{if true}", n) + "x" + strings.Repeat("%{endif}", n) + `"`
	}
	tests := []struct {
		name string
		src  string
		want []loopDiag
	}{
		{"brackets", "name = \"x\"\nvars = { v = " + brackets(300_000) + " }\n", []loopDiag{{2, 1013, tooDeep}}},
		{"template directives", "name = \"x\"\nvars = { v = " + ifs(2000) + " }\n", []loopDiag{{2, 9987, tooDeep}}},
		{"deep, but not too deep", "name = \"x\"\nstep \"a\" {\n  run = \"true\"\n  metadata = { m = " + brackets(990) + " }\n}\n",
			[]loopDiag{{4, 14, "metadata: nested too deeply (at most 64 levels)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDiags(t, "hcl", tt.src, tt.want)
		})
	}
}

// TestHCLHugeNumbers: a number far beyond float64's range, whose
// decimal form has as many digits as its exponent says (hours of work
// for a few bytes), is read as it is written.
func TestHCLHugeNumbers(t *testing.T) {
	tests := []struct {
		key, value, want string
	}{
		{"max_parallel", "1e40000000", `max_parallel: want a positive integer, got "1e40000000"`},
		{"max_parallel", "-1e40000000", `max_parallel: want a positive integer, got "-1e40000000"`},
		{"max_parallel", "1e999999999", `max_parallel: want a positive integer, got "1e999999999"`},
		{"max_parallel", "1e309", `max_parallel: want a positive integer, got "1` + strings.Repeat("0", 309) + `"`},
		{"description", "1e-40000000", ""},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			src := "name = \"x\"\n" + tt.key + " = " + tt.value + "\nstep \"a\" {\n  run = \"true\"\n}\n"
			var want []loopDiag
			if tt.want != "" {
				want = append(want, loopDiag{2, len(tt.key) + 4, tt.want})
			}
			checkDiags(t, "hcl", src, want)
		})
	}
	if w := parse(t, "hcl", "name = \"x\"\ndescription = 1e-40000000\nstep \"a\" {\n  run = \"true\"\n}\n"); w.Description != "1e-40000000" {
		t.Errorf("description %q", w.Description)
	}
}
