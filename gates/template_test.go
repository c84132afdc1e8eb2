package gates

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRender(t *testing.T) {
	env := testEnv()
	env.Report["pi"] = 3.5
	env.Report["whole"] = 2.0
	env.Report["nil"] = nil
	tests := []struct{ src, want string }{
		{``, ``},
		{`plain text`, `plain text`},
		{`Write PLAN.md for {{ vars.feature }}.`, `Write PLAN.md for dark mode.`},
		{`{{vars.feature}}{{vars.feature}}`, `dark modedark mode`},
		{`{{ exit_code }} {{ run.iteration * 2 }}`, `3 4`},
		{`{{ report.pi }} {{ report.whole }} {{ 1 / 4 }}`, `3.5 2 0.25`},
		{`[{{ report.nil }}]`, `[]`},
		{`{{ signals.PASS }} {{ 1 > 2 }}`, `true false`},
		{`took {{ steps.tests.duration }}`, `took 1m30s`},
		{`{{ steps.tests.artifacts }}`, `["cover.out"]`},
		{`{{ report.issues }}`, `["a","b"]`},
		{`{{ steps.tests.metrics }}`, `{"coverage":"81"}`},
		{`{{ {"a": {"b": "<1>"}} }}`, `{"a":{"b":"<1>"}}`},
		{`{{ "}}" }}`, `}}`},
		{`{{ '}}' + "{{" }}`, `}}{{`},
		{"{{ `}}` }}", `}}`},
		{`{{ "a\"}}" }}`, `a"}}`},
		{`{{ filter([1, 2, 3], {# > 1}) }}`, `[2,3]`},
		{`a } b }} c`, `a } b }} c`},
		{`{{ run.started_at }}`, `2025-01-02T03:04:05Z`},
		{"line 1\n{{ vars.feature }}\n", "line 1\ndark mode\n"},
	}
	comp := NewCompiler(testScope)
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t1, err := CompileTemplate(tt.src, testScope)
			if err != nil {
				t.Fatalf("CompileTemplate: %v", err)
			}
			t2, err := comp.CompileTemplate(tt.src)
			if err != nil {
				t.Fatalf("Compiler.CompileTemplate: %v", err)
			}
			for _, tmpl := range []*Template{t1, t2} {
				got, err := tmpl.Render(env)
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				if got != tt.want {
					t.Errorf("Render(%q) = %q, want %q", tt.src, got, tt.want)
				}
				if tmpl.Source() != tt.src {
					t.Errorf("Source() = %q", tmpl.Source())
				}
			}
		})
	}
}

func TestTemplateStatic(t *testing.T) {
	for src, want := range map[string]bool{``: true, `no parts`: true, `a { b } c`: true, `{{ 1 }}`: false, `x {{ 1 }} y`: false} {
		tmpl, err := CompileTemplate(src, testScope)
		if err != nil {
			t.Fatal(err)
		}
		text, ok := tmpl.Static()
		if ok != want || (ok && text != src) {
			t.Errorf("Static(%q) = %q, %v", src, text, ok)
		}
	}
}

func TestTemplateErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      Error
	}{
		{"unclosed", `Ship {{ vars.feature ?`, Error{1, 6, 5, `unclosed {{: no matching }}`, ""}},
		{"unclosed string", `Ship {{ "}} `, Error{1, 6, 5, `unclosed {{: no matching }}`, ""}},
		{"empty", `a {{  }} b`, Error{1, 3, 2, `empty {{ }}`, ""}},
		{"unknown var", `Ship {{ vars.featur }}?`, Error{1, 14, 13, `unknown var "featur" (did you mean "feature"?)`, "feature"}},
		{"second part", `{{ vars.feature }} and {{ steps.testz.output }}`, Error{1, 33, 32, `unknown step "testz" (did you mean "tests"?)`, "tests"}},
		{"second line", "Review:\n  {{ steps.tests.outptu }}", Error{2, 18, 25, `unknown field "outptu" of step "tests" (did you mean "output"?)`, "output"}},
		{"runes", "héllo {{ 1 + }}", Error{1, 13, 13, `unexpected token EOF`, ""}},
		{"syntax", `x {{ 1 + }}`, Error{1, 9, 8, `unexpected token EOF`, ""}},
	}
	comp := NewCompiler(testScope)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err1 := CompileTemplate(tt.src, testScope)
			_, err2 := comp.CompileTemplate(tt.src)
			for _, err := range []error{err1, err2} {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("error = %v, want *Error", err)
				}
				checkPosition(t, tt.src, e)
				if diff := cmp.Diff(tt.want, *e); diff != "" {
					t.Errorf("CompileTemplate(%q) error mismatch (-want +got):\n%s", tt.src, diff)
				}
			}
		})
	}
}

