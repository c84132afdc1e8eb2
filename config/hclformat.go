package config

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/apparentlymart/go-textseg/v15/textseg"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// The HCL that Emit writes is laid out as hclwrite.Format lays it out —
// two spaces per level of brackets, and the equals signs of runs of
// one-line attributes aligned — by the few functions here, written for
// the text the emitter makes (attributes, blocks, whole-line comments,
// quoted strings, heredocs and literals) rather than for any HCL:
// hclwrite would link a package whose initialisation costs every flow
// command about 0.4 ms of start-up. TestHCLFormat checks the result
// against hclwrite.

// hclQuoted writes s as a quoted HCL string, escaped as hclwrite
// escapes it: the template introducers ${ and %{ doubled, and what is
// not printable as \u or \U.
func hclQuoted(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i, r := range s {
		switch r {
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '$', '%':
			b.WriteRune(r)
			if i+1 < len(s) && s[i+1] == '{' {
				b.WriteRune(r)
			}
		default:
			switch {
			case unicode.IsPrint(r):
				b.WriteRune(r)
			case r < 1<<16:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// hclLiteral writes a JSON-compatible value as an HCL literal, as
// hclwrite.TokensForValue writes it: lists on one line, objects one
// attribute a line in the order of their keys (indented by
// formatHCL).
func hclLiteral(v any) (string, error) {
	var b strings.Builder
	if err := writeLiteral(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeLiteral(b *strings.Builder, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		b.WriteString(hclQuoted(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("cannot write the number %v", x)
		}
		b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
	case []any:
		b.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeLiteral(b, item); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		if len(x) > 0 {
			b.WriteByte('\n')
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if hclsyntax.ValidIdentifier(k) {
				b.WriteString(k)
			} else {
				b.WriteString(hclQuoted(k))
			}
			b.WriteString(" = ")
			if err := writeLiteral(b, x[k]); err != nil {
				return err
			}
			b.WriteByte('\n')
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("cannot write a %T", v)
	}
	return nil
}

// hclLine is a line of HCL as formatHCL sees it: with a heredoc, the
// line that opens it and every line through its end.
type hclLine struct {
	text string // without its indentation, heredoc lines included
	// eq is the index in text of the equals sign of an attribute whose
	// value ends on the line, or -1.
	eq int
	// net is the line's change of bracket depth.
	net int
}

// formatHCL indents src by its brackets and aligns the equals signs of
// each run of one-line attributes, as hclwrite.Format does.
func formatHCL(src []byte) []byte {
	raw := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	var lines []hclLine
	for i := 0; i < len(raw); i++ {
		l := hclLine{text: strings.TrimLeft(raw[i], " \t"), eq: -1}
		delim := scanHCLLine(&l)
		if delim != "" {
			// The heredoc's lines are its string: kept as they are.
			for i+1 < len(raw) {
				i++
				l.text += "\n" + raw[i]
				if strings.TrimSpace(raw[i]) == delim {
					break
				}
			}
		}
		lines = append(lines, l)
	}
	// Indentation: two spaces for each line still open above.
	indent := make([]int, len(lines))
	var open []int
	for i, l := range lines {
		switch {
		case l.text == "":
		case l.net > 0:
			indent[i] = 2 * len(open)
			open = append(open, l.net)
		case l.net < 0:
			for closed := -l.net; closed > 0 && len(open) > 0; {
				top := &open[len(open)-1]
				if closed < *top {
					*top -= closed
					break
				}
				closed -= *top
				open = open[:len(open)-1]
			}
			indent[i] = 2 * len(open)
		default:
			indent[i] = 2 * len(open)
		}
	}
	// Alignment: in each run of attribute lines, the equals signs one
	// space after the longest name.
	pad := make([]int, len(lines)) // the spaces before each =
	for start := 0; start < len(lines); {
		if lines[start].eq < 0 {
			start++
			continue
		}
		end, most := start, 0
		for ; end < len(lines) && lines[end].eq >= 0; end++ {
			most = max(most, indent[end]+columns(strings.TrimRight(lines[end].text[:lines[end].eq], " ")))
		}
		for i := start; i < end; i++ {
			pad[i] = most - indent[i] - columns(strings.TrimRight(lines[i].text[:lines[i].eq], " ")) + 1
		}
		start = end
	}
	var out bytes.Buffer
	out.Grow(len(src) + len(src)/8)
	for i, l := range lines {
		if l.text == "" {
			out.WriteByte('\n')
			continue
		}
		out.WriteString(strings.Repeat(" ", indent[i]))
		if l.eq < 0 {
			out.WriteString(l.text)
		} else {
			out.WriteString(strings.TrimRight(l.text[:l.eq], " "))
			out.WriteString(strings.Repeat(" ", pad[i]))
			out.WriteString("= ")
			out.WriteString(strings.TrimLeft(l.text[l.eq+1:], " "))
		}
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// columns is the width of s as hclwrite counts it: in grapheme
// clusters, so that names in any script line up on a terminal.
func columns(s string) int {
	n, err := textseg.TokenCount([]byte(s), textseg.ScanGraphemeClusters)
	if err != nil {
		return len(s)
	}
	return n
}

// scanHCLLine reads a line of the emitter's HCL: it sets the line's
// change of bracket depth and, for an attribute whose value ends on the
// line (a heredoc's ends with it), where its equals sign is. It returns
// the delimiter of a heredoc the line opens, or "".
func scanHCLLine(l *hclLine) (heredoc string) {
	s := l.text
	eq, depthAtEq := -1, 0
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case c == '#':
			i = len(s)
		case c == '{' || c == '[' || c == '(':
			depth++
		case c == '}' || c == ']' || c == ')':
			depth--
		case c == '=' && eq < 0 && i > 0:
			eq, depthAtEq = i, depth
		case c == '<' && strings.HasPrefix(s[i:], "<<"):
			d := strings.TrimPrefix(s[i+2:], "-")
			if hclsyntax.ValidIdentifier(d) {
				heredoc = d
			}
			i = len(s)
		}
	}
	l.net = depth
	if eq >= 0 && depth-depthAtEq == 0 {
		l.eq = eq
	}
	return heredoc
}
