package gates

import (
	"errors"
	"testing"
)

func TestRenderKnown(t *testing.T) {
	tests := []struct{ src, want string }{
		{`plain`, `plain`},
		{`for {{ vars.feature }} in {{ env.HOME }}`, `for dark mode in /home/u`},
		{`{{ read_file("PLAN.md") }}`, "# Plan\n"},
		{`fix: {{steps.tests.output}}`, `fix: <steps.tests.output>`},
		{`{{ feedback.reason }} / {{ check.output }} / {{ run.id }}`, `<feedback.reason> / <check.output> / <run.id>`},
		{`{{ exit_code }}{{ output }}{{ signals.PASS }}{{ verdict }}`, `<exit_code><output><signals.PASS><verdict>`},
		{`{{ metrics }} {{ report.x }} {{ attempt }} {{ iteration }} {{ error }}`, `<metrics> <report.x> <attempt> <iteration> <error>`},
		{`{{ vars.feature + steps.tests.verdict }}`, `<vars.feature + steps.tests.verdict>`},
		{`{{ map([1], {# + attempt}) }}`, `<map([1], {# + attempt})>`},
		{`{{ vars.feature }}: {{ steps["tests"].output }}.`, `dark mode: <steps["tests"].output>.`},
		{`{{ let n = 2; n * 3 }}`, `6`},
	}
	comp := NewCompiler(testScope)
	for _, tt := range tests {
		tmpl, err := comp.CompileTemplate(tt.src)
		if err != nil {
			t.Fatalf("compile %q: %v", tt.src, err)
		}
		got, err := tmpl.RenderKnown(testEnv(), 0)
		if err != nil {
			t.Errorf("RenderKnown(%q): %v", tt.src, err)
			continue
		}
		if got != tt.want {
			t.Errorf("RenderKnown(%q) = %q, want %q", tt.src, got, tt.want)
		}
	}
}

// A part that reads only what is known fails as Render fails, positioned
// in the whole template, even after a part that is not evaluated.
func TestRenderKnownError(t *testing.T) {
	src := "{{ steps.tests.output }}\n{{ read_file(\"nope\") }}"
	tmpl, err := CompileTemplate(src, testScope)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.RenderKnown(testEnv(), 0)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("RenderKnown error = %v, want *Error", err)
	}
	checkPosition(t, src, e)
	if e.Line != 2 || e.Col != 4 {
		t.Errorf("RenderKnown error at %d:%d, want 2:4", e.Line, e.Col)
	}
}

func TestRenderKnownLimit(t *testing.T) {
	tmpl, err := CompileTemplate(`{{ steps.tests.output }}`, testScope)
	if err != nil {
		t.Fatal(err)
	}
	var tl *TooLargeError
	if _, err := tmpl.RenderKnown(testEnv(), 5); !errors.As(err, &tl) {
		t.Errorf("RenderKnown over the limit = %v, want *TooLargeError", err)
	}
}
