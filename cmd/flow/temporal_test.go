package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/runner/ops"
	"github.com/spf13/afero"
)

// TestEngineTemporalNeedsFlowTemporal: flow without the Temporal engine
// linked in says where the engine is, and how to build it, with exit 2;
// an unknown engine is bad usage; --detach is only for Temporal.
func TestEngineTemporalNeedsFlowTemporal(t *testing.T) {
	if temporalHooks != nil {
		t.Skip("this flow links the Temporal engine")
	}
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.yaml")
	if err := os.WriteFile(wf, []byte("name: w\nsteps:\n  - {id: a, run: \"true\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	t.Setenv("FLOW_TEMPORAL_ADDRESS", "")
	t.Chdir(dir)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", wf, "--engine", "temporal"}, 2, "go build -tags temporal -o flow-temporal ./cmd/flow"},
		{[]string{"worker", "--repo", dir}, 2, "flow-temporal"},
		{[]string{"approve", "r1", "a", "--engine", "temporal"}, 2, "flow-temporal"},
		{[]string{"run", wf, "--engine", "nomad"}, 2, `--engine "nomad"`},
		{[]string{"run", wf, "--detach"}, 2, "--detach is for --engine temporal"},
		{[]string{"resume", "r1", "--move"}, 2, "--move is for --engine temporal"},
		{[]string{"run", wf, "--heartbeat-timeout", "30s"}, 2, "--heartbeat-timeout is for --engine temporal"},
		{[]string{"run", wf, "--engine", "temporal", "--heartbeat-timeout", "1s"}, 2, "--heartbeat-timeout 1s: at least 3s"},
		{[]string{"resume", "r1", "--engine", "temporal"}, 2, "flow-temporal"},
		{[]string{"retry", "r1", "--engine", "temporal"}, 2, "flow-temporal"},
		{[]string{"run", wf, "--start-at-step", "a", "--engine", "temporal"}, 2, "flow-temporal"},
		{[]string{"logs", "r1", "--engine", "temporal"}, 2, "flow-temporal"},
		{[]string{"cancel", "r1", "--engine", "temporal"}, 2, "flow-temporal"},
		{[]string{"logs"}, 2, "no such run in " + filepath.Join(dir, ".agents", "runs")},
	} {
		var out, errb bytes.Buffer
		// Not Run: it would make the test binary the subreaper of the
		// end-to-end scripts' orphans (proc.OS), which it never reaps,
		// and, as root, non-dumpable. These commands start nothing.
		a := &app{stdio: Stdio{In: strings.NewReader(""), Out: &out, Err: &errb},
			svc: &ops.Service{FS: afero.NewOsFs(), Clock: clock.Real(), Dir: dir, Environ: os.Environ()}}
		code := a.exit(context.Background(), a.rootCmd(), tc.args)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("flow %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, errb.String(), tc.code, tc.want)
		}
	}
}
