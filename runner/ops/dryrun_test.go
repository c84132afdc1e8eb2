package ops

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/runner/spec"
)

// dryRunWorkflow is an sdlc-like workflow: agents, a prompt that reads
// an earlier step's output, a gate that loops back, a conditional human
// step, parallel steps, budgets from vars and a secret in the
// environment.
const dryRunWorkflow = `name: sdlc
vars:
  feature: dark mode
  test_command: go test ./...
  reviews: "3"
defaults:
  max_attempts: 2
  timeout: 30m
  agent: coder
agents:
  coder:
    run: claude -p "$FLOW_PROMPT"
    env:
      MODEL: "{{ vars.feature }}-model"
steps:
  - id: planning
    prompt: Write PLAN.md for {{ vars.feature }}. Read {{ read_file("NOTES.md") }}
    artifacts: [PLAN.md]
  - id: coding
    prompt: "Implement {{ vars.feature }} following {{ steps.planning.output }}"
  - id: tests
    needs: [coding]
    run: "{{ vars.test_command }} # token {{ env.API_TOKEN }}"
    max_attempts: 1
  - id: lint
    needs: [coding]
    run: golangci-lint run
  - id: code_review
    needs: [tests, lint]
    prompt: "Review {{ vars.feature }}; last time: {{ feedback.reason }}"
    gate:
      pass: signals.PASS && !signals.FAIL
      check: "{{ vars.test_command }}"
      loop_back_to: coding
      max_iterations: vars.reviews
  - id: approval
    when: steps.code_review.verdict != "PASS"
    human:
      message: Ship {{ vars.feature }} after {{ steps.code_review.iteration }} reviews?
      timeout: 24h
  - id: merge
    run: git merge --ff-only feature
`

func TestDryRun(t *testing.T) {
	s, _ := newService(t, dryRunWorkflow, nil)
	s.Environ = append(s.Environ, "API_TOKEN=tok-5ecret")
	if err := afero.WriteFile(s.FS, repo+"/NOTES.md", []byte("the notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s.DryRun(RunRequest{Workflow: wf, Vars: []string{"feature=light mode"}, Budgets: spec.Budgets{MaxIterations: 6}})
	if err != nil {
		t.Fatalf("DryRun: %v", err)
	}
	golden(t, "dry_run", got)
	for _, want := range []string{"light mode", "the notes", "<steps.planning.output>", "<feedback.reason>",
		"<steps.code_review.iteration>", "# token ***"} {
		if !strings.Contains(mustJSON(t, got), want) {
			t.Errorf("dry run does not show %q", want)
		}
	}
	if strings.Contains(mustJSON(t, got), "tok-5ecret") {
		t.Error("dry run shows a secret's value")
	}
	if st := s.Starter.(*scripted); len(st.calls) > 0 {
		t.Errorf("dry run started sessions: %v", st.calls)
	}
	if ok, _ := afero.DirExists(s.FS, repo+"/.agents"); ok {
		t.Error("dry run created .agents")
	}
}

func TestDryRunErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		vars []string
		code ExitCode
		msgs []string
	}{
		{name: "missing file", src: "name: wf\nagents: {c: {run: x}}\nsteps:\n  - id: a\n    run: cat {{ read_file(\"missing.txt\") }}\n  - id: b\n    agent: c\n    prompt: \"x {{ read_json('nope.json') }}\"\n",
			code: 1, msgs: []string{"/repo/wf.yaml:5:10: run: ", "missing.txt", "/repo/wf.yaml:8:13: prompt: ", "nope.json"}},
		{name: "human message", src: "name: wf\nsteps:\n  - id: a\n    human:\n      message: \"{{ read_file('x') }}\"\n",
			code: 1, msgs: []string{"/repo/wf.yaml:5:16: human.message: "}},
		{name: "budget", src: "name: wf\nvars: {n: \"zero\"}\nsteps:\n  - id: a\n    run: x\n    max_attempts: vars.n\n",
			code: 1, msgs: []string{"resolve budgets", "max_attempts", `"zero" is not a number`}},
		{name: "unknown var", src: "name: wf\nvars: {a: b}\nsteps:\n  - id: a\n    run: x\n", vars: []string{"nope=1"},
			code: ExitUsage, msgs: []string{`the workflow has no var "nope"`}},
		{name: "invalid workflow", src: "name: wf\nsteps:\n  - id: a\n    run: \"{{ vars.nope }}\"\n",
			code: ExitUsage, msgs: []string{"unknown var"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newService(t, tt.src, nil)
			got, err := s.DryRun(RunRequest{Workflow: wf, Vars: tt.vars})
			wantCode(t, err, tt.code, tt.msgs...)
			if tt.code == 1 && len(got.Errors) == 0 && tt.name != "budget" {
				t.Error("render errors are not listed in the plan")
			}
			if ok, _ := afero.DirExists(s.FS, repo+"/.agents"); ok {
				t.Error("dry run created .agents")
			}
		})
	}
}

// The groups are the levels of the dependency graph: steps whose needs
// are all in earlier groups share a group.
func TestDryRunGroups(t *testing.T) {
	src := `name: wf
max_parallel: 3
steps:
  - id: a
    run: x
  - id: b
    needs: []
    run: x
  - id: c
    needs: [a]
    run: x
  - id: d
    needs: [a, b]
    run: x
  - id: e
    needs: [c]
    run: x
  - id: f
    needs: [b]
    run: x
`
	s, _ := newService(t, src, nil)
	got, err := s.DryRun(RunRequest{Workflow: wf})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a", "b"}, {"c", "d", "f"}, {"e"}}
	if g := mustJSONOf(t, got.Groups); g != mustJSONOf(t, want) {
		t.Errorf("groups %s, want %s", g, mustJSONOf(t, want))
	}
	if got.MaxParallel != 3 {
		t.Errorf("max_parallel %d, want 3", got.MaxParallel)
	}
}

func mustJSON(t *testing.T, d DryRun) string { return mustJSONOf(t, d) }

func mustJSONOf(t *testing.T, v any) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
