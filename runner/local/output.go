package local

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/flow-run/flow/runner/record"
	"github.com/spf13/afero"
)

// outputTail is the size of a session's output kept for expressions.
const outputTail = 64 << 10

// tailBuffer keeps the last max bytes written to it, in a ring: a
// write costs in proportion to its own length, however small the
// writes.
type tailBuffer struct {
	max   int
	ring  []byte // allocated at the first write
	start int    // index of the oldest byte in ring
	held  int    // bytes held in ring
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 || t.max <= 0 {
		return n, nil
	}
	if t.ring == nil {
		t.ring = make([]byte, t.max)
	}
	if len(p) >= t.max {
		copy(t.ring, p[len(p)-t.max:])
		t.start, t.held = 0, t.max
		return n, nil
	}
	end := (t.start + t.held) % t.max
	k := copy(t.ring[end:], p)
	copy(t.ring, p[k:])
	t.held += len(p)
	if t.held > t.max {
		t.start = (t.start + t.held - t.max) % t.max
		t.held = t.max
	}
	return n, nil
}

func (t *tailBuffer) String() string {
	end := t.start + t.held
	if end <= len(t.ring) {
		return string(t.ring[t.start:end])
	}
	return string(t.ring[t.start:]) + string(t.ring[:end-len(t.ring)])
}

// maxLiveLine is the longest line prefixWriter holds back; a longer
// line is shown in pieces of this length.
const maxLiveLine = 64 << 10

// prefixWriter writes a session's output to w behind a prefix on every
// line, for the live output of sessions that share one terminal or CI
// log. Writes to w go out under mu, shared by all of them, and each
// holds whole lines only, so lines of different sessions never mix.
//
// A line is held until it ends, and ends at a newline or at a carriage
// return that no newline follows: a progress bar that redraws its line
// with "\r" is shown as it goes, its prefix written again after each
// "\r" ("\r\n" is one line end). A line longer than maxLiveLine is not
// held whole: it is shown in pieces of at most maxLiveLine bytes, each
// on a line of its own behind the prefix, cut between UTF-8 characters.
// So a 200 MB line without a newline costs the time of copying it and
// holds 64 KiB, and the session log keeps it as it was. Flush ends an
// output without a final newline.
//
// A failure to write to w ends the live view of the session, and is not
// returned: the session's log, tail and signal scanner are written in
// the same writes, and the output copier stops all of them at an error
// (stdout redirected to a full disk would cost the log all but its
// start).
//
// A prefixWriter is not safe for concurrent use: a session's output
// reaches it through one lockedWriter.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix []byte
	// line is the unfinished last line, without its prefix; at most
	// maxLiveLine bytes. It ends in '\r' when the byte after the
	// carriage return has not come yet.
	line []byte
	// out gathers what one write shows, to write it to w at once.
	out []byte
	// failed is set when writing to w failed.
	failed bool
}

// maxLiveBurst is the capacity of the output buffer kept between
// writes; a larger one, from a burst of short lines, is let go.
const maxLiveBurst = 1 << 20

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	if n == 0 || p.failed {
		return n, nil
	}
	out := p.out[:0]
	if k := len(p.line); k > 0 && p.line[k-1] == '\r' && b[0] != '\n' {
		out = p.endLine(out, nil) // the held line ends at its "\r"
	}
	// cr is the index of the next carriage return in b at or after off,
	// or -1; most output has none, and is cut at newlines only.
	cr := bytes.IndexByte(b, '\r')
	for off := 0; off < len(b); {
		if cr >= 0 && cr < off {
			if cr = bytes.IndexByte(b[off:], '\r'); cr >= 0 {
				cr += off
			}
		}
		if len(p.line) == 0 {
			// Whole lines before the next "\r" go out in one pass.
			limit := len(b)
			if cr >= 0 {
				limit = cr
			}
			if lines := bytes.Count(b[off:limit], newline); lines > 0 {
				var k int
				out, k = p.wholeLines(out, b[off:limit], lines)
				off += k
				continue
			}
		}
		end := bytes.IndexByte(b[off:], '\n')
		if end >= 0 {
			end += off
		}
		if cr >= 0 && (end < 0 || cr < end) {
			switch {
			case cr+1 == len(b):
				end = -1 // what follows "\r" decides; hold it
			case b[cr+1] != '\n':
				end = cr
			}
		}
		if end < 0 {
			out = p.hold(out, b[off:])
			break
		}
		out = p.endLine(out, b[off:end+1])
		off = end + 1
	}
	if len(out) > 0 {
		p.show(out)
	}
	if cap(out) <= maxLiveBurst {
		p.out = out[:0]
	} else {
		p.out = nil
	}
	return n, nil
}

