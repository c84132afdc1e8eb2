package temporal

import (
	"reflect"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// TestCarriedInputs: every input a run may hold when it continues as
// new is tagged and decoded back to itself, and every tag has a decoder.
func TestCarriedInputs(t *testing.T) {
	yes := true
	ins := []core.Input{
		core.Begin{Control: core.Pause, Gates: map[string]bool{"ci": true}},
		core.WhenResult{Step: keytest.K("a"), Run: true},
		core.ItemsResult{Step: keytest.K("l")},
		core.SessionDone{Step: keytest.K("a"), AutoApprove: &yes},
		core.SessionPID{Step: keytest.K("a"), PID: 7},
		core.HumanReady{Step: keytest.K("h"), ManualInputPath: "/m"},
		core.HumanDecision{Step: keytest.K("h"), Input: core.HumanInput{Approved: true, By: "x"}},
		core.TimerFired{Step: keytest.K("a")},
		core.ControlChanged{Desired: core.Pause},
		core.GatesChanged{Gates: map[string]bool{"ci": true, "window": false}},
		core.CleanupDone{Failed: true},
		core.Interrupt{},
	}
	kinds := map[string]bool{}
	for _, in := range ins {
		tg, err := tag(in)
		if err != nil {
			t.Fatalf("tag(%T): %v", in, err)
		}
		kinds[tg.Kind] = true
		back, err := untag(tg)
		if err != nil {
			t.Fatalf("untag(%s): %v", tg.Kind, err)
		}
		if !reflect.DeepEqual(back, in) {
			t.Errorf("%T: %#v came back as %#v", in, in, back)
		}
	}
	for k := range carried {
		if !kinds[k] {
			t.Errorf("decoder %q has no input in this test", k)
		}
	}
}

// TestReadSourcePrompts: a step's prompt_file goes with the run's
// source, by its path in the repository, so that the workflow parses
// the same on every worker; a prompt_path, found when its step starts
// (an earlier step may write it), is not read at start.
func TestReadSourcePrompts(t *testing.T) {
	src := "name: p\nagents: {a: {run: cat}}\ndefaults: {agent: a}\nsteps:\n" +
		"  - {id: a, prompt_file: prompts/a.md}\n" +
		"  - {id: b, prompt_path: later.md}\n"
	fsys := repoFS(t, "workflow.yaml", src, map[string]string{"prompts/a.md": "do a"})
	wf, err := config.Load(fsys, repo+"/workflow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadSource(fsys, wf, repo)
	if err != nil {
		t.Fatalf("ReadSource: %v", err)
	}
	if want := map[string][]byte{"prompts/a.md": []byte("do a")}; !reflect.DeepEqual(got.Prompts, want) {
		t.Errorf("prompts %q, want %q", got.Prompts, want)
	}
	back, err := ParseSource(repo, got, record.Invocation{})
	if err != nil {
		t.Fatalf("the source does not parse on its own: %v", err)
	}
	if s := back.Step("a"); s == nil || s.Prompt == nil {
		t.Errorf("step a has no prompt after ParseSource: %+v", s)
	}
}
