package gates

import (
	"bytes"
	"sync"
)

// SignalWords are the words that, alone on a line of a session's
// output, set signals. An empty field means the default word: DONE,
// PASS, FAIL.
type SignalWords struct {
	Done, Pass, Fail string
}

// withDefaults returns w with empty words replaced by the defaults.
func (w SignalWords) withDefaults() SignalWords {
	if w.Done == "" {
		w.Done = "DONE"
	}
	if w.Pass == "" {
		w.Pass = "PASS"
	}
	if w.Fail == "" {
		w.Fail = "FAIL"
	}
	return w
}

// MaxSignalLine is the longest output line, in bytes, that can carry a
// signal; longer lines are skipped without being buffered.
const MaxSignalLine = 4096

// ParseSignals scans a session's output for signal lines. A line
// counts when, with surrounding whitespace trimmed, it is exactly one
// of the words, or <promise>WORD</promise> for the done word, or
// <review>WORD</review> for the pass and fail words; "PASSWORD",
// "tests PASS" and "looks good" never count.
//
// The signals map has the keys DONE, PASS and FAIL, true when the
// corresponding word was seen; a configured word that differs from its
// default is a key too, so that signals.LGTM and signals.PASS both
// work when the pass word is LGTM. verdict is "PASS" or "FAIL" after
// the last pass or fail line, "" when there was none.
func ParseSignals(output string, words SignalWords) (signals map[string]bool, verdict string) {
	s := NewSignalScanner(words)
	s.Write([]byte(output))
	return s.Result()
}

// SignalScanner finds signal lines in output written to it in pieces,
// as ParseSignals does, keeping only the current line. It is safe for
// concurrent use, but interleaved writes from two streams split each
// other's lines: give each stream its own scanner.
type SignalScanner struct {
	words SignalWords
	// The tagged forms of the words.
	promiseDone, reviewPass, reviewFail string

	mu      sync.Mutex
	line    []byte // the incomplete last line
	skip    bool   // the current line is too long to be a signal
	seen    [3]bool
	verdict string
}

// Indexes of SignalScanner.seen.
const (
	sigDone = iota
	sigPass
	sigFail
)

// NewSignalScanner returns a scanner for words.
func NewSignalScanner(words SignalWords) *SignalScanner {
	w := words.withDefaults()
	return &SignalScanner{
		words:       w,
		promiseDone: "<promise>" + w.Done + "</promise>",
		reviewPass:  "<review>" + w.Pass + "</review>",
		reviewFail:  "<review>" + w.Fail + "</review>",
	}
}

// Write scans p; it never fails.
func (s *SignalScanner) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.appendLine(p)
			break
		}
		s.appendLine(p[:i])
		if !s.skip {
			s.seen, s.verdict = s.scanLine(s.line, s.seen, s.verdict)
		}
		s.line, s.skip = s.line[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// appendLine adds p to the current line unless it grows too long.
func (s *SignalScanner) appendLine(p []byte) {
	if s.skip {
		return
	}
	if len(s.line)+len(p) > MaxSignalLine {
		s.line, s.skip = s.line[:0], true
		return
	}
	s.line = append(s.line, p...)
}

// Result returns the signals and verdict of the output written so far,
// counting an unterminated last line. Writing may continue afterwards.
func (s *SignalScanner) Result() (map[string]bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, verdict := s.seen, s.verdict
	if !s.skip && len(s.line) > 0 {
		seen, verdict = s.scanLine(s.line, seen, verdict)
	}
	w := s.words
	signals := map[string]bool{"DONE": seen[sigDone], "PASS": seen[sigPass], "FAIL": seen[sigFail]}
	signals[w.Done] = seen[sigDone]
	signals[w.Pass] = seen[sigPass]
	signals[w.Fail] = seen[sigFail]
	return signals, verdict
}

// scanLine returns seen and verdict updated by one output line.
func (s *SignalScanner) scanLine(line []byte, seen [3]bool, verdict string) ([3]bool, string) {
	text := bytes.TrimSpace(line)
	w := s.words
	switch string(text) {
	case w.Done, s.promiseDone:
		seen[sigDone] = true
	case w.Pass, s.reviewPass:
		seen[sigPass] = true
		verdict = "PASS"
	case w.Fail, s.reviewFail:
		seen[sigFail] = true
		verdict = "FAIL"
	}
	return seen, verdict
}
