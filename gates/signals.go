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
// The verdict follows the rule of agentpair's upstream project, loop (docs/concepts.md, "Sessions"): it is
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
	// bare holds the words as bytes, to search output for.
	bare [3][]byte

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

// The verdicts and why there is none (docs/concepts.md, "Sessions"; docs/architecture.md, "Gate decisions").
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
		bare:        [3][]byte{[]byte(w.Done), []byte(w.Pass), []byte(w.Fail)},
	}
}

// Write scans p; it never fails.
//
// Its cost is in proportion to len(p), however long the lines: the
// first line of p completes the line held from earlier writes, the
// whole lines after it are looked at without being copied, and of the
// unfinished last line at most MaxSignalLine bytes are kept.
func (s *SignalScanner) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		s.appendLine(p)
		return n, nil
	}
	s.appendLine(p[:i])
	if s.skip {
		s.v = s.v.text() // a line too long to be a signal is text
	} else {
		s.v = s.scanLine(s.line, s.v)
	}
	s.line, s.skip = s.line[:0], false
	p = p[i+1:]
	if j := bytes.LastIndexByte(p, '\n'); j >= 0 {
		s.lines(p[:j+1])
		p = p[j+1:]
	}
	s.appendLine(p)
	return n, nil
}

// lines scans whole lines, each ending in a newline.
//
// Only a line that holds one of the bare words can be a signal (the
// tagged forms hold them too); every other line is blank or text, and
// text after text changes nothing. So the lines are searched for the
// words, each line that holds one is scanned on its own, and each run
// of lines between them counts as one text line when any of its lines
// is text. Output without signals, however many lines it has, costs a
// few searches per write rather than work per line.
func (s *SignalScanner) lines(b []byte) {
	// next[k] is where s.bare[k] next occurs in b at or after off; -1
	// when it does not, -2 before the first search.
	next := [3]int{-2, -2, -2}
	off := 0
	for off < len(b) {
		at := -1
		for k, w := range s.bare {
			if next[k] == -2 || (next[k] >= 0 && next[k] < off) {
				next[k] = bytes.Index(b[off:], w)
				if next[k] >= 0 {
					next[k] += off
				}
			}
			if next[k] >= 0 && (at < 0 || next[k] < at) {
				at = next[k]
			}
		}
		if at < 0 {
			s.v = s.plainLines(b[off:], s.v)
			return
		}
		start := off + bytes.LastIndexByte(b[off:at], '\n') + 1
		s.v = s.plainLines(b[off:start], s.v)
		end := at + bytes.IndexByte(b[at:], '\n')
		s.v = s.scanWhole(b[start:end], s.v)
		off = end + 1
	}
}

// plainLines returns v updated by whole lines none of which holds a
// word: by one text line when any of them is text. A printable ASCII
// byte other than a quote survives trimming, so the line holding it is
// text; without one (blank lines, quotes, other scripts' characters
// and spaces) the lines are scanned one by one.
func (s *SignalScanner) plainLines(b []byte, v verdictState) verdictState {
	for _, c := range b {
		if c > ' ' && c < 0x7f && c != '"' && c != '\'' && c != '`' {
			return v.text()
		}
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		v = s.scanWhole(b[:i], v)
		b = b[i+1:]
	}
	return v
}

// scanWhole returns v updated by one whole line.
func (s *SignalScanner) scanWhole(line []byte, v verdictState) verdictState {
	if len(line) > MaxSignalLine {
		return v.text()
	}
	return s.scanLine(line, v)
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
	// Comparisons of string(text) allocate nothing, unlike a switch on
	// it.
	switch t := text; {
	case string(t) == w.Done || string(t) == s.promiseDone:
		v.seen[sigDone] = true
	case string(t) == w.Pass || string(t) == s.reviewPass:
		v.seen[sigPass] = true
		v.last = VerdictPass
	case string(t) == w.Fail || string(t) == s.reviewFail:
		v.seen[sigFail] = true
		v.last = VerdictFail
	default:
		return v.text()
	}
	return v
}
