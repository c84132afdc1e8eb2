package ops

import (
	"maps"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

var releaseInputs = []config.Input{
	{Name: "ticket", Description: "Jira ticket", Required: true},
	{Name: "env", Default: "staging"},
	{Name: "note"},
}

func TestResolveInputs(t *testing.T) {
	tests := []struct {
		name     string
		declared []config.Input
		given    map[string]any
		want     map[string]any
		err      []string
	}{
		{name: "defaults fill what is not given", declared: releaseInputs, given: map[string]any{"ticket": "OPS-12"},
			want: map[string]any{"ticket": "OPS-12", "env": "staging", "note": ""}},
		{name: "given values win", declared: releaseInputs, given: map[string]any{"ticket": "OPS-12", "env": "prod", "note": "hi"},
			want: map[string]any{"ticket": "OPS-12", "env": "prod", "note": "hi"}},
		{name: "an unknown name", declared: releaseInputs, given: map[string]any{"ticket": "OPS-12", "evn": "prod"},
			err: []string{`--input evn: step approval has no input "evn" (did you mean "env"?)`, "its inputs: ticket, env, note"}},
		{name: "a required one left out", declared: releaseInputs, given: map[string]any{"env": "prod"},
			err: []string{"step approval needs the input ticket", "--input ticket=..."}},
		{name: "several required ones left out", declared: []config.Input{{Name: "a", Required: true}, {Name: "b", Required: true}},
			err: []string{"needs the inputs a, b", "--input a=... --input b=..."}},
		{name: "a step that declares none takes anything", given: map[string]any{"x": "1"}, want: map[string]any{"x": "1"}},
		{name: "nothing at all", want: map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveInputs("approval", tt.declared, tt.given)
			if tt.err != nil {
				wantCode(t, err, ExitUsage, tt.err...)
				return
			}
			if err != nil || !maps.Equal(got, tt.want) {
				t.Errorf("ResolveInputs = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

const inputSteps = `name: wf
steps:
  - id: build
    run: echo build
  - id: ship_it
    human:
      message: Ship it?
      inputs:
        - {name: ticket, required: true}
        - {name: env, default: staging}
  - id: deploy
    run: echo deploy
`

// TestDecideInputs: flow approve checks an approval's inputs against
// those the step declares (in the run's workflow.json) and records the
// defaults of those it leaves out.
func TestDecideInputs(t *testing.T) {
	s, _ := newService(t, inputSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})

	_, err := s.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_it"), Approve: true, Input: map[string]any{"ticket": "OPS-1", "evn": "prod"}})
	wantCode(t, err, ExitUsage, `no input "evn" (did you mean "env"?)`)
	_, err = s.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_it"), Approve: true})
	wantCode(t, err, ExitUsage, "needs the input ticket")
	// The workflow file changing under the run does not change what the
	// run's step declares.
	if err := afero.WriteFile(s.FS, wf, []byte(strings.ReplaceAll(inputSteps, "ticket", "tiket")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_it"), Approve: true, Input: map[string]any{"ticket": "OPS-1"}}); err != nil {
		t.Fatal(err)
	}
	in, err := record.ReadManualInput(s.FS, record.RunDir(repo, "r1")+"/manual_inputs/r1__ship_it.json")
	if err != nil || in == nil {
		t.Fatalf("decision file: %v, %v", in, err)
	}
	if want := map[string]any{"ticket": "OPS-1", "env": "staging"}; !maps.Equal(in.Input, want) {
		t.Errorf("recorded inputs %v, want %v", in.Input, want)
	}
}

// TestDecideRejectionNeedsNoInputs: a rejection of a step with required
// inputs is recorded without them.
func TestDecideRejectionNeedsNoInputs(t *testing.T) {
	s, _ := newService(t, inputSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
	d, err := s.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_it"), Reason: "not today"})
	if err != nil || d.Approved {
		t.Fatalf("reject = %+v, %v", d, err)
	}
}

// TestCheckedAsk: an approval answered at the terminal is checked and
// completed as flow approve's is; one that does not fit is not recorded.
func TestCheckedAsk(t *testing.T) {
	q := Question{RunID: "r1", Step: keytest.K("approval"), Inputs: releaseInputs}
	answer := func(in core.HumanInput, ok bool) func(Question) (core.HumanInput, bool) {
		return func(Question) (core.HumanInput, bool) { return in, ok }
	}
	var out strings.Builder
	in, ok := checkedAsk(answer(core.HumanInput{Approved: true, Input: map[string]any{"ticket": "OPS-2"}}, true), &out)(q)
	if want := map[string]any{"ticket": "OPS-2", "env": "staging", "note": ""}; !ok || !maps.Equal(in.Input, want) {
		t.Errorf("approval = %+v, %v; want inputs %v", in, ok, want)
	}
	in, ok = checkedAsk(answer(core.HumanInput{Approved: true, Input: map[string]any{"tikcet": "OPS-2"}}, true), &out)(q)
	if ok || !strings.Contains(out.String(), `did you mean "ticket"`) {
		t.Errorf("approval with a misspelt input = %+v, %v; printed %q", in, ok, out.String())
	}
	in, ok = checkedAsk(answer(core.HumanInput{Approved: false, Reason: "no"}, true), &out)(q)
	if !ok || in.Approved || in.Input != nil {
		t.Errorf("rejection = %+v, %v", in, ok)
	}
}

// TestNewQuestion: the question of a step of a loop's body, named by
// its instance's key, carries the inputs its body step declares, so
// that an answer at the terminal is checked as flow approve's is.
func TestNewQuestion(t *testing.T) {
	src := "name: q\nsteps:\n" +
		"  - id: ship\n    human: {message: ship, inputs: [{name: ticket, required: true}]}\n" +
		"  - id: each\n    for_each: [a]\n    steps:\n      - id: check\n        human: {inputs: [{name: note}]}\n"
	wf, err := config.Parse(afero.NewMemMapFs(), "/w/q.yaml", "yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for step, want := range map[string]string{"ship": "ticket", "each[0].check": "note", "each": ""} {
		q := NewQuestion(wf, "r1", keytest.K(step), "m")
		var got string
		if len(q.Inputs) > 0 {
			got = q.Inputs[0].Name
		}
		if got != want || q.RunID != "r1" || q.Step != keytest.K(step) || q.Message != "m" {
			t.Errorf("NewQuestion(%s) = %+v, want input %q", step, q, want)
		}
	}
}
