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
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/event"
	"github.com/flow-run/flow/internal/runlock"
)

// Event is one line of the log (see package event).
type Event = event.Event

// Time is a timestamp as the log writes it (see package event).
type Time = event.Time

// NewTime returns t as a Time.
func NewTime(t time.Time) Time { return event.NewTime(t) }

// ErrBroken is wrapped by the errors of a Log that refuses appends
// because an earlier write or sync failed in a way that left the file in
// an unknown state.
var ErrBroken = errors.New("event log unusable after an earlier failure; reopen it")

// ErrForeignWrite is wrapped by the errors of a Log that found the file
// longer or shorter than it left it: something else wrote to it. The
// Log is broken from then on (the error wraps ErrBroken too), so that it
// never appends an event after another writer's.
var ErrForeignWrite = errors.New("event log changed by another writer")

// Log appends events to a JSON Lines file. It is safe for concurrent use.
type Log struct {
	path string

	mu      sync.Mutex
	file    afero.File
	os      *osFile // the descriptor and its lock, on a real file system
	marker  *marker // the writer marker, elsewhere
	lastSeq int64
	size    int64 // bytes of complete lines in the file
	buf     bytes.Buffer
	enc     *json.Encoder // writes lines to buf
	broken  error
	// sync commits file to stable storage: afero.File.Sync, which for
	// a real file is (*os.File).Sync. Tests replace it with one that
	// blocks or fails.
	sync func(file afero.File) error
}

// Open opens the log at path for appending, creating it and its parent
// directories if missing, and holds it as its only writer until Close.
// On a real file system the Log holds an exclusive flock(2) on the file,
// which the kernel releases when the file is closed or the process
// dies; on one without descriptors (an in-memory file system, a test
// wrapper) it makes a writer marker beside the log (see claimMarker).
// While another Log, in this process or another, holds the log, Open
// fails with a *LockedError (wrapping ErrLocked). Readers (Read) take
// no lock and are never refused.
//
// Open reads the existing events to learn the last Seq; a torn final
// line is truncated away. A log with a fault in it fails Open with the
// *CorruptError that Read returns: nothing may be appended after a
// fault.
func Open(fs afero.Fs, path string) (*Log, error) {
	return open(fs, path, runlock.ProcessAlive)
}

// open is Open with the check of whether a writer marker's process is
// alive injected.
func open(fs afero.Fs, path string, alive func(runlock.Holder) bool) (*Log, error) {
	if err := fs.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create directory of event log %s: %w", path, err)
	}
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open event log %s: %w", path, err)
	}
	l := &Log{path: path, file: f, sync: afero.File.Sync}
	// Each event is one line: the Encoder compacts Data, escapes
	// newlines in strings and ends the line. Without HTML escaping, a
	// "<" in a step's output stays readable to grep and jq.
	l.enc = json.NewEncoder(&l.buf)
	l.enc.SetEscapeHTML(false)
	if l.os, err = lockOS(f, path); err != nil {
		_ = f.Close()
		return nil, err
	}
	if l.os == nil {
		if l.marker, err = claimMarker(fs, path, alive); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	if err := l.load(); err != nil {
		_ = f.Close()
		if l.marker != nil {
			_ = l.marker.release()
		}
		return nil, err
	}
	return l, nil
}

// load reads the events of the file just opened and locked to learn
// the last Seq and the end of the last complete line, truncates a torn
// final line away and leaves the offset at the end.
func (l *Log) load() error {
	f, path := l.file, l.path
	// Some file systems start an O_APPEND file's offset at its end.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("seek to start of event log %s: %w", path, err)
	}
	end, total, err := scan(path, f, bufferSize(f), 0, func(e Event) bool { l.lastSeq = e.Seq; return true })
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
	return err
}

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
//
// Before it writes, Append checks that the file still ends where the
// Log's last write left it (one fstat); if something else wrote to it or
// cut it, Append writes nothing and the Log is broken, with an error
// wrapping ErrForeignWrite and ErrBroken.
func (l *Log) Append(e Event) (Event, error) {
	got, err := l.AppendAll([]Event{e})
	if err != nil {
		return Event{}, err
	}
	return got[0], nil
}

