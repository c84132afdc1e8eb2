package agents

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"
)

// The parser's memory bounds.
const (
	// MaxLine is the longest line, or multi-line JSON value, the parser
	// keeps; the rest of a longer one is counted and dropped.
	MaxLine = 1 << 20
	// MaxText is the most final text a Result keeps.
	MaxText = 1 << 20
)

// Parser reads a session's output as it is written and says at Close
// what it meant. It is an io.Writer: lines may arrive split across
// writes, in any sizes. Lines that are not the tool's JSON are skipped
// (but read for a refusal to resume); nothing written is an error.
// A Parser is safe for concurrent writers.
type Parser struct {
	mu      sync.Mutex
	display func(string)
	tool    tool
	closed  bool

	line     []byte // the line being read
	lineOver bool   // the line being read is longer than MaxLine: drop it

	value   []byte // a multi-line JSON value being gathered
	scan    scanner
	shown   bool   // display has been called
	text    []byte // the final text so far, at most MaxText bytes
	dropped int64  // bytes of the current final text beyond MaxText

	res Result
}

// tool is what differs between presets: the meaning of one JSON object
// and of one non-JSON line.
type tool interface {
	// object reads one JSON object; it reports whether the object was
	// the tool's.
	object(p *Parser, raw []byte) bool
	// text reads one line that was not JSON.
	text(p *Parser, line string)
	// end finishes the result at Close.
	end(p *Parser)
}

// NewParser returns a parser of preset's structured output. display, if
// not nil, is given human text to show live as it arrives: codex's agent
// messages and commands, claude's assistant text in stream-json, gemini's
// streamed assistant text; the final text of a single JSON object is
// given at Close. It is never given raw JSON. An unknown preset's output
// is only counted (its Result is empty).
func NewParser(preset string, display func(text string)) *Parser {
	p := &Parser{display: display}
	switch preset {
	case Claude:
		p.tool = &claudeTool{}
	case Codex:
		p.tool = &codexTool{started: map[string]bool{}}
	case Gemini:
		p.tool = &geminiTool{}
	default:
		p.tool = noTool{}
	}
	return p
}

// Write reads b. It always returns len(b), nil.
func (p *Parser) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return len(b), nil
	}
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		p.take(chunk)
		if i < 0 {
			break
		}
		p.endLine()
		b = b[i+1:]
	}
	return n, nil
}

// Close reads a last unterminated line and returns the result. Later
// writes are ignored; later calls return the same result.
func (p *Parser) Close() Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.res
	}
	if len(p.line) > 0 || p.lineOver {
		p.endLine()
	}
	p.value = nil
	p.tool.end(p)
	p.closed = true
	p.res.Text = string(p.text)
	p.text = nil
	p.res.Skipped += p.dropped
	if p.res.Structured {
		p.res.Usage.Sessions = 1
	}
	if !p.shown && p.res.Text != "" {
		p.show(p.res.Text)
	}
	return p.res
}

// take appends a piece of the current line, keeping at most MaxLine bytes.
func (p *Parser) take(chunk []byte) {
	if p.lineOver {
		p.res.Skipped += int64(len(chunk))
		return
	}
	if len(p.line)+len(chunk) > MaxLine {
		p.res.Skipped += int64(len(p.line) + len(chunk))
		p.line = p.line[:0]
		p.lineOver = true
		return
	}
	p.line = append(p.line, chunk...)
}

// endLine reads the line taken so far.
func (p *Parser) endLine() {
	over := p.lineOver
	line := bytes.TrimSuffix(p.line, []byte{'\r'})
	p.lineOver = false
	if over {
		// An over-long line inside a multi-line value loses the value.
		p.value = nil
	} else {
		p.readLine(line)
	}
	if cap(p.line) > 64<<10 {
		p.line = nil // do not hold a large buffer for the session's life
	} else {
		p.line = p.line[:0]
	}
}

// readLine reads one whole line: a JSON value on one line, a line of a
// JSON value printed over many (gemini's json format is indented), or
// anything else.
func (p *Parser) readLine(line []byte) {
	trimmed := bytes.TrimLeft(line, " \t")
	opens := len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
	if p.value != nil {
		switch {
		case len(line) > 0 && (line[0] == '{' || line[0] == '['):
			// A value starting at the margin: what was gathered was not
			// JSON after all. Start again here.
			p.value = nil
		case len(line) == 0 || strings.IndexByte(" \t}],", line[0]) >= 0:
			// A line of an indented value.
			if len(p.value)+len(line)+1 > MaxLine {
				p.res.Skipped += int64(len(p.value) + len(line) + 1)
				p.value = nil
				return
			}
			p.value = append(p.value, '\n')
			p.value = append(p.value, line...)
			p.scan.feed(line)
			switch {
			case p.scan.bad:
				p.value = nil
			case p.scan.done:
				v := p.value
				p.value = nil
				p.readValue(v)
			}
			return
		default:
			// Noise written in the middle of a value (stderr).
			p.tool.text(p, string(line))
			return
		}
	}
	if !opens {
		p.tool.text(p, string(line))
		return
	}
	p.scan = scanner{}
	p.scan.feed(trimmed)
	switch {
	case p.scan.done:
		p.readValue(trimmed)
	case p.scan.bad:
		p.tool.text(p, string(line))
	default:
		p.value = append([]byte(nil), trimmed...)
	}
}