// show writes out to w under the shared lock.
func (p *prefixWriter) show(out []byte) {
	p.mu.Lock()
	_, err := p.w.Write(out)
	p.mu.Unlock()
	if err != nil {
		p.failed = true
	}
}

var newline = []byte{'\n'}

// wholeLines appends to out the first n lines of b, which holds at
// least n newlines, each behind the prefix; it returns out and the
// length of the lines. Short lines (the two bytes of each line of
// `yes`) are copied byte by byte, which costs less than looking for
// each newline and copying the line.
func (p *prefixWriter) wholeLines(out, b []byte, n int) ([]byte, int) {
	at := len(out)
	out = slices.Grow(out, len(b)+n*len(p.prefix))
	dst := out[at : at+len(b)+n*len(p.prefix)]
	w, r := 0, 0
	if len(b) < 8*n {
		for start := true; n > 0; r++ {
			if start {
				w += copy(dst[w:], p.prefix)
			}
			c := b[r]
			dst[w] = c
			w++
			start = c == '\n'
			if start {
				n--
			}
		}
		return out[:at+w], r
	}
	for ; n > 0; n-- {
		i := bytes.IndexByte(b[r:], '\n') + 1
		w += copy(dst[w:], p.prefix)
		w += copy(dst[w:], b[r:r+i])
		r += i
	}
	return out[:at+w], r
}

// endLine appends to out the prefix, the held line and rest, which ends
// the line, and empties the held line.
func (p *prefixWriter) endLine(out, rest []byte) []byte {
	out = append(out, p.prefix...)
	out = append(out, p.line...)
	out = append(out, rest...)
	p.line = p.line[:0]
	return out
}

// hold keeps b, the start of a line or more of it, as the held line;
// while that would hold more than maxLiveLine bytes, a piece of that
// length goes to out as a line of its own.
func (p *prefixWriter) hold(out, b []byte) []byte {
	for len(p.line)+len(b) > maxLiveLine {
		k := maxLiveLine - len(p.line)
		out = append(out, p.prefix...)
		start := len(out)
		out = append(out, p.line...)
		out = append(out, b[:k]...)
		cut := start + utf8Cut(out[start:])
		p.line = append(p.line[:0], out[cut:]...)
		out = append(out[:cut], '\n')
		b = b[k:]
	}
	p.line = append(p.line, b...)
	return out
}

// utf8Cut returns where to cut b so that no UTF-8 character is split:
// len(b), or the start of an incomplete character at its end.
func utf8Cut(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// Flush writes the held line, ending it with a newline.
func (p *prefixWriter) Flush() {
	if len(p.line) == 0 || p.failed {
		return
	}
	out := p.endLine(p.out[:0], []byte{'\n'})
	p.show(out)
	p.out = out[:0]
}

// lockedWriter serializes writes from the session's output copier and
// the runner.
type lockedWriter struct {
	mu sync.Mutex
	ws []io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.ws {
		if _, err := w.Write(p); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// lazyFile is a session log, created at the first byte of output: a
// session that prints nothing leaves no file, and costs no file
// creation (which dominates the cost of short sessions on some file
// systems). A failure to create or write it is kept in err, and
// later writes are dropped.
type lazyFile struct {
	fs   afero.Fs
	path string
	f    afero.File
	err  error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	if l.err != nil {
		return len(p), nil
	}
	if l.f == nil {
		if l.f, l.err = createFile(l.fs, l.path); l.err != nil {
			return len(p), nil
		}
	}
	if _, err := l.f.Write(p); err != nil {
		l.err = err
	}
	return len(p), nil
}

// Close closes the file, if it was created.
func (l *lazyFile) Close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// createFile creates (or truncates) a file for writing, making its
// directory when it is missing.
func createFile(fsys afero.Fs, path string) (afero.File, error) {
	f, err := fsys.OpenFile(path, record.CreateTrunc, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := fsys.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		f, err = fsys.OpenFile(path, record.CreateTrunc, 0o644)
	}
	return f, err
}
