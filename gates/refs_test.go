package gates

import (
	"slices"
	"testing"
)

// TestRefs: what an expression reads of the run comes from its syntax
// tree, not from a pattern over its text.
func TestRefs(t *testing.T) {
	scope := Scope{Steps: []string{"build", "review", "x-y"}, Vars: []string{"v"}}
	tests := []struct {
		src     string
		want    Refs
		literal bool // a template with no expression
	}{
		{src: `vars.v == "a"`, want: Refs{}},
		{src: `steps.build.status == "COMPLETED"`, want: Refs{RunWide: true}},
		{src: `steps.build.output contains "ok"`, want: Refs{RunWide: true, Outputs: []string{"build"}}},
		{src: `steps["x-y"]["output"] != "" && steps.review.output != ""`, want: Refs{RunWide: true, Outputs: []string{"review", "x-y"}}},
		{src: `run.iteration > 2`, want: Refs{RunWide: true}},
		{src: `output contains "PASS"`, want: Refs{}},
		{src: `"steps.build.output" != ""`, want: Refs{}},
		{src: `let s = steps.build; s.output != ""`, want: Refs{RunWide: true, AnyOutput: true}},
		{src: `steps[vars.v].output != ""`, want: Refs{RunWide: true, AnyOutput: true}},
	}
	for _, tt := range tests {
		p, err := Compile(tt.src, scope, Bool)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.src, err)
		}
		got := p.Refs()
		if got.RunWide != tt.want.RunWide || got.AnyOutput != tt.want.AnyOutput || !slices.Equal(got.Outputs, tt.want.Outputs) {
			t.Errorf("Refs(%q) = %+v; want %+v", tt.src, got, tt.want)
		}
	}
	tm, err := CompileTemplate(`{{ steps.build.output }} and {{ steps.review.output }} of {{ vars.v }}`, scope)
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.Refs(); !got.RunWide || !slices.Equal(got.Outputs, []string{"build", "review"}) {
		t.Errorf("template Refs = %+v", got)
	}
}
