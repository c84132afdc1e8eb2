package local

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
	"github.com/spf13/afero"
)

const presetWorkflow = `
name: presets
agents:
  coder: {preset: claude, model: sonnet}
  reviewer: {preset: codex, price: {input_per_mtok: 2, output_per_mtok: 10, cached_per_mtok: 0.5}}
steps:
  - id: code
    agent: coder
    prompt: write it
  - id: review
    agent: reviewer
    prompt: review it
    gate: {pass: verdict == "PASS", loop_back_to: code}
`

// claudeResult is what a fake claude prints: one result object.
func claudeResult(text, session string, cost float64) string {
	return fmt.Sprintf(`{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":%q,"session_id":%q,"total_cost_usd":%v,"usage":{"input_tokens":1000,"output_tokens":100,"cache_read_input_tokens":400}}`+"\n", text, session, cost)
}

// codexResult is what a fake codex prints: its JSONL events, with the
// thread's running total of tokens.
func codexResult(text, thread string, in, cached, out int) string {
	return fmt.Sprintf(`{"type":"thread.started","thread_id":%q}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":%q}}
{"type":"turn.completed","usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d}}
`, thread, text, in, cached, out)
}

// TestPresets runs a claude coder and a codex reviewer: the reviewer's
// FAIL, read from its JSON, loops back; the coder continues its
// conversation with the feedback as the prompt; usage is summed per
// step and per run, codex's priced (estimated) and its running total
// counted once.
func TestPresets(t *testing.T) {
	e := newEnv(t, presetWorkflow)
	var mu sync.Mutex
	reviews := 0
	s := &scripted{fn: func(c call) reply {
		mu.Lock()
		defer mu.Unlock()
		switch c.Step {
		case "code":
			if strings.Contains(c.Command, "--resume") {
				return reply{Out: claudeResult("fixed it\nDONE", "conv-1", 0.2)}
			}
			return reply{Out: claudeResult("wrote it\nDONE", "conv-1", 0.3)}
		case "review":
			reviews++
			if reviews == 1 {
				return reply{Out: "Reconnecting... 1/5\n" + codexResult("tests are missing\nFAIL", "th-1", 10000, 8000, 100)}
			}
			return reply{Out: codexResult("good\nPASS", "th-2", 20000, 16000, 300)}
		}
		return reply{}
	}}
	res := e.run(s, spec.Options{})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s\n%s", res.ExitCode, res.Reason, e.out.String())
	}
	var codes []call
	for _, c := range s.calls {
		if c.Step == "code" {
			codes = append(codes, c)
		}
	}
	if len(codes) != 2 || strings.Contains(codes[0].Command, "--resume") || !strings.Contains(codes[1].Command, "--resume 'conv-1'") ||
		!strings.Contains(codes[0].Command, "--model 'sonnet'") {
		t.Fatalf("code commands: %q", []string{codes[0].Command, codes[1].Command})
	}
	sent, _ := afero.ReadFile(e.fs, codes[1].Env["FLOW_PROMPT_FILE"])
	if !strings.HasPrefix(string(sent), "Your previous work was sent back by review: gate.pass is false") || strings.Contains(string(sent), "write it") {
		t.Errorf("the resumed session was sent %q", sent)
	}
	st := e.state(e.fs)
	code := st.Steps[keytest.K("code")]
	if code.AgentSession != "conv-1" || code.Usage == nil || code.Usage.Sessions != 2 || code.Usage.CostUSD != 0.5 || code.Usage.TokensIn != 2800 {
		t.Errorf("code: session %q usage %+v", code.AgentSession, code.Usage)
	}
	rev := st.Steps[keytest.K("review")].Usage
	// Two threads: 10000+20000 in (24000 cached), 400 out, priced at
	// (6000*2 + 24000*0.5 + 400*10) / 1e6.
	if rev == nil || rev.TokensIn != 30000 || rev.TokensCached != 24000 || rev.TokensOut != 400 || !rev.CostEstimated || fmt.Sprintf("%.4f", rev.CostUSD) != "0.0280" {
		t.Errorf("review usage %+v", rev)
	}
	if st.Usage == nil || st.Usage.Sessions != 4 || !st.Usage.CostEstimated {
		t.Errorf("run usage %+v", st.Usage)
	}
	// The log keeps the tool's raw output.
	if b, _ := afero.ReadFile(e.fs, filepath.Join(record.RunDir(repo, "r1"), record.LogsDir, "review.0.1.log")); !strings.Contains(string(b), `"type":"turn.completed"`) {
		t.Errorf("review log: %s", b)
	}
}

