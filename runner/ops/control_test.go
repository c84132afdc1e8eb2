package ops

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// TestControlSaysWhetherARunnerIsLive: the result of Control says
// whether a live runner holds the run, so that a front end can tell
// that flow continue alone does not make a run without one go on.
func TestControlSaysWhetherARunnerIsLive(t *testing.T) {
	for _, live := range []bool{false, true} {
		s, _ := newService(t, humanSteps, nil)
		run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
		if live {
			// A foreground runner holds the run's lock while it waits.
			b, _ := json.Marshal(runlock.Holder{PID: 99, Host: "test", Token: "t"})
			if err := afero.WriteFile(s.FS, filepath.Join(record.RunDir(repo, "r1"), record.LockFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			s.Alive = func(h runlock.Holder) bool { return h.PID == 99 }
		}
		res, err := s.Control(ControlRequest{RunID: "r1", State: core.Continuous})
		if err != nil {
			t.Fatal(err)
		}
		if res.RunnerLive != live {
			t.Errorf("with a live runner %v: RunnerLive = %v", live, res.RunnerLive)
		}
	}
}