// readValue reads a complete JSON value: an object, or an array of
// objects (claude's json format with --verbose in some versions).
func (p *Parser) readValue(v []byte) {
	v = bytes.TrimSpace(v)
	if v[0] == '[' {
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			p.tool.text(p, string(v))
			return
		}
		for _, it := range items {
			if it = bytes.TrimSpace(it); len(it) > 0 && it[0] == '{' {
				p.object(it)
			}
		}
		return
	}
	if !json.Valid(v) {
		p.tool.text(p, string(v))
		return
	}
	p.object(v)
}

func (p *Parser) object(raw []byte) {
	if p.tool.object(p, raw) {
		p.res.Structured = true
	}
}

// show gives s to display.
func (p *Parser) show(s string) {
	if p.display == nil || strings.TrimSpace(s) == "" {
		return
	}
	p.shown = true
	p.display(s)
}

// setText makes s the final text, cut at MaxText.
func (p *Parser) setText(s string) {
	p.text = p.text[:0]
	p.dropped = 0
	p.appendText(s)
}

// appendText adds s to the final text, cut at MaxText on a rune
// boundary. (Streamed text arrives in many small pieces: the buffer
// grows amortised rather than being copied on each.)
func (p *Parser) appendText(s string) {
	room := MaxText - len(p.text)
	if len(s) <= room {
		p.text = append(p.text, s...)
		return
	}
	cut := room
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	p.text = append(p.text, s[:cut]...)
	p.dropped += int64(len(s) - cut)
}

// fail records a failure, keeping the first message.
func (p *Parser) fail(msg string) {
	p.res.Failed = true
	if p.res.Error != "" {
		return
	}
	p.res.Error = strings.TrimSpace(msg)
	if p.res.Error == "" {
		// A blank message (seen by fuzzing) still says there was an error.
		p.res.Error = "the agent reported an error without a message"
	}
}

// refuseResume records a refusal to resume, which is also a failure.
func (p *Parser) refuseResume(msg string) {
	p.res.ResumeRefused = true
	p.fail(msg)
}

// scanner follows the nesting of a JSON value across lines, so that a
// value printed over many lines is read when it closes. It does not
// validate: encoding/json does that once the value is complete.
type scanner struct {
	depth      int
	inString   bool
	escaped    bool
	done, bad  bool
	begunValue bool
}

func (s *scanner) feed(b []byte) {
	for _, c := range b {
		if s.bad {
			return
		}
		if s.done {
			if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
				s.bad = true
			}
			continue
		}
		if s.inString {
			switch {
			case s.escaped:
				s.escaped = false
			case c == '\\':
				s.escaped = true
			case c == '"':
				s.inString = false
			}
			continue
		}
		switch c {
		case '"':
			s.inString = true
		case '{', '[':
			s.depth++
			s.begunValue = true
		case '}', ']':
			s.depth--
			if s.depth < 0 {
				s.bad = true
			} else if s.depth == 0 && s.begunValue {
				s.done = true
			}
		}
	}
	if s.inString {
		// JSON strings do not span lines.
		s.bad = true
	}
}

// resumeRefusal reports whether an error message says that the session
// to resume does not exist. None of the tools documents the wording, so
// it is matched leniently: a session, thread, rollout or conversation
// together with not found, unknown, invalid or no such; or an old
// gemini rejecting the --resume option itself.
func resumeRefusal(msg string) bool {
	l := strings.ToLower(msg)
	if strings.Contains(l, "unknown argument") && strings.Contains(l, "resume") {
		return true
	}
	subject := false
	for _, w := range []string{"session", "thread", "rollout", "conversation"} {
		if strings.Contains(l, w) {
			subject = true
			break
		}
	}
	if !subject {
		return false
	}
	for _, w := range []string{"not found", "unknown", "invalid", "no such", "does not exist", "doesn't exist", "could not find", "couldn't find", "no saved"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	// "No conversation found with session ID", "no rollout found for thread id".
	i := strings.Index(l, "no ")
	return i >= 0 && strings.Contains(l[i:], " found")
}

// noTool reads nothing.
type noTool struct{}

func (noTool) object(*Parser, []byte) bool { return false }
func (noTool) text(*Parser, string)        {}
func (noTool) end(*Parser)                 {}
