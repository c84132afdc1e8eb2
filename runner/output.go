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
	mu      *sync.Mutex
	w       io.Writer
	prefix  []byte
	partial []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	p.partial = append(p.partial, b...)
	var out bytes.Buffer
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		out.Write(p.prefix)
		out.Write(p.partial[:i+1])
		p.partial = p.partial[i+1:]
	}
	if out.Len() > 0 {
		p.mu.Lock()
		_, err := p.w.Write(out.Bytes())
		p.mu.Unlock()
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Flush writes a last line without a newline.
func (p *prefixWriter) Flush() {
	if len(p.partial) == 0 {
		return
	}
	p.mu.Lock()
	p.w.Write(append(append(append([]byte{}, p.prefix...), p.partial...), '\n'))
	p.mu.Unlock()
	p.partial = nil
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