// AppendAll writes es as one line each, all with a single write, and
// returns them as written, in es itself: Seq is set as Append sets it.
// Either every event is appended or, after an error, none is. It checks
// the end of the file once, as Append does.
func (l *Log) AppendAll(es []Event) ([]Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return nil, fmt.Errorf("append event to %s: %w", l.path, os.ErrClosed)
	}
	if l.broken != nil {
		return nil, fmt.Errorf("append event to %s: %w", l.path, l.broken)
	}
	if len(es) == 0 {
		return es, nil
	}
	l.buf.Reset()
	last := l.lastSeq
	for i := range es {
		e := &es[i]
		if e.Seq == 0 {
			e.Seq = last + 1
		}
		if e.Seq <= last {
			return nil, fmt.Errorf("append event to %s: seq %d is not after last seq %d", l.path, e.Seq, last)
		}
		if e.Type == "" {
			return nil, fmt.Errorf("append event %d to %s: empty type", e.Seq, l.path)
		}
		if err := l.enc.Encode(e); err != nil {
			return nil, fmt.Errorf("append event %d to %s: %w", e.Seq, l.path, err)
		}
		last = e.Seq
	}
	first := es[0].Seq
	if err := l.checkSize(); err != nil {
		return nil, fmt.Errorf("append event %d to %s: %w", first, l.path, err)
	}
	n, err := l.file.Write(l.buf.Bytes())
	if err != nil {
		l.undoPartial(n)
		return nil, fmt.Errorf("append event %d to %s: %w", first, l.path, err)
	}
	l.size += int64(n)
	l.lastSeq = last
	return es, nil
}

// checkSize makes sure that the file ends where this Log's last write
// left it. If it does not, the Log is broken.
func (l *Log) checkSize() error {
	var (
		size int64
		err  error
	)
	if l.os != nil {
		size, err = l.os.size()
	} else {
		var fi os.FileInfo
		if fi, err = l.file.Stat(); err == nil {
			size = fi.Size()
		}
	}
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if size != l.size {
		l.broken = fmt.Errorf("%w: %w: the file has %d bytes where this writer left %d (after seq %d)",
			ErrBroken, ErrForeignWrite, size, l.size, l.lastSeq)
		return l.broken
	}
	return nil
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
//
// Sync blocks its caller, and the Log's other methods, until the disk
// answers, but nothing else: the file's Sync is an ordinary system call,
// during which the Go runtime runs the process's other goroutines
// (timers, heartbeats, the copying of session output) on other threads.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return fmt.Errorf("sync event log %s: %w", l.path, os.ErrClosed)
	}
	if l.broken != nil {
		return fmt.Errorf("sync event log %s: %w", l.path, l.broken)
	}
	if err := l.sync(l.file); err != nil {
		l.broken = fmt.Errorf("%w: sync failed: %v", ErrBroken, err)
		return fmt.Errorf("sync event log %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file without syncing it, which releases the lock on
// it, and removes the writer marker if there is one. Closing twice is
// an error.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return fmt.Errorf("close event log %s: %w", l.path, os.ErrClosed)
	}
	err := l.file.Close()
	l.file, l.os = nil, nil
	if err != nil {
		err = fmt.Errorf("close event log %s: %w", l.path, err)
	}
	if l.marker != nil {
		err = errors.Join(err, l.marker.release())
		l.marker = nil
	}
	return err
}

// CorruptError says that a line of the log that is not its last is not
// an event that may follow the ones before it: the file was damaged or
// edited, or a second writer appended to it. Read returns it together
// with the events before the line, which are sound and may be shown;
// Open refuses such a log.
type CorruptError struct {
	Path string
	// Line is the 1-based number of the faulty line.
	Line int
	// Seq and Prev are set when the line is a valid event whose Seq is not
	// after Prev, the Seq of the event before it: two writers appended the
	// same or interleaved seqs. They are 0 when the line is not an event.
	Seq, Prev int64
	// Err says what is wrong with a line that is not an event.
	Err error
}

// Error names path:line and the fault, as in "/r/events.jsonl:9: seq 5
// is not after 8: a second writer appended to the log from this line
// on; the events before line 9 can be read".
func (e *CorruptError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s:%d: invalid event: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: seq %d is not after %d: a second writer appended to the log from this line on; the events before line %d can be read",
		e.Path, e.Line, e.Seq, e.Prev, e.Line)
}

// Unwrap returns what is wrong with a line that is not an event.
func (e *CorruptError) Unwrap() error { return e.Err }

