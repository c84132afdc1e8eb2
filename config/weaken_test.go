package config_test

import (
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/configtest"
)

// TestWeakenings: the edits that weaken a run's gates are named; other
// edits are not.
func TestWeakenings(t *testing.T) {
	const base = `name: w
defaults: {sandbox: required}
notify: {on: [failed], command: "true"}
steps:
  - id: code
    run: "true"
  - id: review
    run: "true"
    gate: {pass: "exit_code == 0", loop_back_to: code}
  - id: approve
    human: {message: "ship?"}
`
	before, err := configtest.Load(t, base).Spec()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, from, to, want string
	}{
		{"nothing", "", "", ""},
		{"a new step", "  - id: approve\n", "  - id: docs\n    run: \"true\"\n  - id: approve\n", ""},
		{"a command changes", `  - id: code
    run: "true"`, `  - id: code
    run: "make"`, ""},
		{"the human step goes", "  - id: approve\n    human: {message: \"ship?\"}\n", "", "step approve, which had a human step or a gate, is removed"},
		{"it approves itself", `human: {message: "ship?"}`, `human: {message: "ship?", auto_approve: "true"}`, `step approve's human.auto_approve changes from "" to "true"`},
		{"the gate passes anything", `pass: "exit_code == 0"`, `pass: "true"`, "step review's gate changes"},
		{"the sandbox is lowered", "defaults: {sandbox: required}", "defaults: {sandbox: off}", "defaults.sandbox is lowered to off"},
		{"the sandbox is raised", "defaults: {sandbox: required}", "defaults: {sandbox: required}\n", ""},
		{"nobody is told", `notify: {on: [failed], command: "true"}`, `notify: {on: [completed], command: "true"}`, "notify changes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := configtest.Load(t, strings.Replace(base, tt.from, tt.to, 1))
			got, err := config.Weakenings(before, w)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "; ") != tt.want {
				t.Errorf("weakenings %q, want %q", got, tt.want)
			}
		})
	}
}
