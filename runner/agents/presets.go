package agents

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The presets.
const (
	Claude = "claude"
	Codex  = "codex"
	Gemini = "gemini"
)

// promptArg is the shell word that expands to the prompt: the contents of
// the file named by $FLOW_PROMPT_FILE (docs/concepts.md, "Sessions").
const promptArg = `"$(cat "$FLOW_PROMPT_FILE")"`

// Known reports whether preset names a preset this package drives.
func Known(preset string) bool {
	switch preset {
	case Claude, Codex, Gemini:
		return true
	}
	return false
}

// Names returns the presets' names, sorted.
func Names() []string {
	names := []string{Claude, Codex, Gemini}
	slices.Sort(names)
	return names
}

// Invocation is one session of a preset.
type Invocation struct {
	Preset   string
	Model    string   // "" leaves the tool's default
	Args     []string // passed through (e.g. --permission-mode, --max-turns)
	ResumeID string   // the tool's session/thread id to continue, or ""
}

// ErrUnknownPreset is returned by Command for a preset it does not know.
var ErrUnknownPreset = errors.New("unknown agent preset")

// Command returns the shell command line (for sh -c) that runs inv. The
// prompt is read from the file named by the environment variable
// FLOW_PROMPT_FILE and passed as the tool's documented prompt argument,
// "$(cat "$FLOW_PROMPT_FILE")"; every other argument is single-quoted.
//
//	claude -p "$(cat "$FLOW_PROMPT_FILE")" --output-format json [--model 'M'] [--resume 'ID'] 'ARG'…
//	codex exec --json [--model 'M'] 'ARG'… "$(cat "$FLOW_PROMPT_FILE")"
//	codex exec --json [--model 'M'] 'ARG'… resume 'ID' "$(cat "$FLOW_PROMPT_FILE")"
//	gemini -p "$(cat "$FLOW_PROMPT_FILE")" --output-format json [--model 'M'] [--resume 'ID'] 'ARG'…
//
// Claude's -p/--print, --output-format, --model and --resume (-r) are
// documented in Claude Code's CLI reference. Codex's `exec resume
// <SESSION_ID> [PROMPT]` is documented for codex exec; the options before
// `resume` belong to exec and are applied to the resumed session by the
// versions examined, but some options (e.g. --output-schema) are not
// accepted on resume. Gemini's --resume (-r) is documented in its session
// management page as taking "latest", an index or a session UUID; older
// versions lack it, and the Parser reports their refusal as
// Result.ResumeRefused.
//
// Command fails for an unknown preset and for a value holding a NUL
// byte, which no shell argument can carry.
func Command(inv Invocation) (string, error) {
	if !Known(inv.Preset) {
		return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownPreset, inv.Preset, strings.Join(Names(), ", "))
	}
	for _, s := range append([]string{inv.Model, inv.ResumeID}, inv.Args...) {
		if strings.IndexByte(s, 0) >= 0 {
			return "", fmt.Errorf("agent %s: argument %q holds a NUL byte", inv.Preset, s)
		}
	}
	var w []string
	model := func() {
		if inv.Model != "" {
			w = append(w, "--model", shellQuote(inv.Model))
		}
	}
	args := func() {
		for _, a := range inv.Args {
			w = append(w, shellQuote(a))
		}
	}
	switch inv.Preset {
	case Claude, Gemini:
		w = append(w, inv.Preset, "-p", promptArg, "--output-format", "json")
		model()
		if inv.ResumeID != "" {
			w = append(w, "--resume", shellQuote(inv.ResumeID))
		}
		args()
	case Codex:
		w = append(w, "codex", "exec", "--json")
		model()
		args()
		if inv.ResumeID != "" {
			w = append(w, "resume", shellQuote(inv.ResumeID))
		}
		w = append(w, promptArg)
	}
	return strings.Join(w, " "), nil
}

// shellQuote returns s as one single-quoted POSIX shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
