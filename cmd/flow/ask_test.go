package main

import (
	"bufio"
	"maps"
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/ops"
)

func TestAsker(t *testing.T) {
	declared := []config.Input{
		{Name: "ticket", Description: "Jira ticket", Required: true},
		{Name: "env", Default: "staging"},
	}
	tests := []struct {
		name     string
		inputs   []config.Input
		input    string
		ok       bool
		approved bool
		reason   string
		given    map[string]any
		printed  []string
	}{
		{name: "yes", input: "y\n", ok: true, approved: true, given: map[string]any{}},
		{name: "asks again until it understands", input: "maybe\nYES\n", ok: true, approved: true, given: map[string]any{}},
		{name: "no with a reason", input: "n\nthe tests are red\n", ok: true, reason: "the tests are red"},
		{name: "end of input is no answer", input: ""},
		{name: "yes with every input", inputs: declared, input: "y\nOPS-12\nprod\n", ok: true, approved: true,
			given:   map[string]any{"ticket": "OPS-12", "env": "prod"},
			printed: []string{"ticket (Jira ticket; required): ", "env (default staging): "}},
		{name: "an empty answer leaves the default", inputs: declared, input: "y\nOPS-12\n\n", ok: true, approved: true,
			given: map[string]any{"ticket": "OPS-12"}},
		{name: "a required input is asked again", inputs: declared, input: "y\n\n  \nOPS-12\nprod\n", ok: true, approved: true,
			given: map[string]any{"ticket": "OPS-12", "env": "prod"}, printed: []string{"ticket is required"}},
		{name: "a rejection needs no inputs", inputs: declared, input: "n\nnot now\n", ok: true, reason: "not now"},
		{name: "the input ends before the inputs", inputs: declared, input: "y\nOPS-12\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			k := &asker{in: bufio.NewReader(strings.NewReader(tt.input)), out: &out, by: "alice"}
			in, ok := k.Ask(ops.Question{RunID: "r1", Step: keytest.K("approval"), Message: "Ship it?", Inputs: tt.inputs})
			if ok != tt.ok || in.Approved != tt.approved || in.Reason != tt.reason {
				t.Errorf("Ask = %+v, %v; want approved %v reason %q ok %v", in, ok, tt.approved, tt.reason, tt.ok)
			}
			if ok && in.By != "alice" {
				t.Errorf("decided by %q", in.By)
			}
			if !maps.Equal(in.Input, tt.given) {
				t.Errorf("inputs %v, want %v", in.Input, tt.given)
			}
			printed := append([]string{"Ship it?", "Approve approval of run r1?"}, tt.printed...)
			for _, p := range printed {
				if !strings.Contains(out.String(), p) {
					t.Errorf("%q not printed in %q", p, out.String())
				}
			}
			if tt.ok && !tt.approved && strings.Contains(out.String(), "ticket (") {
				t.Errorf("inputs asked without an approval: %q", out.String())
			}
		})
	}
}
