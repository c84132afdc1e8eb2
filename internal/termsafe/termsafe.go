// Package termsafe keeps text that sessions and their reports wrote from
// acting on the terminal it is shown on. A session's output, a report's
// reason or a gate's message may hold control characters: an escape
// sequence can move the cursor over what flow printed, set the
// window's title, write to the clipboard (OSC 52) or hide text, and the
// bidirectional overrides can make a line read otherwise than it is.
//
// Escape makes such text inert for a line of flow's own output: every
// control character but newline and tab, and every bidirectional
// override, becomes its \uXXXX escape, which reads the same in a
// terminal and inside a JSON string. Writer does the same for a stream
// shown on a terminal, letting through what terminals and tools use for
// plain output: colours and styles (SGR, ESC [ … m), carriage return
// and backspace.
//
// What can go wrong: a sequence split between two writes is held until
// it is whole (at most a few bytes); an unterminated one is let out,
// escaped, when it grows beyond the length of a colour sequence.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// unsafe reports whether r must not reach a terminal raw in a line of
// text: a C0 control but newline and tab, DEL, a C1 control, or a
// bidirectional embedding, override or isolate.
func unsafe(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// escaped is r as \uXXXX.
func escaped(r rune) string { return fmt.Sprintf(`\u%04x`, r) }

// Escape returns s with every character that could act on a terminal
// written as its \uXXXX escape; s itself when it has none.
func Escape(s string) string {
	if strings.IndexFunc(s, unsafe) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unsafe(r) {
			b.WriteString(escaped(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// maxSGR is the longest colour sequence Writer lets through.
const maxSGR = 32

// Writer writes to a terminal what is written to it, with the control
// characters that could act on the terminal escaped as Escape does,
// except SGR sequences (colours and styles), carriage return and
// backspace, which pass. It is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write implements io.Writer. It reports all of p written unless w
// fails.
func (t *Writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	buf := append(t.pending, p...)
	out := make([]byte, 0, len(buf))
	i := 0
	for i < len(buf) {
		c := buf[i]
		if c == 0x1b {
			n, ok, whole := sgr(buf[i:])
			if !whole {
				break // wait for the rest of the sequence
			}
			if ok {
				out = append(out, buf[i:i+n]...)
				i += n
				continue
			}
			out = append(out, escaped(0x1b)...)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			if c == '\r' || c == '\b' || !unsafe(rune(c)) {
				out = append(out, c)
			} else {
				out = append(out, escaped(rune(c))...)
			}
			i++
			continue
		}
		if !utf8.FullRune(buf[i:]) {
			break // the rest of the character comes with the next write
		}
		r, n := utf8.DecodeRune(buf[i:])
		if r != utf8.RuneError && unsafe(r) {
			out = append(out, escaped(r)...)
		} else {
			out = append(out, buf[i:i+n]...)
		}
		i += n
	}
	t.pending = append(t.pending[:0:0], buf[i:]...)
	if len(out) > 0 {
		if _, err := t.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what is held back, escaped.
func (t *Writer) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pending
	t.pending = nil
	if len(p) == 0 {
		return nil
	}
	_, err := io.WriteString(t.w, Escape(string(p)))
	return err
}

// sgr looks at b, which starts with ESC: whole is false while b may
// still become an SGR sequence (more bytes are needed); ok is true when
// b starts with one, n bytes long.
func sgr(b []byte) (n int, ok, whole bool) {
	if len(b) < 2 {
		return 0, false, false
	}
	if b[1] != '[' {
		return 0, false, true
	}
	for i := 2; i < len(b); i++ {
		switch c := b[i]; {
		case c == 'm':
			return i + 1, true, true
		case c >= '0' && c <= '9' || c == ';' || c == ':':
			if i >= maxSGR {
				return 0, false, true
			}
		default:
			return 0, false, true
		}
	}
	return 0, false, len(b) >= maxSGR
}
