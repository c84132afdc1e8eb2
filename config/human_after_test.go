package config_test

import (
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

// TestHumanBesideSession: human: on a step that runs a session is an
// approval after it: the step keeps the session's kind and has its
// human block, in both formats.
func TestHumanBesideSession(t *testing.T) {
	for format, src := range map[string]string{
		"yaml": `name: w
agents:
  coder: {run: coder}
steps:
  - id: build
    run: make
    human: {message: "ok?", timeout: 1h}
  - id: write
    prompt: Write it.
    agent: coder
    human:
      inputs: [{name: ticket, required: true}]
`,
		"hcl": `name = "w"
agent "coder" { run = "coder" }
step "build" {
  run = "make"
  human {
    message = "ok?"
    timeout = "1h"
  }
}
step "write" {
  prompt = "Write it."
  agent  = "coder"
  human {
    input "ticket" { required = true }
  }
}
`,
	} {
		wf, err := config.Parse(afero.NewMemMapFs(), "wf."+format, format, []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		b, w := wf.Step("build"), wf.Step("write")
		if b.Kind != config.KindCommand || b.Human == nil || b.Human.Message == nil || b.Human.Timeout == nil {
			t.Errorf("%s: build: kind %s human %+v", format, b.Kind, b.Human)
		}
		if w.Kind != config.KindAgent || w.Human == nil || len(w.Human.Inputs) != 1 || w.Agent != "coder" {
			t.Errorf("%s: write: kind %s human %+v", format, w.Kind, w.Human)
		}
	}
}
