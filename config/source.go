package config

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// source is the text of a file a workflow was read from, indexed by line
// so that byte offsets convert to positions.
type source struct {
	name  string
	data  []byte
	lines []int // byte offset of the start of each line
}

func newSource(name string, data []byte) *source {
	s := &source{name: name, data: data, lines: []int{0}}
	for i, b := range data {
		if b == '\n' {
			s.lines = append(s.lines, i+1)
		}
	}
	return s
}

// pos converts a byte offset to a position; columns count runes.
func (s *source) pos(off int) Pos {
	off = max(0, min(off, len(s.data)))
	i := sort.Search(len(s.lines), func(i int) bool { return s.lines[i] > off }) - 1
	return Pos{File: s.name, Line: i + 1, Col: utf8.RuneCount(s.data[s.lines[i]:off]) + 1}
}

// offset converts a 1-based line and rune column to a byte offset.
func (s *source) offset(line, col int) int {
	if line < 1 {
		return 0
	}
	if line > len(s.lines) {
		return len(s.data)
	}
	off := s.lines[line-1]
	for c := 1; c < col && off < len(s.data) && s.data[off] != '\n'; c++ {
		_, n := utf8.DecodeRune(s.data[off:])
		off += n
	}
	return off
}

// style is how a string value is written in its file, which decides how
// offsets inside its decoded value map back to the file.
type style int

const (
	styleRaw        style = iota // the bytes are the value (a prompt file)
	stylePlain                   // YAML plain scalar
	styleSingle                  // YAML 'single-quoted'
	styleDouble                  // YAML "double-quoted"
	styleBlock                   // YAML | or > block scalar
	styleHCLQuoted               // HCL "quoted string"
	styleHCLHeredoc              // HCL <<EOT heredoc
	styleOpaque                  // not text written in the file (a number)
)

// span locates a value in its file.
type span struct {
	src   *source
	off   int // byte offset of the value's first token
	style style
}

// pos returns the position of the value's first token.
func (sp span) pos() Pos {
	if sp.src == nil {
		return Pos{}
	}
	return sp.src.pos(sp.off)
}

// at returns the position in the file of the character at byte offset k
// of the decoded value val. It replays the decoding: characters of the
// value are matched, in order, to the file's characters, and whatever
// the decoding dropped (quotes, escapes, indentation, folded line
// breaks) is skipped.
func (sp span) at(val string, k int) Pos {
	if sp.src == nil {
		return Pos{}
	}
	data := sp.src.data
	j := sp.off
	switch sp.style {
	case styleRaw:
		return sp.src.pos(sp.off + k)
	case styleOpaque:
		return sp.pos()
	case styleSingle, styleDouble, styleHCLQuoted:
		j++ // the opening quote
	case styleBlock, styleHCLHeredoc:
		if nl := strings.IndexByte(string(data[j:min(len(data), j+200)]), '\n'); nl >= 0 {
			j += nl + 1
		} else {
			j = len(data)
		}
	}
	k = max(0, min(k, len(val)))
	for i, r := range val {
		start, next := sp.match(r, j)
		if i >= k {
			return sp.src.pos(start)
		}
		j = next
	}
	return sp.src.pos(j)
}

// match finds, from offset j, the file text the decoded rune r came from;
// it returns where that text starts and where it ends.
func (sp span) match(r rune, j int) (start, next int) {
	data := sp.src.data
	for j < len(data) {
		unit, n := sp.unit(j)
		if unit == r {
			return j, j + n
		}
		j += n
	}
	return len(data), len(data)
}

// unit decodes one unit of the file's text at offset j: a character, or
// an escape sequence of the value's style. It returns the rune the unit
// stands for (-1 for nothing) and its length in bytes.
func (sp span) unit(j int) (rune, int) {
	data := sp.src.data
	r, n := utf8.DecodeRune(data[j:])
	switch sp.style {
	case styleSingle:
		if r == '\'' && j+1 < len(data) && data[j+1] == '\'' {
			return '\'', 2
		}
	case styleDouble, styleHCLQuoted:
		if r != '\\' || j+1 >= len(data) {
			return r, n
		}
		return escape(data[j:], sp.style == styleHCLQuoted)
	}
	return r, n
}

// escape decodes the backslash escape at the start of b.
func escape(b []byte, hcl bool) (rune, int) {
	c := b[1]
	hex := func(digits int) (rune, int) {
		if len(b) < 2+digits {
			return -1, 2
		}
		var v rune
		for _, h := range b[2 : 2+digits] {
			switch {
			case h >= '0' && h <= '9':
				v = v*16 + rune(h-'0')
			case h >= 'a' && h <= 'f':
				v = v*16 + rune(h-'a'+10)
			case h >= 'A' && h <= 'F':
				v = v*16 + rune(h-'A'+10)
			default:
				return -1, 2
			}
		}
		return v, 2 + digits
	}
	switch c {
	case 'n':
		return '\n', 2
	case 't':
		return '\t', 2
	case 'r':
		return '\r', 2
	case '"':
		return '"', 2
	case '\\':
		return '\\', 2
	case 'u':
		return hex(4)
	case 'U':
		return hex(8)
	}
	if hcl {
		return rune(c), 2
	}
	switch c {
	case '0':
		return 0, 2
	case 'a':
		return '\a', 2
	case 'b':
		return '\b', 2
	case 'v':
		return '\v', 2
	case 'f':
		return '\f', 2
	case 'e':
		return 0x1b, 2
	case 'N':
		return 0x85, 2
	case '_':
		return 0xa0, 2
	case 'L':
		return 0x2028, 2
	case 'P':
		return 0x2029, 2
	case 'x':
		return hex(2)
	case '\n', '\r':
		return -1, 2 // an escaped line break continues the line
	}
	return rune(c), 2
}
