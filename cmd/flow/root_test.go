package main

import (
	"runtime"
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

func environ(m map[string]string) []string {
	var env []string
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	return env
}
