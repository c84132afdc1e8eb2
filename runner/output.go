package runner

import (
	"bytes"
	"errors"
	"github.com/spf13/afero"
	"io"
	"io/fs"
	"path/filepath"
	"sync"
)

// outputTail is the size of a session's output kept for expressions.
const outputTail = 64 << 10

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) String() string { return string(t.buf) }

// prefixWriter writes each line to w behind a prefix, for live output
// of several sessions on one terminal. A mutex shared by all of them
// keeps lines whole.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix []byte
	// partial is the unfinished last line. It never holds a newline, so
	// each write looks for newlines in its own bytes only, and a line
	// costs time in proportion to its length however many writes bring
	// it.
	partial []byte
	// out gathers the lines of one write, to write them at once.
	out bytes.Buffer
}

// longLine is the length of an unfinished line above which it is
// written from where it is rather than copied, and not kept for reuse.
const longLine = 64 << 10

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		p.partial = append(p.partial, b...)
		return n, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.Reset()
	if len(p.partial) > longLine {
		// A long line goes out from where it is; the lock keeps it whole.
		if err := p.writeLine(p.partial, b[:i+1]); err != nil {
			p.dropPartial()
			return n, err
		}
	} else {
		p.out.Write(p.prefix)
		p.out.Write(p.partial)
		p.out.Write(b[:i+1])
	}
	p.dropPartial()
	b = b[i+1:]
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		p.out.Write(p.prefix)
		p.out.Write(b[:i+1])
		b = b[i+1:]
	}
	p.partial = append(p.partial, b...)
	if p.out.Len() == 0 {
		return n, nil
	}
	_, err := p.w.Write(p.out.Bytes())
	if p.out.Cap() > longLine {
		p.out = bytes.Buffer{} // do not hold on to a burst's copy
	}
	return n, err
}

// writeLine writes the prefix, then head and rest as one line: in one
// write, or, for a long head, in three rather than through a copy. The
// caller holds the lock.
func (p *prefixWriter) writeLine(head, rest []byte) error {
	if len(head) <= longLine {
		p.out.Reset()
		p.out.Write(p.prefix)
		p.out.Write(head)
		p.out.Write(rest)
		_, err := p.w.Write(p.out.Bytes())
		p.out.Reset()
		return err
	}
	for _, s := range [][]byte{p.prefix, head, rest} {
		if _, err := p.w.Write(s); err != nil {
			return err
		}
	}
	return nil
}

// dropPartial empties the unfinished line, letting go of the memory of
// a long one.
func (p *prefixWriter) dropPartial() {
	if cap(p.partial) > longLine {
		p.partial = nil
		return
	}
	p.partial = p.partial[:0]
}

// Flush writes a last line without a newline.
func (p *prefixWriter) Flush() {
	if len(p.partial) == 0 {
		return
	}
	p.mu.Lock()
	_ = p.writeLine(p.partial, []byte{'\n'})
	p.mu.Unlock()
	p.dropPartial()
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
	f, err := fsys.OpenFile(path, osCreateTrunc, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := fsys.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		f, err = fsys.OpenFile(path, osCreateTrunc, 0o644)
	}
	return f, err
}
