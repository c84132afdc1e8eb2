package main

import (
	"bufio"
	"strings"
	"testing"
)

func TestAsker(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		ok       bool
		approved bool
		reason   string
	}{
		{"yes", "y\n", true, true, ""},
		{"asks again until it understands", "maybe\nYES\n", true, true, ""},
		{"no with a reason", "n\nthe tests are red\n", true, false, "the tests are red"},
		{"end of input is no answer", "", false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			k := &asker{in: bufio.NewReader(strings.NewReader(tt.input)), out: &out}
			in, ok := k.Ask("r1", "approval", "Ship it?")
			if ok != tt.ok || in.Approved != tt.approved || in.Reason != tt.reason {
				t.Errorf("Ask = %+v, %v; want approved %v reason %q ok %v", in, ok, tt.approved, tt.reason, tt.ok)
			}
			if !strings.Contains(out.String(), "Ship it?") || !strings.Contains(out.String(), "Approve approval of run r1?") {
				t.Errorf("question printed: %q", out.String())
			}
		})
	}
}
