package agents

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// parse feeds out to a new parser of preset in one write and returns
// the result and what was displayed.
func parse(preset string, out []byte) (Result, []string) {
	var shown []string
	p := NewParser(preset, func(s string) { shown = append(shown, s) })
	p.Write(out)
	return p.Close(), shown
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file   string
		preset string
		want   Result
		shown  []string
	}{
		{
			file: "claude_success.json", preset: Claude,
			want: Result{
				Text: "Wrote the tokenizer.\nDONE", SessionID: "7d0e5b1c-3a42-4f0e-b6c1-90aa12e4c001",
				Usage:      Usage{TokensIn: 1200 + 400 + 9000, TokensOut: 310, TokensCached: 9000, CostUSD: 0.0412, Turns: 3, Sessions: 1},
				Structured: true,
			},
			shown: []string{"Wrote the tokenizer.\nDONE"},
		},
		{
			file: "claude_stream.jsonl", preset: Claude,
			want: Result{
				Text: "All green.\nPASS", SessionID: "5a9f7c2e-1111-4c4c-8d8d-abcdefabcdef",
				Usage:      Usage{TokensIn: 1050, TokensOut: 20, TokensCached: 1000, CostUSD: 0.0105, Turns: 2, Sessions: 1},
				Structured: true,
			},
			shown: []string{"Looking at the tests first.", "All green.\nPASS"},
		},
		{
			file: "claude_max_turns.json", preset: Claude,
			want: Result{
				SessionID: "0b5e6f21-2222-4e4e-9f9f-123412341234",
				Usage:     Usage{TokensIn: 10, TokensOut: 5, CostUSD: 0.2, Turns: 5, Sessions: 1},
				Failed:    true, Error: "error_max_turns", Structured: true,
			},
		},
		{
			file: "claude_is_error.json", preset: Claude,
			want: Result{
				Text: "API Error: 529 overloaded", SessionID: "0b5e6f21-3333-4e4e-9f9f-123412341234",
				Usage:  Usage{Turns: 1, Sessions: 1},
				Failed: true, Error: "API Error: 529 overloaded", Structured: true,
			},
			shown: []string{"API Error: 529 overloaded"},
		},
		{
			file: "claude_resume_refused.txt", preset: Claude,
			want: Result{
				Failed: true, ResumeRefused: true,
				Error: "No conversation found with session ID: 4f1c2a9e-dead-beef-9a51-2c6f0e3b7a10",
			},
		},
		{
			file: "claude_resume_refused_result.json", preset: Claude,
			want: Result{
				SessionID: "e1e1e1e1-0000-4000-8000-000000000000",
				Usage:     Usage{Sessions: 1},
				Failed:    true, ResumeRefused: true, Structured: true,
				Error: "No conversation found with session ID: 4f1c2a9e-dead-beef-9a51-2c6f0e3b7a10",
			},
		},
		{
			file: "claude_old_cost.json", preset: Claude,
			want: Result{
				Text: "hello", SessionID: "aa11bb22-0000-4000-8000-000000000001",
				Usage:      Usage{CostUSD: 0.003, Turns: 1, Sessions: 1},
				Structured: true,
			},
			shown: []string{"hello"},
		},
		{
			file: "claude_verbose_array.json", preset: Claude,
			want: Result{
				Text: "Done.\nDONE", SessionID: "ab000000-0000-4000-8000-000000000002",
				Usage:      Usage{TokensIn: 3, TokensOut: 4, CostUSD: 0.001, Turns: 1, Sessions: 1},
				Structured: true,
			},
			shown: []string{"Done.\nDONE"},
		},
		{
			file: "claude_noise.txt", preset: Claude,
			want: Result{
				Text: "quiet\nDONE", SessionID: "cd000000-0000-4000-8000-000000000003",
				Usage:      Usage{TokensIn: 7, TokensOut: 8, CostUSD: 0.002, Turns: 1, Sessions: 1},
				Structured: true,
			},
			shown: []string{"quiet\nDONE"},
		},
		{
			file: "claude_unterminated.json", preset: Claude,
			want: Result{
				Text: "no newline at end", SessionID: "ef000000-0000-4000-8000-000000000004",
				Usage:      Usage{TokensIn: 1, TokensOut: 2, CostUSD: 0.5, Turns: 1, Sessions: 1},
				Structured: true,
			},
			shown: []string{"no newline at end"},
		},
		{
			file: "codex_success.jsonl", preset: Codex,
			want: Result{
				Text: "Vet is clean.\nDONE", SessionID: "01990000-aaaa-7000-8000-00000000c0de",
				Usage:           Usage{TokensIn: 30000, TokensOut: 400, TokensCached: 25000, Turns: 1, Sessions: 1},
				UsageCumulative: true, Structured: true,
			},
			shown: []string{"$ bash -lc 'go vet ./...'", "First draft.", "$ make test", "Vet is clean.\nDONE"},
		},
		{
			file: "codex_old_items.jsonl", preset: Codex,
			want: Result{
				Text: "Old shape.\nPASS", SessionID: "01990000-bbbb-7000-8000-00000000c0de",
				Usage:           Usage{TokensIn: 100, TokensOut: 10, Turns: 1, Sessions: 1},
				UsageCumulative: true, Structured: true,
			},
			shown: []string{"Old shape.\nPASS"},
		},
		{
			file: "codex_turn_failed.jsonl", preset: Codex,
			want: Result{
				SessionID: "01990000-cccc-7000-8000-00000000c0de", Usage: Usage{Sessions: 1},
				Failed: true, Error: "stream disconnected before completion", Structured: true,
			},
		},
		{
			file: "codex_error.jsonl", preset: Codex,
			want: Result{
				SessionID: "01990000-dddd-7000-8000-00000000c0de", Usage: Usage{Sessions: 1},
				Failed: true, Error: "unexpected status 401 Unauthorized", Structured: true,
			},
		},
		{
			file: "codex_reconnected.jsonl", preset: Codex,
			want: Result{
				Text: "Recovered.\nDONE", SessionID: "01990000-eeee-7000-8000-00000000c0de",
				Usage:           Usage{TokensIn: 500, TokensOut: 50, TokensCached: 100, Turns: 1, Sessions: 1},
				UsageCumulative: true, Structured: true,
			},
			shown: []string{"Recovered.\nDONE"},
		},
		{
			file: "codex_resume_refused.txt", preset: Codex,
			want: Result{
				Failed: true, ResumeRefused: true,
				Error: "Error: thread/resume failed: no rollout found for thread id 01990000-ffff-7000-8000-00000000c0de",
			},
		},
		{
			file: "codex_resume_refused.jsonl", preset: Codex,
			want: Result{
				Usage:  Usage{Sessions: 1},
				Failed: true, ResumeRefused: true, Structured: true,
				Error: "session not found: 01990000-ffff-7000-8000-00000000c0de",
			},
		},
		{
			file: "gemini_success.json", preset: Gemini,
			want: Result{
				Text: "Looks good.\nPASS", SessionID: "9e8d7c6b-0000-4000-8000-00000000ge01",
				Usage:      Usage{TokensIn: 1800, TokensOut: 340, TokensCached: 600, Turns: 3, Sessions: 1},
				Structured: true,
			},
			shown: []string{"Looks good.\nPASS"},
		},
		{
			file: "gemini_error.json", preset: Gemini,
			want: Result{
				SessionID: "9e8d7c6b-0000-4000-8000-00000000ge02", Usage: Usage{Sessions: 1},
				Failed: true, Error: "Quota exceeded for model gemini-2.5-pro", Structured: true,
			},
		},
		{
			file: "gemini_resume_refused.json", preset: Gemini,
			want: Result{
				Usage:  Usage{Sessions: 1},
				Failed: true, ResumeRefused: true, Structured: true,
				Error: `Invalid session identifier "c2a0d9f4-0000-4000-8000-000000000bad". Use --list-sessions to see available sessions.`,
			},
		},
		{
			file: "gemini_resume_refused.txt", preset: Gemini,
			want: Result{
				Failed: true, ResumeRefused: true,
				Error: "Error resuming session: No session found with ID c2a0d9f4-0000-4000-8000-000000000bad",
			},
		},
		{
			file: "gemini_old_resume.txt", preset: Gemini,
			want: Result{Failed: true, ResumeRefused: true, Error: "Unknown arguments: resume, r"},
		},
		{
			file: "gemini_stream.jsonl", preset: Gemini,
			want: Result{
				Text: "Reading the code.\nFine.\nPASS", SessionID: "9e8d7c6b-0000-4000-8000-00000000ge03",
				Usage:      Usage{TokensIn: 2400, TokensOut: 200, TokensCached: 1000, Sessions: 1},
				Structured: true,
			},
			shown: []string{"Reading the code.", "Fine.", "PASS"},
		},
		{
			file: "gemini_stream_error.jsonl", preset: Gemini,
			want: Result{
				SessionID: "9e8d7c6b-0000-4000-8000-00000000ge04",
				Usage:     Usage{TokensIn: 8, TokensOut: 2, Sessions: 1},
				Failed:    true, Error: "Reached max session turns", Structured: true,
			},
		},
		{
			file: "gemini_noise.txt", preset: Gemini,
			want: Result{
				Text: "Braces { in [ text ] \" }\nDONE", SessionID: "9e8d7c6b-0000-4000-8000-00000000ge05",
				Usage:      Usage{TokensIn: 10, TokensOut: 5, Turns: 1, Sessions: 1},
				Structured: true,
			},
			shown: []string{"Braces { in [ text ] \" }\nDONE"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, shown := parse(tt.preset, fixture(t, tt.file))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("result\n got %+v\nwant %+v", got, tt.want)
			}
			if !reflect.DeepEqual(shown, tt.shown) {
				t.Errorf("displayed\n got %q\nwant %q", shown, tt.shown)
			}
			for _, s := range shown {
				if strings.HasPrefix(strings.TrimSpace(s), "{") {
					t.Errorf("displayed raw JSON %q", s)
				}
			}
		})
	}
}

