package config_test

import (
	"errors"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

// TestSuggestions: the name a diagnostic's did-you-mean hint suggests is
// its Suggestion, whether config or the gates package wrote the hint (in
// an expression, or in a template, whose errors are moved to their place
// in the template); a message without a hint of ours has none.
func TestSuggestions(t *testing.T) {
	const head = "name: x\nvars: {feature: f}\nsteps:\n  - {id: coding, run: r}\n"
	tests := []struct {
		name, format, src string
		msg, suggestion   string
	}{
		{"unknown key", "yaml", "nme: x\nsteps: [{id: a, run: r}]\n",
			`wf.yaml:1:1: unknown key "nme" (did you mean "name"?)`, "name"},
		{"unknown step", "yaml", head + "  - {id: b, run: r, when: 'steps.codng.status == \"\"'}\n",
			`wf.yaml:5:34: when: unknown step "codng" (did you mean "coding"?)`, "coding"},
		{"unknown var in a template", "yaml", head + "  - {id: b, run: 'echo {{ vars.featur }}'}\n",
			`wf.yaml:5:32: run: unknown var "featur" (did you mean "feature"?)`, "feature"},
		{"unknown field", "yaml", head + "  - {id: b, run: r, when: 'steps.coding.statuss == \"\"'}\n",
			`wf.yaml:5:41: when: unknown field "statuss" of step "coding" (did you mean "status"?)`, "status"},
		{"unknown name", "yaml", head + "  - {id: b, run: r, when: signal.PASS}\n",
			`wf.yaml:5:27: when: unknown name "signal" (did you mean "signals"?)`, "signals"},
		{"unknown step, no hint", "yaml", head + "  - {id: b, run: r, when: 'steps.zzzzzz.status == \"\"'}\n",
			`wf.yaml:5:34: when: unknown step "zzzzzz"`, ""},
		{"unknown preset", "yaml", "name: x\nagents: {a: {preset: claud}}\nsteps: [{id: s, prompt: p, agent: a}]\n",
			`wf.yaml:2:22: agent "a": unknown preset "claud" (did you mean "claude"?)`, "claude"},
		{"unknown preset, no hint", "yaml", "name: x\nagents: {a: {preset: copilot}}\nsteps: [{id: s, prompt: p, agent: a}]\n",
			`wf.yaml:2:22: agent "a": unknown preset "copilot"; want claude, codex or gemini`, ""},
		{"HCL's own hint", "hcl", "name = \"x\" & \"y\"\n",
			`wf.hcl:1:12: hcl: Unsupported operator: Bitwise operators are not supported. Did you mean boolean AND ("&&")?`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse(afero.NewMemMapFs(), "wf."+tt.format, tt.format, []byte(tt.src))
			var ds config.Diagnostics
			if !errors.As(err, &ds) {
				t.Fatalf("err = %v, want diagnostics", err)
			}
			if d := ds[0]; d.String() != tt.msg || d.Suggestion != tt.suggestion {
				t.Errorf("got %s (suggesting %q)\nwant %s (suggesting %q)", d, d.Suggestion, tt.msg, tt.suggestion)
			}
		})
	}
}

// TestPosString: a position reads file:line:col, as every diagnostic
// starts.
func TestPosString(t *testing.T) {
	for _, tt := range []struct {
		pos  config.Pos
		want string
	}{
		{config.Pos{File: "wf.yaml", Line: 3, Col: 7}, "wf.yaml:3:7"},
		{config.Pos{File: "/a b/wf.hcl", Line: 12, Col: 1}, "/a b/wf.hcl:12:1"},
		{config.Pos{}, ":0:0"},
	} {
		if got := tt.pos.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.pos, got, tt.want)
		}
	}
}
