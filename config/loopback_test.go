package config_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

// TestLoopBackTargets checks which loop-back targets a workflow may
// name (docs/concepts.md, "Loop-backs"): the step itself, one it depends on, or one
// independent of it; never one that depends on it, nor one its scope
// cannot reach. Each case is written in both formats, with the
// diagnostics each gives as file:line:col: message.
func TestLoopBackTargets(t *testing.T) {
	tests := []struct {
		name      string
		yaml, hcl string
		// wantYAML and wantHCL are the diagnostics, as Error() prints
		// them; empty when the workflow loads.
		wantYAML, wantHCL []string
	}{
		{
			name: "upstream",
			yaml: `name: w
steps:
  - {id: code, run: code}
  - {id: review, run: review, loop_back_to: code}
`,
			hcl: `name = "w"
step "code" { run = "code" }
step "review" {
  run          = "review"
  loop_back_to = "code"
}
`,
		},
		{
			name: "itself",
			yaml: `name: w
steps:
  - {id: round, run: round, gate: {pass: "true", loop_back_to: round}}
`,
			hcl: `name = "w"
step "round" {
  run = "round"
  gate {
    pass         = "true"
    loop_back_to = "round"
  }
}
`,
		},
		{
			name: "a fix step after the gate, needing what the gate needs",
			yaml: `name: w
steps:
  - {id: code, run: code}
  - {id: review, run: review, loop_back_to: fix}
  - {id: fix, run: fix, needs: [code]}
`,
			hcl: `name = "w"
step "code" { run = "code" }
step "review" {
  run          = "review"
  loop_back_to = "fix"
}
step "fix" {
  run   = "fix"
  needs = ["code"]
}
`,
		},
		{
			name: "an independent step before the gate",
			yaml: `name: w
steps:
  - {id: fix, run: fix, needs: []}
  - {id: code, run: code, needs: []}
  - {id: review, run: review, gate: {pass: "true", loop_back_to: fix}}
`,
			hcl: `name = "w"
step "fix" {
  run   = "fix"
  needs = []
}
step "code" {
  run   = "code"
  needs = []
}
step "review" {
  run = "review"
  gate {
    pass         = "true"
    loop_back_to = "fix"
  }
}
`,
		},
		{
			name: "downstream, through the file order",
			yaml: `name: w
steps:
  - {id: code, run: code}
  - {id: review, run: review, loop_back_to: fix}
  - {id: fix, run: fix}
`,
			hcl: `name = "w"
step "code" { run = "code" }
step "review" {
  run          = "review"
  loop_back_to = "fix"
}
step "fix" { run = "fix" }
`,
			wantYAML: []string{`wf.yaml:4:45: loop_back_to "fix" is downstream of "review"; a loop-back must go to this step or one it depends on`},
			wantHCL:  []string{`wf.hcl:5:18: loop_back_to "fix" is downstream of "review"; a loop-back must go to this step or one it depends on`},
		},
		{
			name: "a step of another loop's body",
			yaml: `name: w
steps:
  - id: l
    for_each: [a]
    steps:
      - {id: x, run: x}
  - {id: review, run: review, loop_back_to: x}
`,
			hcl: `name = "w"
step "l" {
  for_each = ["a"]
  step "x" { run = "x" }
}
step "review" {
  run          = "review"
  loop_back_to = "x"
}
`,
			wantYAML: []string{`wf.yaml:7:45: loop_back_to "x" is a step of the body of loop "l"; loop back to "l" instead, which runs all items again`},
			wantHCL:  []string{`wf.hcl:8:18: loop_back_to "x" is a step of the body of loop "l"; loop back to "l" instead, which runs all items again`},
		},
		{
			name: "a body step to the side, and one downstream",
			yaml: `name: w
steps:
  - id: l
    for_each: [a]
    steps:
      - {id: impl, run: impl}
      - {id: review, run: review, loop_back_to: fix}
      - {id: fix, run: fix, needs: [impl]}
      - {id: test, run: test, loop_back_to: after}
      - {id: after, run: after}
`,
			hcl: `name = "w"
step "l" {
  for_each = ["a"]
  step "impl" { run = "impl" }
  step "review" {
    run          = "review"
    loop_back_to = "fix"
  }
  step "fix" {
    run   = "fix"
    needs = ["impl"]
  }
  step "test" {
    run          = "test"
    loop_back_to = "after"
  }
  step "after" { run = "after" }
}
`,
			wantYAML: []string{`wf.yaml:9:45: loop_back_to "after" is downstream of "test"; a loop-back must go to this step or one it depends on`},
			wantHCL:  []string{`wf.hcl:15:20: loop_back_to "after" is downstream of "test"; a loop-back must go to this step or one it depends on`},
		},
		{
			name: "a body step to a top-level step the loop does not need",
			yaml: `name: w
steps:
  - {id: side, run: side, needs: []}
  - id: l
    for_each: [a]
    needs: []
    steps:
      - {id: review, run: review, loop_back_to: side}
`,
			hcl: `name = "w"
step "side" {
  run   = "side"
  needs = []
}
step "l" {
  for_each = ["a"]
  needs    = []
  step "review" {
    run          = "review"
    loop_back_to = "side"
  }
}
`,
			wantYAML: []string{`wf.yaml:8:49: loop_back_to "side": a step of the body of "l" loops back to a step of its body that does not depend on it, or to a step loop "l" depends on (which runs all items again)`},
			wantHCL:  []string{`wf.hcl:11:20: loop_back_to "side": a step of the body of "l" loops back to a step of its body that does not depend on it, or to a step loop "l" depends on (which runs all items again)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				format, src string
				want        []string
			}{{"yaml", tt.yaml, tt.wantYAML}, {"hcl", tt.hcl, tt.wantHCL}} {
				wf, err := config.Parse(afero.NewMemMapFs(), "wf."+c.format, c.format, []byte(c.src))
				var got []string
				var ds config.Diagnostics
				switch {
				case errors.As(err, &ds):
					for _, d := range ds {
						got = append(got, d.String())
					}
				case err != nil:
					t.Fatalf("%s: %v", c.format, err)
				case wf == nil:
					t.Fatalf("%s: no workflow and no error", c.format)
				}
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("%s: diagnostics (-want +got):\n%s", c.format, diff)
				}
			}
		})
	}
}