// TestPresetResumeRefused: when the tool no longer knows the
// conversation, the same attempt starts a new one with the whole prompt
// and the feedback, and says so in a warning.
func TestPresetResumeRefused(t *testing.T) {
	e := newEnv(t, presetWorkflow)
	var mu sync.Mutex
	reviews := 0
	s := &scripted{fn: func(c call) reply {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case c.Step == "code" && strings.Contains(c.Command, "--resume"):
			return reply{Out: "No conversation found with session ID: conv-1\n", Exit: 1}
		case c.Step == "code":
			return reply{Out: claudeResult("wrote it\nDONE", fmt.Sprintf("conv-%d", len(c.Env)), 0.1)}
		}
		reviews++
		if reviews == 1 {
			return reply{Out: codexResult("FAIL", "th-1", 1, 0, 1)}
		}
		return reply{Out: codexResult("PASS", "th-2", 1, 0, 1)}
	}}
	res := e.run(s, spec.Options{})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s\n%s", res.ExitCode, res.Reason, e.out.String())
	}
	var cmds []string
	var fresh call
	for _, c := range s.calls {
		if c.Step == "code" {
			cmds = append(cmds, c.Command)
			fresh = c
		}
	}
	if len(cmds) != 3 || !strings.Contains(cmds[1], "--resume") || strings.Contains(cmds[2], "--resume") {
		t.Fatalf("code commands %q", cmds)
	}
	whole, _ := afero.ReadFile(e.fs, fresh.Env["FLOW_PROMPT_FILE"])
	if !strings.HasPrefix(string(whole), "write it") || !strings.Contains(string(whole), "sent back by review") {
		t.Errorf("the fresh session was sent %q", whole)
	}
	if st := e.state(e.fs); st.Steps[keytest.K("code")].Attempts != 1 || st.Steps[keytest.K("code")].IterationCount != 1 {
		t.Errorf("code: attempts %d iteration %d", st.Steps[keytest.K("code")].Attempts, st.Steps[keytest.K("code")].IterationCount)
	}
	if !strings.Contains(e.out.String(), "claude refused to resume conversation") {
		t.Errorf("no warning:\n%s", e.out.String())
	}
}

// TestPresetToolError: a tool that reports an error fails the session,
// though it exits 0; the retry continues the conversation and says how
// the last attempt failed.
func TestPresetToolError(t *testing.T) {
	e := newEnv(t, presetWorkflow)
	n := 0
	s := &scripted{fn: func(c call) reply {
		if c.Step == "code" {
			n++
			if n == 1 {
				return reply{Out: `{"type":"result","subtype":"error_max_turns","is_error":true,"result":"ran out of turns","session_id":"conv-9"}` + "\n"}
			}
			return reply{Out: claudeResult("done\nDONE", "conv-9", 0.1)}
		}
		return reply{Out: codexResult("PASS", "th", 1, 0, 1)}
	}}
	if res := e.run(s, spec.Options{}); res.ExitCode != 0 {
		t.Fatalf("exit %d: %s\n%s", res.ExitCode, res.Reason, e.out.String())
	}
	if !strings.Contains(e.out.String(), "code: attempt 1 failed: session: claude reported an error: ran out of turns") {
		t.Errorf("output:\n%s", e.out.String())
	}
	second := s.calls[1]
	sent, _ := afero.ReadFile(e.fs, second.Env["FLOW_PROMPT_FILE"])
	if !strings.Contains(second.Command, "--resume 'conv-9'") || !strings.HasPrefix(string(sent), "Your previous attempt at this failed: session: claude reported an error") {
		t.Errorf("retry: %q sent %q", second.Command, sent)
	}
}
