package config

import (
	"fmt"
	"math"
	"testing"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// ctyOf converts a JSON-compatible value for hclwrite, which the
// emitter's own writers are checked against.
func ctyOf(t *testing.T, v any) cty.Value {
	t.Helper()
	switch x := v.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType)
	case string:
		return cty.StringVal(x)
	case bool:
		return cty.BoolVal(x)
	case float64:
		return cty.NumberFloatVal(x)
	case []any:
		if len(x) == 0 {
			return cty.EmptyTupleVal
		}
		vals := make([]cty.Value, 0, len(x))
		for _, item := range x {
			vals = append(vals, ctyOf(t, item))
		}
		return cty.TupleVal(vals)
	case map[string]any:
		if len(x) == 0 {
			return cty.EmptyObjectVal
		}
		vals := make(map[string]cty.Value, len(x))
		for k, item := range x {
			vals[k] = ctyOf(t, item)
		}
		return cty.ObjectVal(vals)
	}
	t.Fatalf("no cty value for a %T", v)
	return cty.NilVal
}

// TestHCLFormat: strings are quoted, literals written and attributes
// laid out exactly as hclwrite does it (the emitted workflows are
// checked against hclwrite.Format too, in reemit).
func TestHCLFormat(t *testing.T) {
	for _, s := range []string{"", "plain", `say "hi"`, `back\slash`, "tab\tnew\nline\rcr", "${var} and %{ if } and $x %y",
		"$", "%", "ends with $", "{{ vars.x }}", "\x00\x01\x7f", "\u00e9t\u00e9 \u2028 \U0001F600", "\ufeffbom", "bad \xff utf-8"} {
		if got, want := hclQuoted(s), string(hclwrite.TokensForValue(cty.StringVal(s)).Bytes()); got != want {
			t.Errorf("hclQuoted(%q) = %s, want %s", s, got, want)
		}
	}
	values := []any{nil, true, false, 0.0, -1.5, 1e21, 1e-7, 123456789.0, math.Copysign(0, -1), "s",
		[]any{}, []any{1.0, "a", nil}, map[string]any{},
		map[string]any{"b": 1.0, "a": "x", "long key": true, "true": false, "n": nil},
		map[string]any{"owner": "ops", "nested": map[string]any{"deep": []any{1.0, map[string]any{"x": "y"}}, "k": 2.0}, "list": []any{"a", "b"}},
		[]any{map[string]any{"a": 1.0}, map[string]any{}},
	}
	for _, v := range values {
		lit, err := hclLiteral(v)
		if err != nil {
			t.Fatalf("hclLiteral(%v): %v", v, err)
		}
		src := fmt.Sprintf("short = 1\nmetadata = %s\nlonger_name = \"x\"\n", lit)
		got := string(formatHCL([]byte(src)))
		want := string(hclwrite.Format([]byte(fmt.Sprintf("short = 1\nmetadata = %s\nlonger_name = \"x\"\n", hclwrite.TokensForValue(ctyOf(t, v)).Bytes()))))
		if got != want {
			t.Errorf("%v:\n%s\nwant (hclwrite):\n%s", v, got, want)
		}
	}
	if _, err := hclLiteral(math.NaN()); err == nil {
		t.Error("NaN was written")
	}
	// Blocks, comments, blank lines and heredocs break a run of
	// attributes; a heredoc's lines are kept as they are.
	src := "# head\n\nname = \"x\"\nmax_parallel = 2\nstep \"a\" {\nrun = <<-EOT\n    echo = 1\n      indented\n    EOT\ntimeout = \"1m\"\n# note\nenv = {\nA = \"1\"\nLONGER = \"2\"\n}\nneeds = [\"b\", \"c\"]\n}\n"
	if got, want := string(formatHCL([]byte(src))), string(hclwrite.Format([]byte(src))); got != want {
		t.Errorf("layout:\n%s\nwant (hclwrite):\n%s", got, want)
	}
}