// TestSplitWrites feeds fixtures in two writes split at every byte, and
// one byte at a time: the result must not depend on how output arrives.
func TestSplitWrites(t *testing.T) {
	for _, c := range []struct{ file, preset string }{
		{"codex_success.jsonl", Codex},
		{"gemini_success.json", Gemini},
		{"claude_stream.jsonl", Claude},
	} {
		t.Run(c.file, func(t *testing.T) {
			out := fixture(t, c.file)
			want, wantShown := parse(c.preset, out)
			for i := 0; i <= len(out); i++ {
				var shown []string
				p := NewParser(c.preset, func(s string) { shown = append(shown, s) })
				p.Write(out[:i])
				p.Write(out[i:])
				if got := p.Close(); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(shown, wantShown) {
					t.Fatalf("split at %d:\n got %+v %q\nwant %+v %q", i, got, shown, want, wantShown)
				}
			}
			p := NewParser(c.preset, nil)
			for i := range out {
				p.Write(out[i : i+1])
			}
			if got := p.Close(); !reflect.DeepEqual(got, want) {
				t.Fatalf("byte at a time:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestLongLines(t *testing.T) {
	t.Run("over-long noise line is skipped", func(t *testing.T) {
		noise := bytes.Repeat([]byte("x"), 3*MaxLine)
		out := append(append(noise, '\n'), fixture(t, "codex_success.jsonl")...)
		p := NewParser(Codex, nil)
		for len(out) > 0 { // in pieces, as a pipe delivers it
			n := min(len(out), 4096)
			p.Write(out[:n])
			out = out[n:]
		}
		got := p.Close()
		if got.Text != "Vet is clean.\nDONE" || got.SessionID == "" {
			t.Errorf("after a long line: %+v", got)
		}
		if got.Skipped != int64(len(noise)) {
			t.Errorf("Skipped = %d, want %d", got.Skipped, len(noise))
		}
	})
	t.Run("over-long JSON line is lost", func(t *testing.T) {
		line := `{"type":"item.completed","item":{"type":"agent_message","text":"` + strings.Repeat("a", MaxLine) + `"}}`
		got, _ := parse(Codex, []byte(line+"\n"))
		if got.Text != "" || got.Structured || got.Skipped != int64(len(line)) {
			t.Errorf("got Text %d bytes, Structured %v, Skipped %d; want lost line of %d", len(got.Text), got.Structured, got.Skipped, len(line))
		}
	})
	t.Run("final text is cut at MaxText on a rune boundary", func(t *testing.T) {
		chunk := strings.Repeat("é", MaxText/4+1) // 2 bytes a rune
		p := NewParser(Gemini, nil)
		// One byte first, so that MaxText falls inside a rune.
		p.Write([]byte(`{"type":"message","role":"assistant","content":"a","delta":true}` + "\n"))
		for range 3 {
			p.Write([]byte(`{"type":"message","role":"assistant","content":"` + chunk + `","delta":true}` + "\n"))
		}
		got := p.Close()
		if len(got.Text) != MaxText-1 || !utf8.ValidString(got.Text) {
			t.Errorf("Text is %d bytes (valid UTF-8: %v), want %d", len(got.Text), utf8.ValidString(got.Text), MaxText-1)
		}
		if want := int64(1 + 3*len(chunk) - len(got.Text)); got.Skipped != want {
			t.Errorf("Skipped = %d, want %d", got.Skipped, want)
		}
	})
	t.Run("many small deltas take linear time", func(t *testing.T) {
		// 100k deltas make 1.6 MB of text: copying the text, or
		// scanning what is held back from display, on each delta would
		// move tens of GB.
		line := []byte(`{"type":"message","role":"assistant","content":"abcdefghijklmno ","delta":true}` + "\n")
		out := bytes.Repeat(line, 100_000)
		got, shown := parse(Gemini, out)
		if len(got.Text) != MaxText || got.Skipped != int64(16*100_000-MaxText) {
			t.Errorf("Text %d bytes, Skipped %d", len(got.Text), got.Skipped)
		}
		if n := len(strings.Join(shown, "")); n != 16*100_000 {
			t.Errorf("displayed %d bytes, want all %d", n, 16*100_000)
		}
	})
	t.Run("unterminated value at close", func(t *testing.T) {
		got, _ := parse(Gemini, []byte("{\n  \"response\": \"half"))
		if got.Structured || got.Text != "" {
			t.Errorf("got %+v", got)
		}
	})
}

func TestParserEdges(t *testing.T) {
	t.Run("unknown preset", func(t *testing.T) {
		got, shown := parse("aider", fixture(t, "claude_success.json"))
		if !reflect.DeepEqual(got, Result{}) || shown != nil {
			t.Errorf("got %+v %q", got, shown)
		}
	})
	t.Run("close twice and write after close", func(t *testing.T) {
		p := NewParser(Claude, nil)
		p.Write(fixture(t, "claude_success.json"))
		a := p.Close()
		p.Write([]byte(`{"type":"result","result":"later","session_id":"x"}` + "\n"))
		if b := p.Close(); !reflect.DeepEqual(a, b) {
			t.Errorf("second Close %+v, first %+v", b, a)
		}
	})
	t.Run("wrong types read as zero", func(t *testing.T) {
		got, _ := parse(Claude, []byte(`{"type":"result","subtype":7,"is_error":"false","result":{"x":1},"session_id":"s","total_cost_usd":"0.5","num_turns":2.0,"usage":{"input_tokens":"12","output_tokens":-3,"cache_read_input_tokens":null}}`))
		want := Result{SessionID: "s", Usage: Usage{TokensIn: 12, CostUSD: 0.5, Turns: 2, Sessions: 1}, Structured: true}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v\nwant %+v", got, want)
		}
	})
	t.Run("no result: last assistant text", func(t *testing.T) {
		out := fixture(t, "claude_stream.jsonl")
		out = out[:bytes.LastIndex(out[:len(out)-1], []byte("\n"))+1] // drop the result line
		got, _ := parse(Claude, out)
		if got.Text != "All green.\nPASS" || got.Failed {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("gemini stream error without result fails", func(t *testing.T) {
		got, _ := parse(Gemini, []byte(`{"type":"init","session_id":"g"}`+"\n"+`{"type":"error","severity":"error","message":"API key not valid"}`+"\n"))
		if !got.Failed || got.Error != "API key not valid" || got.ResumeRefused {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("assistant talk of sessions is not a refusal", func(t *testing.T) {
		got, _ := parse(Claude, []byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"No conversation found with session ID is a message"}]}}`+"\n"))
		if got.ResumeRefused || got.Failed {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("CRLF line ends", func(t *testing.T) {
		out := bytes.ReplaceAll(fixture(t, "codex_success.jsonl"), []byte("\n"), []byte("\r\n"))
		got, _ := parse(Codex, out)
		if got.Text != "Vet is clean.\nDONE" {
			t.Errorf("got %+v", got)
		}
	})
}

func TestResumeRefusal(t *testing.T) {
	for msg, want := range map[string]bool{
		"No conversation found with session ID: abc": true,
		"no rollout found for thread id 0199":        true,
		"session not found":                          true,
		"Thread 0199 not found":                      true,
		`Invalid session identifier "x"`:             true,
		"Unknown arguments: resume, r":               true,
		"unexpected status 401 Unauthorized":         false,
		"stream disconnected before completion":      false,
		"Reached max session turns":                  false,
		"file not found: main.go":                    false,
		"no such file or directory":                  false,
	} {
		if got := resumeRefusal(msg); got != want {
			t.Errorf("resumeRefusal(%q) = %v, want %v", msg, got, want)
		}
	}
}
