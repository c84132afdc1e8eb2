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
// work when the pass word is LGTM.
//
// The verdict follows the rule of seed 002's loop (DESIGN §2): it is
// the signal on the final non-empty line (whitespace and quotes around
// it allowed), "PASS" or "FAIL" whatever the configured words;
// "MIXED" when both a pass and a fail line occur; "" when the final
// line is no signal, text follows the last signal, or there is none —
// Why says which.
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

	mu   sync.Mutex
	line []byte // the incomplete last line
	skip bool   // the current line is too long to be a signal
	v    verdictState
}

// verdictState is what the lines so far say: which signals were seen,
// the verdict signal of the last non-empty line, and whether text
// followed a verdict signal.
type verdictState struct {
	seen [3]bool
	// last is the verdict word ("PASS", "FAIL") of the last non-empty
	// line when it was a pass or fail signal, else "".
	last string
	// after is true when a non-empty line that is no signal came after
	// a pass or fail line.
	after bool
}

// The verdicts and why there is none (DESIGN §2, §4).
const (
	VerdictPass  = "PASS"
	VerdictFail  = "FAIL"
	VerdictMixed = "MIXED"

	WhyNoVerdict = "no final PASS/FAIL line"
	WhyMixed     = "both PASS and FAIL"
	WhyTextAfter = "text after the final signal"
)

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
		if s.skip {
			s.v = s.v.text() // a line too long to be a signal is text
		} else {
			s.v = s.scanLine(s.line, s.v)
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
	v := s.final()
	w := s.words
	seen := v.seen
	signals := map[string]bool{"DONE": seen[sigDone], "PASS": seen[sigPass], "FAIL": seen[sigFail]}
	signals[w.Done] = seen[sigDone]
	signals[w.Pass] = seen[sigPass]
	signals[w.Fail] = seen[sigFail]
	verdict, _ := v.verdict()
	return signals, verdict
}

// Why says why the output so far has no verdict, or a MIXED one:
// WhyNoVerdict, WhyMixed or WhyTextAfter; "" for a PASS or FAIL
// verdict.
func (s *SignalScanner) Why() string {
	_, why := s.final().verdict()
	return why
}

// final returns the state of the output so far, counting an
// unterminated last line.
func (s *SignalScanner) final() verdictState {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.v
	switch {
	case s.skip:
		v = v.text()
	case len(s.line) > 0:
		v = s.scanLine(s.line, v)
	}
	return v
}

// verdict applies the rule to what the lines said.
func (v verdictState) verdict() (verdict, why string) {
	switch {
	case v.seen[sigPass] && v.seen[sigFail]:
		return VerdictMixed, WhyMixed
	case v.last != "":
		return v.last, ""
	case v.after:
		return "", WhyTextAfter
	}
	return "", WhyNoVerdict
}

// text returns v after a non-empty line that is no verdict signal.
func (v verdictState) text() verdictState {
	if v.last != "" || v.after {
		v.after = true
	}
	v.last = ""
	return v
}

// scanLine returns v updated by one output line. Blank lines change
// nothing; a done signal is neither text nor a verdict.
func (s *SignalScanner) scanLine(line []byte, v verdictState) verdictState {
	text := bytes.Trim(bytes.TrimSpace(line), "\"'`")
	text = bytes.TrimSpace(text)
	if len(text) == 0 {
		return v
	}
	w := s.words
	switch string(text) {
	case w.Done, s.promiseDone:
		v.seen[sigDone] = true
	case w.Pass, s.reviewPass:
		v.seen[sigPass] = true
		v.last = VerdictPass
	case w.Fail, s.reviewFail:
		v.seen[sigFail] = true
		v.last = VerdictFail
	default:
		return v.text()
	}
	return v
}
