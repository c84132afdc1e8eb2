package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/flow-run/flow/internal/suggest"
)

// Severity is how serious a diagnostic is.
type Severity string

// The severities. An error stops the workflow from loading; a warning,
// kept in Workflow.Warnings, says what was read and ignored.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Diagnostic is one problem found in a workflow, at a position.
type Diagnostic struct {
	Pos      Pos
	Severity Severity
	// Message says what is wrong, including any "did you mean" hint.
	Message string
	// Suggestion is the name the hint suggests, or "".
	Suggestion string
}

// String formats the diagnostic as file:line:col: message.
func (d Diagnostic) String() string {
	if d.Severity == SeverityWarning {
		return d.Pos.String() + ": warning: " + d.Message
	}
	return d.Pos.String() + ": " + d.Message
}

// Diagnostics are all the problems found in a workflow, sorted by
// position. It is the error Load returns for an invalid workflow.
type Diagnostics []Diagnostic

// Error lists every diagnostic, one a line.
func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// sort orders the diagnostics by file, line and column.
func (ds Diagnostics) sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Pos, ds[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// Render writes each diagnostic as file:line:col: message, followed by
// the source line it points into and a ^ under its column. sources
// returns a file's bytes, or nil when they cannot be shown.
func (ds Diagnostics) Render(w io.Writer, sources func(file string) []byte) error {
	var buf bytes.Buffer
	for _, d := range ds {
		buf.WriteString(d.String())
		buf.WriteByte('\n')
		var src []byte
		if sources != nil {
			src = sources(d.Pos.File)
		}
		if line, ok := sourceLine(src, d.Pos.Line); ok {
			buf.WriteString("    ")
			buf.WriteString(line)
			buf.WriteString("\n    ")
			buf.WriteString(marker(line, d.Pos.Col))
			buf.WriteByte('\n')
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// sourceLine returns line n (1-based) of src without its line break.
func sourceLine(src []byte, n int) (string, bool) {
	if src == nil || n < 1 {
		return "", false
	}
	for i := 1; i < n; i++ {
		nl := bytes.IndexByte(src, '\n')
		if nl < 0 {
			return "", false
		}
		src = src[nl+1:]
	}
	if nl := bytes.IndexByte(src, '\n'); nl >= 0 {
		src = src[:nl]
	}
	return strings.TrimRight(string(src), "\r"), true
}

// marker returns the indentation and ^ that point at column col of line,
// keeping the line's tabs so that the marker lines up in any terminal.
func marker(line string, col int) string {
	var b strings.Builder
	c := 1
	for _, r := range line {
		if c >= col {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		c++
	}
	b.WriteByte('^')
	return b.String()
}

// jsonDiagnostic is the machine-readable form of a diagnostic.
type jsonDiagnostic struct {
	File       string   `json:"file"`
	Line       int      `json:"line"`
	Col        int      `json:"col"`
	Severity   Severity `json:"severity"`
	Message    string   `json:"message"`
	Suggestion string   `json:"suggestion,omitempty"`
}

// JSON returns the diagnostics as a JSON array of objects with the keys
// file, line, col, severity, message and suggestion.
func (ds Diagnostics) JSON() ([]byte, error) {
	out := make([]jsonDiagnostic, 0, len(ds))
	for _, d := range ds {
		out = append(out, jsonDiagnostic{d.Pos.File, d.Pos.Line, d.Pos.Col, d.Severity, d.Message, d.Suggestion})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode diagnostics: %w", err)
	}
	return b, nil
}

// diags collects diagnostics while a workflow is loaded.
type diags struct {
	list Diagnostics
	// warnings are kept apart: they do not stop a workflow from loading.
	warnings Diagnostics
}

func (d *diags) warnf(pos Pos, format string, args ...any) {
	d.warnings = append(d.warnings, Diagnostic{Pos: pos, Severity: SeverityWarning, Message: fmt.Sprintf(format, args...)})
}

func (d *diags) errorf(pos Pos, format string, args ...any) {
	d.list = append(d.list, Diagnostic{Pos: pos, Severity: SeverityError, Message: fmt.Sprintf(format, args...)})
}

// unknown reports a name that is not one of candidates, with a did-you-mean
// hint when one is close.
func (d *diags) unknown(pos Pos, what, name string, candidates []string) {
	msg := fmt.Sprintf("unknown %s %q", what, name)
	s, ok := suggest.Closest(name, candidates)
	if ok {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	d.list = append(d.list, Diagnostic{Pos: pos, Severity: SeverityError, Message: msg, Suggestion: s})
}

// errorHint adds an error whose message already holds its did-you-mean
// hint, which suggests suggestion ("" for none).
func (d *diags) errorHint(pos Pos, msg, suggestion string) {
	d.list = append(d.list, Diagnostic{Pos: pos, Severity: SeverityError, Message: msg, Suggestion: suggestion})
}
