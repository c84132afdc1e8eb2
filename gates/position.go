package gates

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/expr-lang/expr/file"
)

// newError returns an *Error at byte offset off of src. The offset is
// clamped to [0, len(src)] and moved back to the start of a rune, so
// every error has a valid position.
func newError(src string, off int, msg string) *Error {
	msg = excerpt(msg)
	off = max(0, min(off, len(src)))
	for off > 0 && off < len(src) && !utf8.RuneStart(src[off]) {
		off--
	}
	line, col := lineCol(src, off)
	return &Error{Line: line, Col: col, Offset: off, Msg: msg}
}

// lineCol returns the 1-based line and the 1-based column, counted in
// runes, of byte offset off in src.
func lineCol(src string, off int) (line, col int) {
	line, lineStart := 1, 0
	for i := 0; i < off; i++ {
		if src[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return line, utf8.RuneCountInString(src[lineStart:off]) + 1
}

// runeOffset returns the byte offset of the rune with index r in src,
// or len(src) when src has fewer runes. expr locates tokens and nodes
// by rune index (file.Location.From); an invalid UTF-8 byte counts as
// one rune there as here.
func runeOffset(src string, r int) int {
	if r <= 0 {
		return 0
	}
	n := 0
	for i := range src {
		if n == r {
			return i
		}
		n++
	}
	return len(src)
}

// MaxMessage is the longest message, in bytes, of an *Error. expr's
// messages can quote a whole value (invalid operation: int("...")),
// and so can the file functions' (a path), so a longer one is cut to
// an excerpt: its head and its tail, around a note of what was cut.
const MaxMessage = 4 << 10

// excerpt returns msg, or, when it is longer than MaxMessage, its
// head and tail with a note of how many bytes were cut between them,
// at most MaxMessage bytes in all. Every message of an *Error goes
// through it.
func excerpt(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	const room = 48 // for the note
	head := MaxMessage * 3 / 4
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	tail := len(msg) - (MaxMessage - head - room)
	for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
		tail++
	}
	return fmt.Sprintf("%s … [%d bytes cut] … %s", msg[:head], tail-head, msg[tail:])
}

// fromExpr converts an error returned by expr for src into an *Error,
// keeping expr's message but not its snippet.
func fromExpr(src string, err error) *Error {
	var fe *file.Error
	if errors.As(err, &fe) {
		return newError(src, runeOffset(src, fe.From), fe.Message)
	}
	return newError(src, 0, err.Error())
}

// shift returns e moved into a larger source whole, in which e's source
// starts at byte offset base.
func (e *Error) shift(whole string, base int) *Error {
	moved := newError(whole, base+e.Offset, e.Msg)
	moved.Suggestion = e.Suggestion
	return moved
}
