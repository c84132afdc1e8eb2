package gates

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/ast"

	"github.com/flow-run/flow/internal/confine"
)

// Template is a compiled template: text with {{ expr }} parts. It is
// immutable and may be rendered any number of times, concurrently.
type Template struct {
	src   string
	parts []templatePart
}

// templatePart is literal text, or an expression when prog is set;
// off is the byte offset of the expression's source in the template.
type templatePart struct {
	text string
	prog *Program
	off  int
}

// CompileTemplate compiles the {{ expr }} parts of src, each as an
// expression of kind Any. A part ends at the first }} outside string
// literals and braces, so {{ "}}" }} and {{ {"a": 1} }} work; there is
// no escape for a literal {{ other than {{ "{{" }}. Errors are *Error
// positioned in src as a whole. To compile many templates against one
// scope, a Compiler is much cheaper.
func CompileTemplate(src string, scope Scope) (*Template, error) {
	if !strings.Contains(src, "{{") {
		return compileTemplate(src, nil)
	}
	return compileTemplate(src, newCompiler(scope))
}

// compileTemplate compiles template src with c, which may be nil when
// src has no {{.
func compileTemplate(src string, c *Compiler) (*Template, error) {
	t := &Template{src: src}
	rest, off := src, 0
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.addText(rest)
			return t, nil
		}
		t.addText(rest[:i])
		open := off + i
		body := open + 2
		n, ok := scanPart(src[body:])
		if !ok {
			return nil, newError(src, open, "unclosed {{: no matching }}")
		}
		inner := src[body : body+n]
		if strings.TrimSpace(inner) == "" {
			return nil, newError(src, open, "empty {{ }}")
		}
		prog, err := c.Compile(inner, Any)
		if err != nil {
			return nil, err.(*Error).shift(src, body)
		}
		t.parts = append(t.parts, templatePart{prog: prog, off: body})
		off = body + n + 2
		rest = src[off:]
	}
}

// addText appends literal text, merging it with a preceding text part.
func (t *Template) addText(s string) {
	if s == "" {
		return
	}
	if n := len(t.parts); n > 0 && t.parts[n-1].prog == nil {
		t.parts[n-1].text += s
		return
	}
	t.parts = append(t.parts, templatePart{text: s})
}

// scanPart returns the length of the expression at the start of s,
// which ends at the first }} outside string literals and braces, and
// false when there is no such }}.
func scanPart(s string) (int, bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'', '`':
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && c != '`' {
					j++
				}
			}
			if j >= len(s) {
				return 0, false
			}
			i = j
		case '{':
			depth++
		case '}':
			if depth == 0 && i+1 < len(s) && s[i+1] == '}' {
				return i, true
			}
			if depth > 0 {
				depth--
			}
		}
	}
	return 0, false
}

// Refs returns what the template's expressions read of the run.
func (t *Template) Refs() Refs {
	var r Refs
	for _, p := range t.parts {
		if p.prog != nil {
			r.union(p.prog.Refs())
		}
	}
	return r
}

// Source returns the template as written.
func (t *Template) Source() string { return t.src }

// Static returns the text of a template without {{ }} parts, and false
// when it has parts.
func (t *Template) Static() (string, bool) {
	switch {
	case len(t.parts) == 0:
		return "", true
	case len(t.parts) == 1 && t.parts[0].prog == nil:
		return t.parts[0].text, true
	}
	return "", false
}

// DefaultRenderLimit is the limit, in bytes, on the text Render
// returns. It is generous: callers that know a tighter limit, such as
// the defaults of 1 MiB for a prompt and 100 KiB for a command, pass it to
// RenderLimit.
const DefaultRenderLimit = 16 << 20

// TooLargeError says a rendered template would be larger than the
// limit it was rendered with. Rendering stops as soon as that is
// known, so Size is a lower bound: the text is at least Size bytes.
type TooLargeError struct {
	Limit int
	Size  int
}

func (e *TooLargeError) Error() string {
	return "rendered text is larger than " + confine.Size(int64(e.Limit))
}

// Render is RenderLimit with DefaultRenderLimit.
func (t *Template) Render(env *Env) (string, error) {
	return t.RenderLimit(env, DefaultRenderLimit)
}

// RenderLimit evaluates the parts against env and returns the text with
// each part replaced by its value: strings as they are, nil as "",
// numbers and booleans as Go writes them (integers without ".0"),
// durations as "1m30s", times in RFC 3339, and other values, such as
// lists and maps, as JSON. Errors of evaluation are *Error positioned
// in the template. A text that would be longer than limit bytes is a
// *TooLargeError; rendering stops at the first part that would take
// the text over the limit, without building the rest, nor the JSON of
// a value whose strings alone exceed it. A limit of 0 or less means
// DefaultRenderLimit.
func (t *Template) RenderLimit(env *Env, limit int) (string, error) {
	if limit <= 0 {
		limit = DefaultRenderLimit
	}
	if s, ok := t.Static(); ok {
		if len(s) > limit {
			return "", &TooLargeError{Limit: limit, Size: len(s)}
		}
		return s, nil
	}
	var b strings.Builder
	steps := 0 // one budget of work for all the parts
	for _, p := range t.parts {
		text := p.text
		if p.prog != nil {
			v, err := p.prog.eval(env, &steps)
			if err != nil {
				return "", err.(*Error).shift(t.src, p.off)
			}
			if n := minTextSize(v, limit-b.Len()+1); b.Len()+n > limit {
				return "", &TooLargeError{Limit: limit, Size: b.Len() + n}
			}
			text = format(v)
		}
		if b.Len()+len(text) > limit {
			return "", &TooLargeError{Limit: limit, Size: b.Len() + len(text)}
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// format writes a value for a template.
func format(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case time.Duration:
		return v.String()
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case []byte:
		return string(v)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return formatFloat(rv.Float())
	case reflect.String:
		return rv.String()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// formatFloat writes f without a fraction when it is whole, and
// without an exponent unless it is very large or very small.
func formatFloat(f float64) string {
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// RenderKnown renders the template as RenderLimit does, except that a
// part reading a value known only while a run runs — steps, run, the
// step's own exit_code, output, signals, verdict, metrics, report,
// attempt, iteration and error, feedback or check — is not evaluated:
// it is written as its source, trimmed, between < and > (so
// "{{ steps.plan.output }}" shows as "<steps.plan.output>"). The other
// parts, which read only vars, env, the file functions and now(), are
// evaluated against env, with RenderLimit's errors. It is what a dry
// run shows of a command or a prompt before the run starts.
func (t *Template) RenderKnown(env *Env, limit int) (string, error) {
	if limit <= 0 {
		limit = DefaultRenderLimit
	}
	known := &Template{src: t.src}
	for _, p := range t.parts {
		if p.prog != nil && readsRunTime(p.prog) {
			known.addText("<" + strings.TrimSpace(p.prog.src) + ">")
			continue
		}
		known.parts = append(known.parts, p)
	}
	return known.RenderLimit(env, limit)
}

// readsRunTime reports whether a program reads a name of the
// environment whose value is known only while a run runs.
func readsRunTime(p *Program) bool {
	return ast.Find(p.prog.Node(), func(n ast.Node) bool {
		id, ok := n.(*ast.IdentifierNode)
		if !ok {
			return false
		}
		switch id.Value {
		case "steps", "run", "exit_code", "output", "signals", "verdict", "metrics", "report",
			"attempt", "iteration", "error", "feedback", "check", itemName, indexName:
			return true
		}
		return false
	}) != nil
}
