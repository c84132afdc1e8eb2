package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/runner/wftest"
)

// BenchmarkFlowTest runs the tests of the shipped workflows
// (workflows/*.test.yaml and *.test.hcl) as flow test does: in process,
// on a memory file system over the real one, with a fake clock and
// scripted sessions. It reports the number of test cases per operation
// as tests/op, so that the time per test is ns/op divided by it.
func BenchmarkFlowTest(b *testing.B) {
	fsys := afero.NewCopyOnWriteFs(afero.NewReadOnlyFs(afero.NewOsFs()), afero.NewMemMapFs())
	files, err := wftest.Expand(fsys, []string{filepath.Join("..", "workflows")})
	if err != nil {
		b.Fatal(err)
	}
	if len(files) == 0 {
		b.Fatal("no shipped test files")
	}
	ctx := context.Background()
	cases := 0
	for b.Loop() {
		cases = 0
		for _, f := range files {
			res, err := wftest.RunFile(ctx, fsys, f, wftest.Options{})
			if err != nil {
				b.Fatalf("%s: %v", f, err)
			}
			for _, r := range res.Results {
				if !r.Passed {
					b.Fatalf("%s: %s failed: %v", f, r.Name, r.Failures)
				}
			}
			cases += len(res.Results)
		}
	}
	b.ReportMetric(float64(cases), "tests/op")
}

// BenchmarkSimulated1000 runs one workflow test of a 1,000-step
// workflow through wftest: every session scripted (unscripted ones
// succeed at once), the whole run simulated in memory.
func BenchmarkSimulated1000(b *testing.B) {
	fsys := afero.NewMemMapFs()
	if err := afero.WriteFile(fsys, "/w/wf.yaml", workflowYAML(1000), 0o644); err != nil {
		b.Fatal(err)
	}
	test := "workflow: wf.yaml\ntests:\n  - name: all steps\n    expect:\n      exit_code: 0\n      status: completed\n"
	if err := afero.WriteFile(fsys, "/w/wf.test.yaml", []byte(test), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		res, err := wftest.RunFile(ctx, fsys, "/w/wf.test.yaml", wftest.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Results) != 1 || !res.Results[0].Passed || len(res.Results[0].Path) != 1000 {
			r := res.Results[0]
			b.Fatalf("passed %v, %d steps started, failures %s", r.Passed, len(r.Path), strings.Join(r.Failures, "; "))
		}
	}
}
