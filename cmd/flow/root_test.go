package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/flow-run/flow/runner/ops"
)

// TestRunnerProcs: a runner runs its Go code on one processor, unless
// $GOMAXPROCS chooses.
func TestRunnerProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tt := range []struct {
		env  map[string]string
		set  int
		want int
	}{
		{env: nil, set: 4, want: 1},
		{env: map[string]string{"GOMAXPROCS": "3"}, set: 3, want: 3},
	} {
		runtime.GOMAXPROCS(tt.set)
		a := &app{svc: &ops.Service{Environ: environ(tt.env)}}
		a.runnerProcs()()
		if got := runtime.GOMAXPROCS(0); got != tt.want {
			t.Errorf("env %v: GOMAXPROCS %d, want %d", tt.env, got, tt.want)
		}
	}
}

// TestRunnerPacesTheCollector: a runner paces the collector from its
// start (internal/gcpace sets Go's default percentage, then follows the
// live heap) and restores the percentage it found when it ends, unless
// $GOGC or $GOMEMLIMIT chooses; then it leaves the collector alone.
func TestRunnerPacesTheCollector(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tt := range []struct {
		env   map[string]string
		paced bool
	}{
		{env: nil, paced: true},
		{env: map[string]string{"GOGC": "50"}},
		{env: map[string]string{"GOMEMLIMIT": "1GiB"}},
	} {
		debug.SetGCPercent(300)
		a := &app{svc: &ops.Service{Environ: environ(tt.env)}}
		stop := a.runnerProcs()
		during := debug.SetGCPercent(300)
		stop()
		after := debug.SetGCPercent(300)
		// Paced, the percentage is Go's default or what the live heap
		// brought it down to, never below the floor.
		if tt.paced && (during < heapFloor || during > 100) {
			t.Errorf("env %v: percentage while running %d, want %d to 100", tt.env, during, heapFloor)
		}
		if !tt.paced && during != 300 {
			t.Errorf("env %v: percentage while running %d, want the 300 from before", tt.env, during)
		}
		if after != 300 {
			t.Errorf("env %v: percentage after the run %d, want the 300 from before", tt.env, after)
		}
	}
}

func environ(m map[string]string) []string {
	var env []string
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	return env
}