func TestRenderError(t *testing.T) {
	src := "x\n{{ read_file(\"nope\") }}"
	tmpl, err := CompileTemplate(src, testScope)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(testEnv())
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Render error = %v, want *Error", err)
	}
	checkPosition(t, src, e)
	if e.Line != 2 {
		t.Errorf("Render error at line %d, want 2", e.Line)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, ""}, {"s", "s"}, {true, "true"}, {42, "42"}, {int64(-7), "-7"}, {uint8(9), "9"},
		{2.0, "2"}, {0.1, "0.1"}, {1e21, "1e+21"}, {1e-7, "1e-07"}, {float32(1.5), "1.5"},
		{90 * time.Second, "1m30s"}, {[]string{"a"}, `["a"]`}, {map[string]int{"b": 1, "a": 2}, `{"a":2,"b":1}`},
	}
	for _, tt := range tests {
		if got := format(tt.v); got != tt.want {
			t.Errorf("format(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestRenderLimit(t *testing.T) {
	hostile := strings.Repeat(`{{ repeat("x", 999999) }}`, 300)
	tests := []struct {
		name, src string
		limit     int
		want      string
		size      int // the Size of the *TooLargeError; 0 for none
	}{
		{"static within", "abc", 3, "abc", 0},
		{"static over", "abcd", 3, "", 4},
		{"parts within", `a{{ "bc" }}d`, 4, "abcd", 0},
		{"part over", `a{{ "bcd" }}`, 3, "", 4},
		{"text after part over", `a{{ "b" }}cd`, 3, "", 4},
		{"value over", `{{ map(1..1000, "xx") }}`, 100, "", 101},
		{"value within", `{{ [1, 2] }}`, 5, "[1,2]", 0},
		{"no limit means the default", `{{ repeat("x", 1000) }}`, 0, strings.Repeat("x", 1000), 0},
		{"hostile", hostile, 100 << 10, "", 999999},
	}
	env := testEnv()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := CompileTemplate(tt.src, testScope)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			n := allocated(func() { got, err = tmpl.RenderLimit(env, tt.limit) })
			if tt.size == 0 {
				if err != nil || got != tt.want {
					t.Errorf("RenderLimit(%q, %d) = %.40q, %v; want %.40q", tt.src, tt.limit, got, err, tt.want)
				}
				return
			}
			var e *TooLargeError
			if !errors.As(err, &e) {
				t.Fatalf("RenderLimit(%.40q, %d) = %.40q, %v; want *TooLargeError", tt.src, tt.limit, got, err)
			}
			if e.Limit != tt.limit || e.Size != tt.size {
				t.Errorf("RenderLimit(%.40q, %d) error = %+v, want Limit %d, Size %d", tt.src, tt.limit, *e, tt.limit, tt.size)
			}
			// At most the first oversized part is built.
			if n > 8<<20 {
				t.Errorf("RenderLimit(%.40q, %d) allocated %d MiB", tt.src, tt.limit, n>>20)
			}
		})
	}
}

func TestTooLargeErrorMessage(t *testing.T) {
	for _, tt := range []struct {
		limit int
		want  string
	}{
		{100 << 10, "rendered text is larger than 100 KiB"},
		{1 << 20, "rendered text is larger than 1 MiB"},
		{1000, "rendered text is larger than 1000 bytes"},
	} {
		if got := (&TooLargeError{Limit: tt.limit, Size: tt.limit + 1}).Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestRenderDefaultLimit(t *testing.T) {
	tmpl, err := CompileTemplate(strings.Repeat(`{{ repeat(repeat("x", 1000), 8000) }}`, 3), testScope)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(testEnv())
	var e *TooLargeError
	if !errors.As(err, &e) || e.Limit != DefaultRenderLimit {
		t.Errorf("Render error = %v, want *TooLargeError with the default limit", err)
	}
}
