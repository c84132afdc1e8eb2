package agents

import (
	"encoding/json"
	"strings"
)

// claudeTool reads Claude Code's `--output-format json` (one result
// object) and `stream-json` (system, assistant, user, … and a last result
// object).
type claudeTool struct {
	sawResult bool
	lastText  string // the last assistant text, should no result come
}

type claudeEvent struct {
	Type         text            `json:"type"`
	Subtype      text            `json:"subtype"`
	IsError      flag            `json:"is_error"`
	Result       *text           `json:"result"`
	SessionID    text            `json:"session_id"`
	TotalCostUSD *dollars        `json:"total_cost_usd"`
	CostUSD      *dollars        `json:"cost_usd"`
	NumTurns     count           `json:"num_turns"`
	Errors       json.RawMessage `json:"errors"`
	Usage        struct {
		InputTokens              count `json:"input_tokens"`
		OutputTokens             count `json:"output_tokens"`
		CacheReadInputTokens     count `json:"cache_read_input_tokens"`
		CacheCreationInputTokens count `json:"cache_creation_input_tokens"`
	} `json:"usage"`
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

func (t *claudeTool) object(p *Parser, raw []byte) bool {
	var ev claudeEvent
	_ = json.Unmarshal(raw, &ev) // lenient: a field of the wrong type reads as zero
	if ev.SessionID != "" {
		p.res.SessionID = string(ev.SessionID)
	}
	switch ev.Type {
	case "result":
		t.result(p, &ev)
	case "assistant":
		if s := claudeText(ev.Message.Content); s != "" {
			t.lastText = s
			p.show(s)
		}
	case "system", "user", "stream_event":
	case "":
		// Versions before `type` was added: a result is one with a
		// result and a session id.
		if ev.Result == nil || ev.SessionID == "" {
			return false
		}
		t.result(p, &ev)
	default:
		return ev.SessionID != ""
	}
	return true
}

func (t *claudeTool) result(p *Parser, ev *claudeEvent) {
	t.sawResult = true
	if ev.Result != nil {
		p.setText(string(*ev.Result))
	}
	u := &p.res.Usage
	switch {
	case ev.TotalCostUSD != nil:
		u.CostUSD = float64(*ev.TotalCostUSD)
	case ev.CostUSD != nil:
		u.CostUSD = float64(*ev.CostUSD)
	}
	in := addSat(int64(ev.Usage.InputTokens), int64(ev.Usage.CacheCreationInputTokens))
	u.TokensIn = addSat(in, int64(ev.Usage.CacheReadInputTokens))
	u.TokensCached = int64(ev.Usage.CacheReadInputTokens)
	u.TokensOut = int64(ev.Usage.OutputTokens)
	u.Turns = int(ev.NumTurns)

	failed := bool(ev.IsError) || (ev.Subtype != "" && ev.Subtype != "success")
	if !failed {
		return
	}
	var msg string
	if errs := errorList(ev.Errors); errs != "" {
		msg = errs
	} else if ev.Result != nil && *ev.Result != "" {
		msg = string(*ev.Result)
	} else if ev.Subtype != "" {
		msg = string(ev.Subtype)
	} else {
		msg = "claude reported an error"
	}
	if strings.Contains(strings.ToLower(msg), "no conversation found") {
		p.refuseResume(msg)
		return
	}
	p.fail(msg)
}

func (t *claudeTool) text(p *Parser, line string) {
	if strings.Contains(strings.ToLower(line), "no conversation found") {
		p.refuseResume(line)
	}
}

func (t *claudeTool) end(p *Parser) {
	if !t.sawResult && t.lastText != "" {
		p.setText(t.lastText)
	}
}

// claudeText joins the text blocks of a message's content (a string, or
// an array of blocks of which those of type text count).
func claudeText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type text `json:"type"`
		Text text `json:"text"`
	}
	_ = json.Unmarshal(content, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, string(b.Text))
		}
	}
	return strings.Join(parts, "\n")
}

// errorList joins an `errors` field: strings, or objects with a message.
func errorList(raw json.RawMessage) string {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		m, _ := errorMessage(raw)
		return m
	}
	var msgs []string
	for _, it := range items {
		if m, _ := errorMessage(it); m != "" {
			msgs = append(msgs, m)
		}
	}
	return strings.Join(msgs, "; ")
}
