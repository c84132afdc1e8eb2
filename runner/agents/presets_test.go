package agents

import (
	"errors"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"testing"
)

func TestKnownAndNames(t *testing.T) {
	if got := Names(); !reflect.DeepEqual(got, []string{"claude", "codex", "gemini"}) || !slices.IsSorted(got) {
		t.Errorf("Names() = %q", got)
	}
	for _, n := range Names() {
		if !Known(n) {
			t.Errorf("Known(%q) = false", n)
		}
	}
	for _, n := range []string{"", "Claude", "aider", "claude "} {
		if Known(n) {
			t.Errorf("Known(%q) = true", n)
		}
	}
}

func TestCommand(t *testing.T) {
	const prompt = `"$(cat "$FLOW_PROMPT_FILE")"`
	tests := []struct {
		name string
		inv  Invocation
		want string
	}{
		{"claude fresh", Invocation{Preset: Claude},
			`claude -p ` + prompt + ` --output-format json`},
		{"claude resume", Invocation{Preset: Claude, Model: "sonnet", ResumeID: "4f1c2a9e", Args: []string{"--permission-mode", "acceptEdits"}},
			`claude -p ` + prompt + ` --output-format json --model 'sonnet' --resume '4f1c2a9e' '--permission-mode' 'acceptEdits'`},
		{"codex fresh", Invocation{Preset: Codex, Model: "gpt-5-codex", Args: []string{"--full-auto"}},
			`codex exec --json --model 'gpt-5-codex' '--full-auto' ` + prompt},
		{"codex resume", Invocation{Preset: Codex, Model: "m", Args: []string{"arg"}, ResumeID: "0199a213"},
			`codex exec --json --model 'm' 'arg' resume '0199a213' ` + prompt},
		{"gemini fresh", Invocation{Preset: Gemini, Args: []string{"--yolo"}},
			`gemini -p ` + prompt + ` --output-format json '--yolo'`},
		{"gemini resume", Invocation{Preset: Gemini, Model: "gemini-2.5-pro", ResumeID: "c2a0d9f4"},
			`gemini -p ` + prompt + ` --output-format json --model 'gemini-2.5-pro' --resume 'c2a0d9f4'`},
		{"quoting", Invocation{Preset: Claude, Model: "it's", Args: []string{"$HOME", "a b", "`x`", ""}},
			`claude -p ` + prompt + ` --output-format json --model 'it'\''s' '$HOME' 'a b' '` + "`x`" + `' ''`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Command(tt.inv)
			if err != nil || got != tt.want {
				t.Errorf("Command(%+v)\n got %s, %v\nwant %s", tt.inv, got, err, tt.want)
			}
		})
	}
}

func TestCommandErrors(t *testing.T) {
	if _, err := Command(Invocation{Preset: "aider"}); !errors.Is(err, ErrUnknownPreset) {
		t.Errorf("unknown preset: err = %v", err)
	}
	if _, err := Command(Invocation{Preset: Codex, Args: []string{"a\x00b"}}); err == nil {
		t.Error("NUL byte: no error")
	}
}

// TestCommandShellWords checks with a real shell that every quoted
// argument arrives as written and the prompt comes from the file.
func TestCommandShellWords(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	args := []string{"it's", "$HOME", "a  b", "`x`", `"q"`, "\\", "", "new\nline"}
	cmd, err := Command(Invocation{Preset: Codex, Model: "m'1", Args: args, ResumeID: "id 1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := dir + "/prompt"
	if err := os.WriteFile(file, []byte("the prompt\nwith 'quotes' and $VARS\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Replace the tool by a function that prints its arguments.
	script := `codex() { for a in "$@"; do printf '<%s>' "$a"; done; }; ` + cmd
	c := exec.Command(sh, "-c", script)
	c.Env = []string{"FLOW_PROMPT_FILE=" + file, "HOME=/nowhere"}
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "<exec><--json><--model><m'1>"
	for _, a := range args {
		want += "<" + a + ">"
	}
	want += "<resume><id 1><the prompt\nwith 'quotes' and $VARS>"
	if string(out) != want {
		t.Errorf("arguments\n got %q\nwant %q", out, want)
	}
}

// TestSimulate: what Simulate prints parses back to its text, session
// and usage, for every preset.
func TestSimulate(t *testing.T) {
	u := Usage{TokensIn: 1200, TokensOut: 80, TokensCached: 200, Turns: 2}
	for _, preset := range Names() {
		want := u
		if preset == Claude {
			want.CostUSD = 0.5
		}
		p := NewParser(preset, nil)
		_, _ = p.Write([]byte(Simulate(preset, "did it\nPASS", "sess-1", want)))
		r := p.Close()
		want.Sessions = 1
		if r.Text != "did it\nPASS" || r.SessionID != "sess-1" || r.Failed || r.Usage != want {
			t.Errorf("%s: %+v, want usage %+v", preset, r, want)
		}
	}
}
