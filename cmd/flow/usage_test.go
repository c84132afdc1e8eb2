package main

import (
	"strings"
	"testing"

	"github.com/flow-run/flow/runner/ops"
)

// TestGoStyleFlags: flow test takes its long flags with one dash, as go
// test does; other commands, flag values and arguments after "--" are
// left as they are.
func TestGoStyleFlags(t *testing.T) {
	tests := []struct{ in, want string }{
		{"test wf.test.yaml -run review", "test wf.test.yaml --run review"},
		{"test -run=rev -cover -json x", "test --run=rev --cover --json x"},
		{"test --run -cover", "test --run -cover"},
		{"test -run -cover", "test --run -cover"},
		{"test -junit out.xml -cover-min 90", "test --junit out.xml --cover-min 90"},
		{"test -h -nope x", "test -h -nope x"},
		{"test x -- -run", "test x -- -run"},
		{"--ci=off test -run a", "--ci=off test --run a"},
		{"run wf.yaml -run-id r", "run wf.yaml -run-id r"},
		{"validate -json wf.yaml", "validate -json wf.yaml"},
	}
	a := &app{svc: &ops.Service{}}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := strings.Join(goStyleFlags(a.rootCmd(), strings.Fields(tt.in)), " ")
			if got != tt.want {
				t.Errorf("goStyleFlags(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}
