package temporal

import (
	"context"
	"errors"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/spec"
)

// TestWorktreesRefused: a workflow with worktrees is refused by the
// Temporal engine, before anything reaches the server.
func TestWorktreesRefused(t *testing.T) {
	wf, err := config.Parse(afero.NewMemMapFs(), "wf.yaml", "yaml", []byte("name: w\nsteps:\n  - id: l\n    for_each: [a]\n    workspace: worktree\n    steps:\n      - {id: a, run: a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&Engine{}).Run(context.Background(), spec.Options{Workflow: wf}, ops.Attach{})
	if !errors.Is(err, ops.ErrUnsupported) {
		t.Fatalf("run: %v, want unsupported", err)
	}
}
