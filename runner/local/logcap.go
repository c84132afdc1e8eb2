package local

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/flow-run/flow/internal/confine"
)

// maxLogTail is the most a capped session log keeps of the end of an
// output that was cut.
const maxLogTail = 1 << 20

// cappedLog is a session log bounded to a limit (the workflow's
// log_limit), keeping the head and the tail of an output that is
// longer.
//
// The first limit-tail bytes go straight through to the file, so that
// flow logs --follow sees them as they come. Later bytes are held in a
// ring buffer of tail bytes; at Close, when the whole output fitted in
// the limit, they are written as they were, and otherwise a marker line
//
//	[flow: N bytes of output cut here (log_limit 64 MiB)]
//
// is written, then the last bytes of the output. The file never grows
// beyond limit plus the marker line, however much is written, and the
// memory held stays at the ring buffer's size.
//
// The tail is min(limit/4, 1 MiB). The end of a long output is where
// its failure and its summary are, and 1 MiB is some ten thousand
// lines of it, more than a reader scrolls through; it is also what a
// runner holds in memory per live session, for sessions that run side
// by side. For small limits a quarter leaves most of the file to the
// head, which is written live. The cost of the ring is that, once an
// output passes limit-tail bytes, the file lags the output until the
// session ends (the terminal's live output does not).
//
// The kept tail begins at a line boundary when one lies in its first
// half, else at a UTF-8 character boundary; the marker is put on a line
// of its own. cappedLog is not safe for concurrent use: session output
// reaches it through a lockedWriter.
type cappedLog struct {
	w     io.WriteCloser
	limit int64
	head  int64 // bytes passed straight through
	tail  int64 // size of the ring

	written int64  // bytes given to Write
	ring    []byte // allocated at the first byte past the head
	start   int    // index of the oldest byte in ring
	held    int    // bytes held in ring
	lastNL  bool   // the last byte written through was a newline
	closed  bool
}

// newCappedLog wraps the session log w so that it holds at most limit
// bytes of output, plus a marker line where output was cut. A limit of
// zero or less leaves the output uncut.
func newCappedLog(w io.WriteCloser, limit int64) *cappedLog {
	c := &cappedLog{w: w, limit: limit, head: limit}
	if limit > 0 {
		c.tail = min(limit/4, maxLogTail)
		c.head = limit - c.tail
	}
	return c
}

var errLogClosed = errors.New("write to a closed session log")

// Write passes p through while the output is within the head and holds
// the rest in the ring. It returns len(p) unless writing the head fails.
func (c *cappedLog) Write(p []byte) (int, error) {
	if c.closed {
		return 0, errLogClosed
	}
	n := len(p)
	if c.limit <= 0 {
		c.written += int64(n)
		return c.w.Write(p)
	}
	if room := c.head - c.written; room > 0 {
		through := p[:min(int64(len(p)), room)]
		m, err := c.w.Write(through)
		c.written += int64(m)
		if m > 0 {
			c.lastNL = through[m-1] == '\n'
		}
		if err != nil {
			return m, err
		}
		p = p[len(through):]
	}
	c.written += int64(len(p))
	c.hold(p)
	return n, nil
}

// hold keeps the last tail bytes of what passed the head.
func (c *cappedLog) hold(p []byte) {
	if len(p) == 0 || c.tail == 0 {
		return
	}
	if c.ring == nil {
		c.ring = make([]byte, c.tail)
	}
	size := len(c.ring)
	if len(p) >= size {
		copy(c.ring, p[len(p)-size:])
		c.start, c.held = 0, size
		return
	}
	// Write at the end of the held bytes, wrapping around; what is
	// overwritten is the oldest.
	end := (c.start + c.held) % size
	k := copy(c.ring[end:], p)
	copy(c.ring, p[k:])
	c.held += len(p)
	if c.held > size {
		c.start = (c.start + c.held - size) % size
		c.held = size
	}
}

// Close writes what the ring holds, behind a marker when output was
// cut, and closes the log.
func (c *cappedLog) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	tail := c.ordered()
	var err error
	if c.written > c.limit && c.limit > 0 {
		tail = trimToBoundary(tail)
		cut := c.written - c.head - int64(len(tail))
		marker := fmt.Sprintf("[flow: %d bytes of output cut here (log_limit %s)]\n", cut, confine.Size(c.limit))
		if c.head > 0 && !c.lastNL {
			marker = "\n" + marker
		}
		_, err = c.w.Write(append([]byte(marker), tail...))
	} else if len(tail) > 0 {
		_, err = c.w.Write(tail)
	}
	if cerr := c.w.Close(); err == nil {
		err = cerr
	}
	return err
}

// ordered returns the bytes held in the ring, oldest first.
func (c *cappedLog) ordered() []byte {
	if c.held == 0 {
		return nil
	}
	out := make([]byte, 0, c.held)
	end := c.start + c.held
	if end <= len(c.ring) {
		return append(out, c.ring[c.start:end]...)
	}
	out = append(out, c.ring[c.start:]...)
	return append(out, c.ring[:end-len(c.ring)]...)
}

// trimToBoundary drops the partial line at the start of a kept tail
// when a newline lies in its first half, else the continuation bytes
// of a UTF-8 character cut in the middle.
func trimToBoundary(b []byte) []byte {
	if i := bytes.IndexByte(b[:len(b)/2], '\n'); i >= 0 {
		return b[i+1:]
	}
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
