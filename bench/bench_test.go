// Package bench measures flow's own per-step cost. The Go benchmarks here
// drive local.Runner with sessions that end at once, so that what they
// time is the runner (decision core, event log, snapshots, logs, reports)
// and not process spawns; run.sh times the real binary against a shell
// loop and the floor of a durable runner (bench/floor).
package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// instant is a proc.Starter whose sessions exit 0 the moment they start
// and write nothing.
type instant struct{}

func (instant) Start(ctx context.Context, spec proc.Spec) (proc.Session, error) {
	now := time.Now()
	return proc.Ended{Result: proc.Result{ExitCode: 0, Started: now, Ended: now}}, nil
}

// workflowYAML returns a workflow of n sequential steps running `true`:
// a step without needs depends on the previous one.
func workflowYAML(n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "name: seq%d\nsteps:\n", n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - id: s%d\n    run: \"true\"\n", i)
	}
	return []byte(b.String())
}

func loadWorkflow(tb testing.TB, fsys afero.Fs, dir string, n int) *config.Workflow {
	tb.Helper()
	path := filepath.Join(dir, fmt.Sprintf("wf-%d.yaml", n))
	data := workflowYAML(n)
	if err := afero.WriteFile(fsys, path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	wf, err := config.Parse(fsys, path, "yaml", data)
	if err != nil {
		tb.Fatal(err)
	}
	return wf
}

// runOnce runs wf to completion in a fresh repository directory of fsys.
func runOnce(tb testing.TB, fsys afero.Fs, wf *config.Workflow, repo string) {
	tb.Helper()
	if err := fsys.MkdirAll(repo, 0o755); err != nil {
		tb.Fatal(err)
	}
	r := &local.Runner{
		FS:      fsys,
		Clock:   clock.Real(),
		Starter: instant{},
		Environ: []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"},
		Host:    "bench",
		PID:     os.Getpid(),
	}
	res, err := r.Run(context.Background(), spec.Options{Workflow: wf, Repo: repo})
	if err != nil {
		tb.Fatal(err)
	}
	if res.ExitCode != 0 || res.Status != core.RunCompleted {
		tb.Fatalf("run ended %s (exit %d): %s", res.Status, res.ExitCode, res.Reason)
	}
}

var sizes = []int{10, 100, 1000, 5000, 20000}

// BenchmarkRunnerMem runs N-step workflows on an in-memory Fs with
// instant sessions: the runner's own CPU cost per step, with no process
// spawns and no disk. ns/step is the figure to compare across N: it should
// not grow with N.
func BenchmarkRunnerMem(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			base := afero.NewMemMapFs()
			wf := loadWorkflow(b, base, "/wf", n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				fsys := afero.NewMemMapFs()
				runOnce(b, fsys, wf, fmt.Sprintf("/repo%d", i))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
}

// BenchmarkRunnerDisk runs N-step workflows on the real file system (in a
// temporary directory) with instant sessions: the runner's cost per step
// including its durable writes (the synced event append, session logs,
// snapshots), still with no process spawns.
func BenchmarkRunnerDisk(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			fsys := afero.NewOsFs()
			dir := b.TempDir()
			wf := loadWorkflow(b, fsys, dir, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				runOnce(b, fsys, wf, filepath.Join(dir, fmt.Sprintf("repo%d", i)))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
}

// BenchmarkLoad parses and validates an N-step workflow: part of the
// start-up of every flow run.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			fsys := afero.NewMemMapFs()
			data := workflowYAML(n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := config.Parse(fsys, "/wf.yaml", "yaml", data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestInstantRun checks that the benchmarks' setup completes a run, so
// that `go test ./bench` catches a broken harness without benchmarking.
func TestInstantRun(t *testing.T) {
	fsys := afero.NewMemMapFs()
	wf := loadWorkflow(t, fsys, "/wf", 20)
	runOnce(t, fsys, wf, "/repo")
	runs, err := record.ListRuns(fsys, "/repo")
	if err != nil || len(runs) != 1 || runs[0].Err != nil {
		t.Fatalf("runs: %v %v", runs, err)
	}
	st := runs[0].State
	for id, s := range st.Steps {
		if s.Status != core.Completed {
			t.Errorf("step %s is %s", id, s.Status)
		}
	}
}

// BenchmarkNewPlan builds the runner's plan of an N-step chain, done once
// at the start of every run. live-B/op is the heap the plan keeps for as
// long as the run lasts.
func BenchmarkNewPlan(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			wf := loadWorkflow(b, afero.NewMemMapFs(), "/wf", n)
			noLimits := func(*config.Limit) (int, error) { return 0, nil }
			var live uint64
			b.ReportAllocs()
			for b.Loop() {
				var before, after runtime.MemStats
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				p, err := spec.NewPlan(wf, spec.Budgets{}, noLimits)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(p)
				live = after.HeapAlloc - before.HeapAlloc
				b.StartTimer()
			}
			b.ReportMetric(float64(live), "live-B/op")
		})
	}
}

// BenchmarkNewPlanChained plans a workflow whose every step loops back to
// the one before it: what a loop-back resets is computed when a
// loop-back happens, not for every target before the first session.
func BenchmarkNewPlanChained(b *testing.B) {
	const n = 5000
	var src strings.Builder
	src.WriteString("name: chained\nsteps:\n  - {id: s0, run: \"true\"}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&src, "  - {id: s%d, run: \"true\", loop_back_to: s%d}\n", i, i-1)
	}
	fs := afero.NewMemMapFs()
	if err := afero.WriteFile(fs, "/wf/chained.yaml", []byte(src.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	wf, err := config.Load(fs, "/wf/chained.yaml")
	if err != nil {
		b.Fatal(err)
	}
	noLimits := func(*config.Limit) (int, error) { return 0, nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := spec.NewPlan(wf, spec.Budgets{}, noLimits); err != nil {
			b.Fatal(err)
		}
	}
}
