package agents

import (
	"bytes"
	"encoding/json"
	"strings"
)

// geminiTool reads Gemini CLI's `--output-format json` (one object,
// usually indented over many lines) and `stream-json` (init, message,
// tool_use, tool_result, error and result events).
type geminiTool struct {
	sawResult bool
	lastError string // a stream error event's message, should no result come
	pending   []byte // streamed assistant text not yet displayed
}

type geminiEvent struct {
	Type      text            `json:"type"`
	SessionID text            `json:"session_id"`
	SessionId text            `json:"sessionId"`
	Response  *text           `json:"response"`
	Stats     *geminiStats    `json:"stats"`
	Error     json.RawMessage `json:"error"`
	Status    text            `json:"status"`
	Severity  text            `json:"severity"`
	Message   text            `json:"message"`
	Role      text            `json:"role"`
	Content   text            `json:"content"`
}

type geminiStats struct {
	Models map[string]struct {
		API struct {
			TotalRequests count `json:"totalRequests"`
		} `json:"api"`
		Tokens struct {
			Prompt     count `json:"prompt"`
			Candidates count `json:"candidates"`
			Cached     count `json:"cached"`
			Thoughts   count `json:"thoughts"`
		} `json:"tokens"`
	} `json:"models"`
	// The stream-json result's totals.
	InputTokens  *count `json:"input_tokens"`
	OutputTokens count  `json:"output_tokens"`
	Input        count  `json:"input"`
	Cached       count  `json:"cached"`
}

// usage reads the stats: per model (summed) when given, else the
// stream-json totals. Output counts candidates and thoughts, which are
// billed as output.
func (s *geminiStats) usage() Usage {
	var u Usage
	if len(s.Models) > 0 {
		for _, m := range s.Models {
			u.TokensIn = addSat(u.TokensIn, int64(m.Tokens.Prompt))
			u.TokensCached = addSat(u.TokensCached, int64(m.Tokens.Cached))
			u.TokensOut = addSat(u.TokensOut, addSat(int64(m.Tokens.Candidates), int64(m.Tokens.Thoughts)))
			u.Turns = int(addSat(int64(u.Turns), int64(m.API.TotalRequests)))
		}
		return u
	}
	if s.InputTokens != nil {
		u.TokensIn = int64(*s.InputTokens)
	} else {
		u.TokensIn = addSat(int64(s.Input), int64(s.Cached))
	}
	u.TokensCached = int64(s.Cached)
	u.TokensOut = int64(s.OutputTokens)
	return u
}

func (t *geminiTool) object(p *Parser, raw []byte) bool {
	var ev geminiEvent
	_ = json.Unmarshal(raw, &ev) // lenient: a field of the wrong type reads as zero
	if id := firstOf(ev.SessionID, ev.SessionId); id != "" {
		p.res.SessionID = id
	}
	if ev.Type != "message" {
		t.flush(p, true)
	}
	switch ev.Type {
	case "":
		errMsg, errPresent := errorMessage(ev.Error)
		if ev.Response == nil && ev.Stats == nil && !errPresent && p.res.SessionID == "" {
			return false
		}
		t.sawResult = true
		if ev.Response != nil {
			p.setText(string(*ev.Response))
		}
		if ev.Stats != nil {
			p.res.Usage = ev.Stats.usage()
		}
		if errPresent {
			t.failure(p, errMsg)
		}
	case "init", "tool_use", "tool_result":
	case "message":
		if ev.Role == "assistant" {
			p.appendText(string(ev.Content))
			t.pending = append(t.pending, ev.Content...)
			if strings.IndexByte(string(ev.Content), '\n') >= 0 || len(t.pending) >= maxPending {
				t.flush(p, false)
			}
		}
	case "error":
		msg := string(ev.Message)
		if msg == "" {
			msg, _ = errorMessage(ev.Error)
		}
		if resumeRefusal(msg) {
			p.refuseResume(msg)
		} else if ev.Severity != "warning" && msg != "" {
			t.lastError = msg
		}
	case "result":
		t.sawResult = true
		if ev.Stats != nil {
			p.res.Usage = ev.Stats.usage()
		}
		errMsg, errPresent := errorMessage(ev.Error)
		if ev.Status == "error" || errPresent {
			t.failure(p, firstOf(text(errMsg), text(t.lastError)))
		}
	default:
		return false
	}
	return true
}

func (t *geminiTool) failure(p *Parser, msg string) {
	if msg == "" {
		msg = "gemini reported an error"
	}
	if resumeRefusal(msg) {
		p.refuseResume(msg)
		return
	}
	p.fail(msg)
}

// maxPending bounds the streamed text held back from display while it
// waits for a line break.
const maxPending = 64 << 10

// flush displays the streamed assistant text up to its last line break,
// or all of it when all is set.
func (t *geminiTool) flush(p *Parser, all bool) {
	i := len(t.pending)
	if !all && i < maxPending {
		i = bytes.LastIndexByte(t.pending, '\n') + 1
	}
	if i == 0 {
		return
	}
	p.show(strings.TrimSuffix(string(t.pending[:i]), "\n"))
	t.pending = append(t.pending[:0], t.pending[i:]...)
}

func (t *geminiTool) text(p *Parser, line string) {
	l := strings.ToLower(line)
	if (strings.Contains(l, "error") || strings.Contains(l, "unknown argument")) && resumeRefusal(line) {
		p.refuseResume(line)
	}
}

func (t *geminiTool) end(p *Parser) {
	t.flush(p, true)
	if !t.sawResult && t.lastError != "" {
		t.failure(p, t.lastError)
	}
}

func firstOf(s ...text) string {
	for _, v := range s {
		if v != "" {
			return string(v)
		}
	}
	return ""
}
