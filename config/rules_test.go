package config_test

import (
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/configtest"
	"github.com/spf13/afero"
)

// TestResolvedRules checks the rules Load resolves once, so that the
// runner reads them rather than derives them: the loop-back target (the
// gate's, else the step's), whether a step has a gate, and the agent a
// prompt runs (its own, else defaults.agent), in both formats.
func TestResolvedRules(t *testing.T) {
	sources := map[string]string{
		"yaml": `name: rules
defaults: {agent: coder}
agents:
  coder: {run: coder}
  reviewer: {run: reviewer}
steps:
  - {id: plain, run: make}
  - {id: gated, run: make, gate: {pass: exit_code == 0, loop_back_to: plain}}
  - {id: own, run: make, loop_back_to: plain}
  - {id: verdict, prompt: Review., gate: {check: make test}}
  - {id: review, prompt: Review., agent: reviewer}
cleanup: {prompt: Tidy up.}
`,
		"hcl": `name = "rules"
defaults {
  agent = "coder"
}
agent "coder" {
  run = "coder"
}
agent "reviewer" {
  run = "reviewer"
}
step "plain" {
  run = "make"
}
step "gated" {
  run = "make"
  gate {
    pass         = "exit_code == 0"
    loop_back_to = "plain"
  }
}
step "own" {
  run          = "make"
  loop_back_to = "plain"
}
step "verdict" {
  prompt = "Review."
  gate {
    check = "make test"
  }
}
step "review" {
  prompt = "Review."
  agent  = "reviewer"
}
cleanup {
  prompt = "Tidy up."
}
`,
	}
	tests := []struct {
		id, loopBack string
		hasGate      bool
		agent        string
	}{
		{"plain", "", false, ""},
		{"gated", "plain", true, ""},
		{"own", "plain", true, ""},
		{"verdict", "", true, "coder"},
		{"review", "", false, "reviewer"},
	}
	for format, src := range sources {
		w, err := config.Parse(afero.NewMemMapFs(), "wf."+format, format, []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for _, tt := range tests {
			s := w.Step(tt.id)
			if got := s.LoopBack(); got != tt.loopBack {
				t.Errorf("%s: %s.LoopBack() = %q, want %q", format, tt.id, got, tt.loopBack)
			}
			if got := s.HasGate(); got != tt.hasGate {
				t.Errorf("%s: %s.HasGate() = %v, want %v", format, tt.id, got, tt.hasGate)
			}
			if s.Agent != tt.agent {
				t.Errorf("%s: %s.Agent = %q, want %q", format, tt.id, s.Agent, tt.agent)
			}
		}
		if w.Cleanup == nil || w.Cleanup.Agent != "coder" {
			t.Errorf("%s: cleanup %+v, want the agent coder", format, w.Cleanup)
		}
	}
}

// TestSandboxModes: defaults.sandbox and a step's sandbox take on,
// required or off; a step without one takes the defaults', else on.
func TestSandboxModes(t *testing.T) {
	w := configtest.Load(t, "name: s\ndefaults: {sandbox: required}\nsteps:\n  - {id: a, run: x}\n  - {id: b, run: x, sandbox: off}\n")
	if got := w.StepSandbox(w.Step("a")); got != config.SandboxRequired {
		t.Errorf("a: %q", got)
	}
	if got := w.StepSandbox(w.Step("b")); got != config.SandboxOff {
		t.Errorf("b: %q", got)
	}
	if got := configtest.Load(t, "name: s\nsteps:\n  - {id: a, run: x}\n"); got.StepSandbox(got.Step("a")) != config.SandboxOn {
		t.Error("the default is not on")
	}
	fsys := afero.NewMemMapFs()
	_ = afero.WriteFile(fsys, "/w.yaml", []byte("name: s\nsteps:\n  - {id: a, run: x, sandbox: maybe}\n"), 0o644)
	_, err := config.Load(fsys, "/w.yaml")
	if err == nil || !strings.Contains(err.Error(), `sandbox: want on, required or off, got "maybe"`) || !strings.Contains(err.Error(), "3:") {
		t.Errorf("bad mode: %v", err)
	}
}
