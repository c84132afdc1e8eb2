package temporal

import (
	"reflect"
	"testing"

	"github.com/flow-run/flow/runner"
	"github.com/flow-run/flow/runner/core"
)

// TestCarriedInputs: every input a run may hold when it continues as
// new is tagged and decoded back to itself, and every tag has a decoder.
func TestCarriedInputs(t *testing.T) {
	yes := true
	ins := []runner.Input{
		core.Begin{Control: core.Pause, Gates: map[string]bool{"ci": true}},
		core.WhenResult{Step: "a", Run: true},
		core.ItemsResult{Step: "l"},
		core.SessionDone{Step: "a", AutoApprove: &yes},
		core.SessionPID{Step: "a", PID: 7},
		core.HumanReady{Step: "h", ManualInputPath: "/m"},
		core.HumanDecision{Step: "h", Input: core.HumanInput{Approved: true, By: "x"}},
		core.TimerFired{Step: "a"},
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
