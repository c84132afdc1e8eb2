package gates

import (
	"errors"
	"unicode/utf8"

	"github.com/expr-lang/expr/file"
)

// newError returns an *Error at byte offset off of src. The offset is
// clamped to [0, len(src)] and moved back to the start of a rune, so
// every error has a valid position.
func newError(src string, off int, msg string) *Error {
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
	return newError(whole, base+e.Offset, e.Msg)
}
