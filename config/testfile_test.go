package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

const testWorkflow = `name: wf
vars: {feature: x}
agents: {a: {run: a}}
defaults: {agent: a}
steps:
  - id: coding
    prompt: code
  - id: review
    prompt: review
    gate:
      check: make test
      loop_back_to: coding
  - id: approve
    human: {message: ship}
`

const goodTests = `workflow: wf.yaml
tests:
  - name: review fails once
    vars: {feature: search}
    files: {PLAN.md: "# plan"}
    sessions:
      review:
        - {output: "FAIL"}
        - {output: "PASS", report: {metrics: {severity: minor}}, duration: 2m}
      coding: {writes: {main.go: "package main"}}
    checks: {review: [{exit_code: 1, output: "--- FAIL"}]}
    human: {approve: {approved: true, input: {ticket: OPS-1}}}
    expect:
      exit_code: 0
      status: completed
      path: [coding, review, coding, review, approve]
      path_contains: [coding, approve]
      steps:
        coding: {status: COMPLETED, iteration: 1, attempts: 1}
        review: {verdict: PASS, last_error: "^$"}
      files: {main.go: "package main"}
      prompt_contains: {coding: "FAIL"}
`

func testFS(t *testing.T, tests string) afero.Fs {
	t.Helper()
	fs := afero.NewMemMapFs()
	for name, data := range map[string]string{"/w/wf.yaml": testWorkflow, "/w/wf.test.yaml": tests} {
		if err := afero.WriteFile(fs, name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

func TestLoadTests(t *testing.T) {
	tf, err := config.LoadTests(testFS(t, goodTests), "/w/wf.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if tf.Workflow == nil || tf.Workflow.Name != "wf" || tf.WorkflowPath != "/w/wf.yaml" || len(tf.Tests) != 1 {
		t.Fatalf("loaded %+v", tf)
	}
	wt := tf.Tests[0]
	if wt.Name != "review fails once" || wt.Vars["feature"] != "search" || len(wt.Files) != 1 {
		t.Errorf("test %+v", wt)
	}
	if got := wt.Sessions["review"]; len(got) != 2 || got[1].Output != "PASS" || string(got[1].Report) != `{"metrics":{"severity":"minor"}}` || got[1].Duration.Minutes() != 2 {
		t.Errorf("review sessions %+v", got)
	}
	if got := wt.Sessions["coding"]; len(got) != 1 || got[0].Writes[0].Path != "main.go" {
		t.Errorf("coding sessions %+v", got)
	}
	if got := wt.Checks["review"]; len(got) != 1 || got[0].ExitCode != 1 {
		t.Errorf("checks %+v", got)
	}
	if got := wt.Human["approve"]; len(got) != 1 || !got[0].Approved || got[0].Input["ticket"] != "OPS-1" {
		t.Errorf("human %+v", got)
	}
	e := wt.Expect
	if e.ExitCode.Value != 0 || e.Status.Value != "completed" || len(e.Path.Value) != 5 || e.Path.Pos.Line != 16 || len(e.PathContains.Value) != 2 {
		t.Errorf("expect %+v", e)
	}
	if len(e.Steps) != 2 || e.Steps[0].Iteration.Value != 1 || e.Steps[1].Verdict.Value != "PASS" || e.Steps[1].LastError.Value != "^$" {
		t.Errorf("expect.steps %+v", e.Steps)
	}
	if len(e.Files) != 1 || len(e.PromptContains) != 1 || e.PromptContains[0].Text != "FAIL" {
		t.Errorf("expect files/prompts %+v %+v", e.Files, e.PromptContains)
	}
}

func TestLoadTestsDiagnostics(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown keys and steps", `workflow: wf.yaml
tests:
  - name: a
    sesions: {}
    sessions: {codng: {exit_code: 0, ouput: x}}
    human: {coding: {approved: true}}
    checks: {coding: {exit_code: 1}}
    vars: {featur: y}
    expect:
      path: [coding, reviw]
      status: done
      steps: {review: {verdit: PASS}}
`, []string{
			`/w/wf.test.yaml:4:5: unknown key "sesions" (did you mean "sessions"?)`,
			`/w/wf.test.yaml:5:16: unknown step "codng" (did you mean "coding"?)`,
			`/w/wf.test.yaml:5:38: unknown key "ouput" (did you mean "output"?)`,
			`/w/wf.test.yaml:6:13: human: step "coding" is not a human step`,
			`/w/wf.test.yaml:7:14: checks: step "coding" has no gate.check`,
			`/w/wf.test.yaml:8:12: unknown var "featur" (did you mean "feature"?)`,
			`/w/wf.test.yaml:10:22: unknown step "reviw" (did you mean "review"?)`,
			`/w/wf.test.yaml:11:15: unknown run status "done"`,
			`/w/wf.test.yaml:12:24: unknown key "verdit" (did you mean "verdict"?)`,
		}},
		{"bad values", `workflow: wf.yaml
tests:
  - name: a
    sessions: {coding: [{exit_code: one, duration: soon}]}
    human: {approve: {input: {a: 1}}}
    expect: {steps: {coding: {last_error: "("}}}
  - name: a
  - name: costs
    sessions: {review: [{usage: {cost_usd: NaN}}, {usage: {cost_usd: "+Inf"}}, {usage: {cost_usd: -1}}, {usage: {cost_usd: 0.5}}]}
`, []string{
			`/w/wf.test.yaml:4:37: sessions.coding.exit_code: want a whole number, got "one"`,
			`/w/wf.test.yaml:4:52: sessions.coding.duration: "soon" is not a duration (like 90s or 5m)`,
			`/w/wf.test.yaml:5:22: human.approve: a decision needs approved: true or false`,
			`/w/wf.test.yaml:6:43: expect.steps.coding.last_error: not a regular expression: error parsing regexp: missing closing ): ` + "`(`",
			`/w/wf.test.yaml:7:5: a second test named "a" (the first is at line 3)`,
			`/w/wf.test.yaml:9:44: sessions.review.usage.cost_usd: want a number of at least 0, got "NaN"`,
			`/w/wf.test.yaml:9:70: sessions.review.usage.cost_usd: want a number of at least 0, got "+Inf"`,
			`/w/wf.test.yaml:9:99: sessions.review.usage.cost_usd: want a number of at least 0, got "-1"`,
		}},
		{"instances", `workflow: wf.yaml
tests:
  - name: a
    human: {"approve[a b].approve": {approved: true}, "approve[a].approve": {approved: true}, "approve[]approve": {approved: true}}
`, []string{
			`/w/wf.test.yaml:4:13: item key "a b" of approve[a b].approve: an item key is 1 to 48 characters of letters, digits, '_' and '-'`,
			`/w/wf.test.yaml:4:55: "approve[a].approve" is not an instance of a step of a for_each loop's body (loop[item].step)`,
			`/w/wf.test.yaml:4:95: "approve[]approve" is not a step or a step instance (step, or loop[item].step)`,
		}},
		{"missing workflow", "workflow: nope.yaml\ntests: [{name: a}]\n", []string{
			`/w/wf.test.yaml:1:11: workflow: load workflow: open /w/nope.yaml: file does not exist`,
		}},
		{"invalid workflow", "workflow: bad.yaml\ntests: [{name: a}]\n", []string{
			`/w/bad.yaml:1:1: unknown key "nme" (did you mean "name"?)`,
			`/w/bad.yaml:1:1: name is required`,
			`/w/wf.test.yaml:1:11: workflow: bad.yaml is not a valid workflow (2 problems, reported in it)`,
		}},
		{"no tests", "workflow: wf.yaml\n", []string{
			`/w/wf.test.yaml:1:1: no tests: add a list under "tests"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := testFS(t, tt.src)
			_ = afero.WriteFile(fs, "/w/bad.yaml", []byte("nme: x\nsteps: [{id: a, run: a}]\n"), 0o644)
			_, err := config.LoadTests(fs, "/w/wf.test.yaml")
			var ds config.Diagnostics
			if !errors.As(err, &ds) {
				t.Fatalf("err = %v, want diagnostics", err)
			}
			got := strings.Split(ds.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func FuzzLoadTests(f *testing.F) {
	f.Add([]byte(goodTests))
	f.Add([]byte("workflow: wf.yaml\ntests: [{name: a, human: {approve: [{approved: false, reason: no}]}}]\n"))
	f.Add([]byte(goodTestsHCL))
	f.Add([]byte("workflow = \"wf.yaml\"\ntest \"a\" {\n  human = { approve = [{ approved = false, reason = <<EOT\nno\nEOT\n }] }\n  checks = { review = { exit_code = -1 } }\n}\n"))
	f.Add([]byte("workflow = \"wf.yaml\"\ntest \"a\" { expect { path = [null, 1.5, true, \"$${x}\"] } }\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := testFS(t, "")
		// Each input is read as YAML and as HCL.
		for _, path := range []string{"/w/wf.test.yaml", "/w/wf.test.hcl"} {
			tf, err := config.ParseTests(fs, path, data)
			if err == nil {
				if tf.Workflow == nil || len(tf.Tests) == 0 {
					t.Fatalf("%s: a valid test file without workflow or tests: %+v", path, tf)
				}
				continue
			}
			var ds config.Diagnostics
			if !errors.As(err, &ds) || len(ds) == 0 {
				t.Fatalf("%s: err = %v, want diagnostics", path, err)
			}
			for _, d := range ds {
				if d.Pos.Line < 1 || d.Pos.Col < 1 || d.Pos.File == "" {
					t.Fatalf("%s: unpositioned diagnostic %v", path, d)
				}
			}
		}
	})
}