// Read returns the events of the log at path whose Seq is greater than
// after, in order. A torn final line — invalid or unterminated — is
// ignored, as a crash during an append leaves one. A missing file is an
// error wrapping os.ErrNotExist.
//
// A fault in the log — an invalid line that is not the last, or an
// event whose Seq is not after the one before it (even on the last
// line: a crash cannot leave a whole event behind) — is a *CorruptError
// naming path:line, returned together with the events before the fault.
// Callers must check for it (errors.As) and may use those events, for
// instance to show a run up to the fault; they must not treat them as
// the whole log.
func Read(fs afero.Fs, path string, after int64) ([]Event, error) {
	var events []Event
	err := Each(fs, path, after, func(e Event) error {
		events = append(events, e)
		return nil
	})
	return events, err
}

// Each calls fn with each event of the log at path whose Seq is greater
// than after, in order, as it reads them: a reader that folds the
// events into a state holds one event at a time, not the whole log.
// It reads the log as Read does, and returns what Read would: fn has
// been called with the events before a fault when it returns a
// *CorruptError. An error from fn stops the reading and is returned as
// it is.
func Each(fs afero.Fs, path string, after int64, fn func(Event) error) error {
	f, err := fs.Open(path)
	if err != nil {
		return fmt.Errorf("read event log: %w", err)
	}
	defer f.Close()
	var stop error
	_, _, err = scan(path, f, bufferSize(f), after, func(e Event) bool {
		if e.Seq > after {
			stop = fn(e)
		}
		return stop == nil
	})
	if stop != nil {
		return stop
	}
	return err
}

// leadingSeq reads the seq of a line as the log writes it,
// {"seq":N,..., without decoding the rest; ok is false for any other
// shape, which the caller then decodes whole.
func leadingSeq(line []byte) (seq int64, ok bool) {
	const prefix = `{"seq":`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return 0, false
	}
	i := len(prefix)
	for ; i < len(line) && line[i] >= '0' && line[i] <= '9'; i++ {
		seq = seq*10 + int64(line[i]-'0')
		if seq > 1<<53 {
			return 0, false
		}
	}
	if i == len(prefix) || i >= len(line) || line[i] != ',' || seq <= 0 {
		return 0, false
	}
	return seq, true
}

// maxBuffer is the size of the buffer a log is read through.
const maxBuffer = 64 << 10

// bufferSize returns the size of the buffer to read f through: the
// file's size and a little more (a live log grows), up to maxBuffer, so
// that a reader of hundreds of short logs does not allocate 64 KB for
// each.
func bufferSize(f afero.File) int {
	fi, err := f.Stat()
	if err != nil || fi.Size() >= maxBuffer {
		return maxBuffer
	}
	return int(fi.Size()) + 4<<10
}

// scan reads r line by line, through a buffer of size bytes, and calls
// fn with each valid event, until fn returns false. It
// returns the offset just past the last valid line (events or blank
// lines) and the number of bytes read. A final line that is invalid or
// lacks its newline is skipped; any other invalid line, and an event
// whose Seq is not after the one before, is a *CorruptError.
func scan(path string, r io.Reader, size int, after int64, fn func(Event) bool) (end, total int64, err error) {
	br := bufio.NewReaderSize(r, size)
	var (
		lineNo  int
		lastSeq int64
		pending error  // the error of an invalid line, reported only if it is not the last
		long    []byte // a line longer than br's buffer
	)
	for {
		// A line is read in place in br's buffer (no copy per line);
		// only one longer than the buffer is gathered into long.
		line, rerr := br.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for rerr == bufio.ErrBufferFull {
				line, rerr = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
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
			if seq, ok := leadingSeq(line); ok && seq <= after {
				// A line the caller already has (a snapshot holds it):
				// only its order is checked, not decoded.
				if seq <= lastSeq {
					return end, total, &CorruptError{Path: path, Line: lineNo, Seq: seq, Prev: lastSeq}
				}
				lastSeq = seq
				end = total
				continue
			}
			if len(bytes.TrimSpace(line)) > 0 {
				e, perr := parseLine(line)
				if perr != nil {
					pending = &CorruptError{Path: path, Line: lineNo, Err: perr}
					continue
				}
				if e.Seq <= lastSeq {
					return end, total, &CorruptError{Path: path, Line: lineNo, Seq: e.Seq, Prev: lastSeq}
				}
				lastSeq = e.Seq
				if !fn(e) {
					return total, total, nil
				}
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

// parseLine decodes one line and checks that it is an event.
func parseLine(line []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		return Event{}, err
	}
	if e.Seq <= 0 {
		return Event{}, fmt.Errorf("seq %d is not positive", e.Seq)
	}
	if e.Type == "" {
		return Event{}, errors.New("empty type")
	}
	return e, nil
}
