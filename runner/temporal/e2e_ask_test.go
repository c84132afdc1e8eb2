package temporal

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/spec"
)

// TestEndToEndAsk: on a real server, a run followed at a terminal asks
// for the decision of a step that waits on a human, with the inputs it
// declares, and sends the answer as flow approve would; a step of a
// loop's body is asked its body step's inputs.
func TestEndToEndAsk(t *testing.T) {
	c := devServer(t)
	repo := t.TempDir()
	src := `name: asked
steps:
  - id: build
    run: echo built
  - id: ship
    human:
      message: ship it?
      inputs:
        - {name: ticket, required: true}
  - id: each
    for_each: ["x"]
    steps:
      - id: check
        human:
          message: "check {{ item }}?"
          inputs:
            - {name: note, required: true}
`
	fsys, wf := e2eWorkflow(t, repo, "asked.yaml", src)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acts := e2eActivities(fsys, repo)
	serveE2E(t, ctx, c, "asked", false, acts)
	var (
		mu    sync.Mutex
		asked []ops.Question
	)
	ask := func(q ops.Question) (core.HumanInput, bool) {
		mu.Lock()
		asked = append(asked, q)
		mu.Unlock()
		in := map[string]any{}
		for _, i := range q.Inputs {
			in[i.Name] = "from " + q.Step.String()
		}
		return core.HumanInput{Approved: true, By: "terminal", Input: in}, true
	}
	eng := &Engine{Client: c, TaskQueue: "asked", FS: fsys, PollEvery: 50 * time.Millisecond}
	var out bytes.Buffer
	res, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "asked-1"}, ops.Attach{Output: &out, Ask: ask})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %+v %v\n%s", res, err, out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[0].Step != keytest.K("ship") || asked[0].Message != "ship it?" || len(asked[0].Inputs) != 1 ||
		asked[1].Step != keytest.K("each[0].check") || asked[1].Message != "check x?" || len(asked[1].Inputs) != 1 || asked[1].Inputs[0].Name != "note" {
		t.Errorf("asked %+v", asked)
	}
	st, err := Status(ctx, c, "asked-1")
	if err != nil {
		t.Fatal(err)
	}
	if h := st.State.Steps[keytest.K("ship")].Human; h == nil || h.By != "terminal" || h.Input["ticket"] != "from ship" {
		t.Errorf("ship's decision %+v", h)
	}
	if h := st.State.Steps[keytest.K("each[0].check")].Human; h == nil || h.Input["note"] != "from each[0].check" {
		t.Errorf("the instance's decision %+v", h)
	}
	if !strings.Contains(out.String(), "run asked-1 completed") {
		t.Errorf("output:\n%s", out.String())
	}
}
