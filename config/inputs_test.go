package config_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

// TestHumanInputs: a human step declares the inputs an approval gives,
// the same in YAML (a list) and HCL (labelled input blocks), and they are
// kept in the workflow's spec (workflow.json).
func TestHumanInputs(t *testing.T) {
	sources := map[string]string{
		"wf.yaml": `name: rel
steps:
  - id: approval
    human:
      message: Release?
      inputs:
        - {name: ticket, description: Jira ticket, required: true}
        - {name: env, default: staging}
        - name: note
`,
		"wf.hcl": `name = "rel"
step "approval" {
  human {
    message = "Release?"
    input "ticket" {
      description = "Jira ticket"
      required    = true
    }
    input "env" {
      default = "staging"
    }
    input "note" {}
  }
}
`,
	}
	want := []config.Input{
		{Name: "ticket", Description: "Jira ticket", Required: true},
		{Name: "env", Default: "staging"},
		{Name: "note"},
	}
	fsys := afero.NewMemMapFs()
	for path, src := range sources {
		t.Run(path, func(t *testing.T) {
			afero.WriteFile(fsys, path, []byte(src), 0o644)
			w := load(t, fsys, path)
			got := w.Step("approval").Human.Inputs
			if d := cmp.Diff(want, got, ignorePositions); d != "" {
				t.Errorf("inputs (-want +got):\n%s", d)
			}
			if got[0].Pos.Line < 5 {
				t.Errorf("ticket declared at %+v", got[0].Pos)
			}
			spec, _ := w.Spec()
			if !strings.Contains(string(spec), `"name": "env",`) || !strings.Contains(string(spec), `"default": "staging"`) {
				t.Errorf("spec leaves out the inputs:\n%s", spec)
			}
		})
	}
}

// TestHumanInputErrors: bad, duplicate and contradictory inputs are load
// errors at their position.
func TestHumanInputErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		msg   string
		col   int
	}{
		{"upper case", "{name: Env}", `input name "Env": want lowercase letters`, 18},
		{"leading digit", "{name: 9x}", `input name "9x"`, 18},
		{"dash", "{name: my-env}", `input name "my-env"`, 18},
		{"duplicate", "{name: ticket}", `duplicate input "ticket"`, 18},
		{"no name", "{description: x}", "name is required", 11},
		{"required not a bool", "{name: x, required: maybe}", `required: want true or false, got "maybe"`, 31},
		{"required with a default", "{name: x, required: true, default: z}", `input "x" is required and has a default`, 46},
		{"unknown key", "{name: x, defualt: z}", `unknown key "defualt" (did you mean "default"?)`, 21},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fmt.Sprintf("name: rel\nsteps:\n  - id: approval\n    human:\n      inputs:\n        - {name: ticket}\n        - %s\n", tt.input)
			_, err := config.Parse(afero.NewMemMapFs(), "wf.yaml", "yaml", []byte(src))
			var ds config.Diagnostics
			if !errors.As(err, &ds) {
				t.Fatalf("Parse = %v; want diagnostics", err)
			}
			if len(ds) != 1 || !strings.Contains(ds[0].Message, tt.msg) || ds[0].Pos.Line != 7 || ds[0].Pos.Col != tt.col {
				t.Errorf("diagnostics %v; want one at 7:%d saying %q", ds, tt.col, tt.msg)
			}
		})
	}
}

// TestInputReferences: steps.X.input.NAME names an input the human step
// X declares (an approval gives only those); a human step that declares
// none takes any; a step without a human block takes none. Expressions
// and templates, of the top level and of loop bodies, are checked alike.
func TestInputReferences(t *testing.T) {
	checkDiags(t, "yaml", `name: x
steps:
  - id: ship_it
    human:
      message: Ship
      inputs: [{name: ticket, required: true}, {name: env}]
  - id: free
    human:
      message: Anything
  - id: build
    run: make
  - id: deploy
    run: 'echo {{ steps.ship_it.input.ticket }} {{ steps.ship_it.input.tciket }} {{ steps.free.input.whatever }}'
    when: steps.ship_it.input["env"] == "prod" && steps.build.input.x == ""
  - id: regions
    for_each: [eu]
    steps:
      - id: sign
        human:
          message: Sign
          inputs: [{name: who}]
      - id: push
        run: 'echo {{ steps.sign.input.who }} {{ steps.sign.input.whom }} {{ steps.ship_it.input.evn }}'
`, []loopDiag{
		{13, 72, `run: step "ship_it" declares no input "tciket" (did you mean "ticket"?)`},
		{14, 69, `when: step "build" has no human block: it takes no input`},
		{23, 67, `run: step "sign" declares no input "whom" (did you mean "who"?)`},
	})
	checkDiags(t, "hcl", `name = "x"
step "ship_it" {
  human {
    message = "Ship?"
    input "ticket" {}
  }
}
step "deploy" {
  run = "echo {{ steps.ship_it.input.tickt }}"
}
`, []loopDiag{
		{9, 38, `run: step "ship_it" declares no input "tickt" (did you mean "ticket"?)`},
	})
}
