package agents

import (
	"encoding/json"
	"fmt"
)

// Simulate returns what preset would print for a session whose final
// text is text, in conversation session, having used u: the output a
// simulated session (flow test) gives the parser, so that a workflow of
// preset agents is tested through the same parsing as a real run. An
// unknown preset gives text as it is.
func Simulate(preset, text, session string, u Usage) string {
	switch preset {
	case Claude:
		b, _ := json.Marshal(map[string]any{
			"type": "result", "subtype": "success", "is_error": false, "num_turns": u.Turns,
			"result": text, "session_id": session, "total_cost_usd": u.CostUSD,
			"usage": map[string]any{"input_tokens": u.TokensIn - u.TokensCached, "output_tokens": u.TokensOut, "cache_read_input_tokens": u.TokensCached},
		})
		return string(b) + "\n"
	case Codex:
		msg, _ := json.Marshal(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_0", "type": "agent_message", "text": text}})
		out := fmt.Sprintf("{\"type\":\"thread.started\",\"thread_id\":%q}\n%s\n", session, msg)
		// One turn.completed a turn, each with the thread's running total.
		for range max(u.Turns, 1) {
			out += fmt.Sprintf("{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":%d,\"cached_input_tokens\":%d,\"output_tokens\":%d}}\n",
				u.TokensIn, u.TokensCached, u.TokensOut)
		}
		return out
	case Gemini:
		b, _ := json.Marshal(map[string]any{
			"session_id": session, "response": text,
			"stats": map[string]any{"models": map[string]any{"simulated": map[string]any{
				"api":    map[string]any{"totalRequests": u.Turns},
				"tokens": map[string]any{"prompt": u.TokensIn, "candidates": u.TokensOut, "cached": u.TokensCached},
			}}},
		})
		return string(b) + "\n"
	}
	return text
}
