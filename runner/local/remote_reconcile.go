package local

import (
	"io"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
)

// Reconcile records on st how the workflow of run st changed to wf
// since the run last ran, as a local resume records it
// (reconcileWorkflow): the steps added and removed, the new digest and
// order, and the vars. It returns those events, already applied to st,
// in order and not numbered. It is for a driver that decides elsewhere
// (the Temporal driver) and goes on with an edited workflow: it reads
// nothing, writes nothing outside memory and prints nothing.
func Reconcile(wf *config.Workflow, st *core.State, now time.Time) []core.Event {
	x := &run{r: &Runner{FS: afero.NewMemMapFs(), Stdout: io.Discard}, st: st, dir: "/run", warned: map[string]string{}}
	x.setWorkflow(wf)
	x.reconcileWorkflow(now)
	return x.pending
}
