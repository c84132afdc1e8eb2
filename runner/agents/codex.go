package agents

import (
	"encoding/json"
	"strings"
)

// codexTool reads `codex exec --json`: JSON Lines of thread.started,
// turn.started, turn.completed, turn.failed, item.started, item.updated,
// item.completed and error events.
type codexTool struct {
	started map[string]bool // command items already shown
}

type codexEvent struct {
	Type     text            `json:"type"`
	ThreadID text            `json:"thread_id"`
	Message  text            `json:"message"`
	Error    json.RawMessage `json:"error"`
	Item     struct {
		ID       text `json:"id"`
		Type     text `json:"type"`
		ItemType text `json:"item_type"`
		Text     text `json:"text"`
		Command  text `json:"command"`
	} `json:"item"`
	Usage struct {
		InputTokens       count `json:"input_tokens"`
		CachedInputTokens count `json:"cached_input_tokens"`
		OutputTokens      count `json:"output_tokens"`
	} `json:"usage"`
}

func (t *codexTool) object(p *Parser, raw []byte) bool {
	var ev codexEvent
	_ = json.Unmarshal(raw, &ev) // lenient: a field of the wrong type reads as zero
	switch ev.Type {
	case "thread.started":
		if ev.ThreadID != "" {
			p.res.SessionID = string(ev.ThreadID)
		}
	case "turn.started":
	case "turn.completed":
		// The usage is the thread's total so far, not the turn's: keep
		// the last (see doc.go).
		p.res.Usage.TokensIn = int64(ev.Usage.InputTokens)
		p.res.Usage.TokensCached = int64(ev.Usage.CachedInputTokens)
		p.res.Usage.TokensOut = int64(ev.Usage.OutputTokens)
		p.res.Usage.Turns++
		p.res.UsageCumulative = true
	case "turn.failed":
		msg, _ := errorMessage(ev.Error)
		if msg == "" {
			msg = "codex turn failed"
		}
		t.failure(p, msg)
	case "error":
		msg := string(ev.Message)
		if msg == "" {
			msg, _ = errorMessage(ev.Error)
		}
		if transient(msg) {
			return true
		}
		if msg == "" {
			msg = "codex reported an error"
		}
		t.failure(p, msg)
	case "item.started", "item.updated", "item.completed":
		t.item(p, &ev)
	default:
		return false
	}
	return true
}

func (t *codexTool) item(p *Parser, ev *codexEvent) {
	kind := ev.Item.Type
	if kind == "" {
		kind = ev.Item.ItemType
	}
	switch kind {
	case "agent_message", "assistant_message":
		if ev.Type == "item.completed" {
			p.setText(string(ev.Item.Text))
			p.show(string(ev.Item.Text))
		}
	case "command_execution":
		id := string(ev.Item.ID)
		if ev.Type == "item.started" || !t.started[id] {
			if id != "" {
				t.started[id] = true
			}
			p.show("$ " + string(ev.Item.Command))
		}
	}
}

func (t *codexTool) failure(p *Parser, msg string) {
	if resumeRefusal(msg) {
		p.refuseResume(msg)
		return
	}
	p.fail(msg)
}

func (t *codexTool) text(p *Parser, line string) {
	l := strings.ToLower(line)
	if strings.Contains(l, "error") && resumeRefusal(line) {
		p.refuseResume(line)
	}
}

func (t *codexTool) end(*Parser) {}

// transient reports whether a codex error is a retry in progress
// ("Reconnecting... 2/5") rather than a failure.
func transient(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "reconnecting")
}
