package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/afero"
)

// Event is one line of the log.
type Event struct {
	// Seq numbers the event; it is greater than the Seq of every event
	// before it in the log.
	Seq int64 `json:"seq"`
	// At is when the event happened.
	At Time `json:"at"`
	// Type says what happened, such as "step_started".
	Type string `json:"type"`
	// Step is the step the event is about, if any.
	Step string `json:"step,omitempty"`
	// Data holds the event's details as a JSON value.
	Data json.RawMessage `json:"data,omitempty"`
}

// ErrBroken is wrapped by the errors of a Log that refuses appends
// because an earlier write or sync failed in a way that left the file in
// an unknown state.
var ErrBroken = errors.New("event log unusable after an earlier failure; reopen it")

// Log appends events to a JSON Lines file. It is safe for concurrent use.
type Log struct {
	path string

	mu      sync.Mutex
	file    afero.File
	lastSeq int64
	size    int64 // bytes of complete lines in the file
	buf     bytes.Buffer
	enc     *json.Encoder
	broken  error
}

// Open opens the log at path for appending, creating it and its parent
// directories if missing. It reads the existing events to learn the last
// Seq; a torn final line is truncated away. An invalid line that is not
// the last is an error, as for Read.
func Open(fs afero.Fs, path string) (*Log, error) {
	if err := fs.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create directory of event log %s: %w", path, err)
	}
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open event log %s: %w", path, err)
	}
	l := &Log{path: path, file: f}
	// Some file systems start an O_APPEND file's offset at its end.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("seek to start of event log %s: %w", path, err)
	}
	end, total, err := scan(path, f, func(e Event) { l.lastSeq = e.Seq })
	l.size = end
	if err == nil && total > end {
		if err = f.Truncate(end); err != nil {
			err = fmt.Errorf("truncate torn last line of event log %s: %w", path, err)
		}
	}
	if err == nil {
		// Some file systems keep a write offset even with O_APPEND.
		if _, err = f.Seek(l.size, io.SeekStart); err != nil {
			err = fmt.Errorf("seek to end of event log %s: %w", path, err)
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	l.enc = json.NewEncoder(&l.buf)
	l.enc.SetEscapeHTML(false)
	return l, nil
}

// Path returns the file the log appends to.
func (l *Log) Path() string { return l.path }

// LastSeq returns the Seq of the last event in the log, or 0 if it is
// empty.
func (l *Log) LastSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeq
}

// Append writes e as one line with a single write and returns it as
// written. If e.Seq is 0 it is set to LastSeq()+1; a Seq that is not
// greater than LastSeq is an error, as is an empty Type or Data that is
// not valid JSON. Append does not sync the file; see Sync.
func (l *Log) Append(e Event) (Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return Event{}, fmt.Errorf("append event to %s: %w", l.path, os.ErrClosed)
	}
	if l.broken != nil {
		return Event{}, fmt.Errorf("append event to %s: %w", l.path, l.broken)
	}
	if e.Seq == 0 {
		e.Seq = l.lastSeq + 1
	}
	if e.Seq <= l.lastSeq {
		return Event{}, fmt.Errorf("append event to %s: seq %d is not after last seq %d", l.path, e.Seq, l.lastSeq)
	}
	if e.Type == "" {
		return Event{}, fmt.Errorf("append event %d to %s: empty type", e.Seq, l.path)
	}
	l.buf.Reset()
	if err := l.enc.Encode(e); err != nil { // Encode compacts Data and adds '\n'.
		return Event{}, fmt.Errorf("append event %d to %s: %w", e.Seq, l.path, err)
	}
	n, err := l.file.Write(l.buf.Bytes())
	if err != nil {
		l.undoPartial(n)
		return Event{}, fmt.Errorf("append event %d to %s: %w", e.Seq, l.path, err)
	}
	l.size += int64(n)
	l.lastSeq = e.Seq
	return e, nil
}

// undoPartial removes the n bytes of a failed write so that the next
// append does not follow a torn line. If it cannot, the log is broken.
func (l *Log) undoPartial(n int) {
	if n == 0 {
		return
	}
	if err := l.file.Truncate(l.size); err != nil {
		l.broken = fmt.Errorf("%w: remove torn line: %v", ErrBroken, err)
		return
	}
	if _, err := l.file.Seek(l.size, io.SeekStart); err != nil {
		l.broken = fmt.Errorf("%w: seek after removing torn line: %v", ErrBroken, err)
	}
}

// Sync commits the appended events to stable storage. After a failed
// Sync the log refuses further appends.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return fmt.Errorf("sync event log %s: %w", l.path, os.ErrClosed)
	}
	if l.broken != nil {
		return fmt.Errorf("sync event log %s: %w", l.path, l.broken)
	}
	if err := l.file.Sync(); err != nil {
		l.broken = fmt.Errorf("%w: sync failed: %v", ErrBroken, err)
		return fmt.Errorf("sync event log %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file without syncing it. Closing twice is an error.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return fmt.Errorf("close event log %s: %w", l.path, os.ErrClosed)
	}
	err := l.file.Close()
	l.file = nil
	if err != nil {
		return fmt.Errorf("close event log %s: %w", l.path, err)
	}
	return nil
}

// Read returns the events of the log at path whose Seq is greater than
// after, in order. A torn final line is ignored; an invalid line that is
// not the last is an error naming path:line. A missing file is an error
// wrapping os.ErrNotExist.
func Read(fs afero.Fs, path string, after int64) ([]Event, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read event log: %w", err)
	}
	defer f.Close()
	var events []Event
	_, _, err = scan(path, f, func(e Event) {
		if e.Seq > after {
			events = append(events, e)
		}
	})
	return events, err
}

// scan reads r line by line and calls fn with each valid event. It
// returns the offset just past the last valid line (events or blank
// lines) and the number of bytes read. A final line that is invalid or
// lacks its newline is skipped; any other invalid line is an error.
func scan(path string, r io.Reader, fn func(Event)) (end, total int64, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		lineNo  int
		lastSeq int64
		pending error // the error of an invalid line, reported only if it is not the last
	)
	for {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 {
			if pending != nil {
				return end, total, pending
			}
			lineNo++
			total += int64(len(line))
			if line[len(line)-1] != '\n' {
				// Unterminated, so necessarily the last line: torn.
				return end, total, nil
			}
			if len(bytes.TrimSpace(line)) > 0 {
				e, perr := parseLine(line, lastSeq)
				if perr != nil {
					pending = fmt.Errorf("%s:%d: %w", path, lineNo, perr)
					continue
				}
				lastSeq = e.Seq
				fn(e)
			}
			end = total
		}
		if rerr == io.EOF {
			return end, total, nil
		}
		if rerr != nil {
			return end, total, fmt.Errorf("read event log %s: %w", path, rerr)
		}
	}
}

// parseLine decodes one line and checks that it is an event that may
// follow an event with Seq prev.
func parseLine(line []byte, prev int64) (Event, error) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		return Event{}, fmt.Errorf("invalid event: %w", err)
	}
	if e.Seq <= 0 {
		return Event{}, fmt.Errorf("invalid event: seq %d is not positive", e.Seq)
	}
	if e.Seq <= prev {
		return Event{}, fmt.Errorf("invalid event: seq %d is not after %d", e.Seq, prev)
	}
	if e.Type == "" {
		return Event{}, errors.New("invalid event: empty type")
	}
	return e, nil
}
