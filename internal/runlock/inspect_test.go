package runlock

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestInspectProcessSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	p, err := InspectProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.Started.After(time.Now()) || time.Since(p.Started) > 24*time.Hour {
		t.Errorf("started %v: not this test's process", p.Started)
	}
	if len(p.Args) == 0 || p.Args[0] != os.Args[0] {
		t.Errorf("args %q, want %q first", p.Args, os.Args[0])
	}
	if p.State != "R" && p.State != "S" {
		t.Errorf("state %q", p.State)
	}
	if _, err := InspectProcess(1 << 30); err == nil {
		t.Error("a pid that no process has was inspected")
	}
}

func TestRunnerOf(t *testing.T) {
	locked := time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)
	h := Holder{PID: 7, Host: "h", StartedAt: locked}
	tests := []struct {
		name string
		p    Process
		self string
		want bool
	}{
		{"flow, started before the lock", Process{Args: []string{"/usr/bin/flow", "run"}, Started: locked.Add(-time.Second)}, "", true},
		{"same executable", Process{Args: []string{"./bin/x"}, Exe: "/opt/flow-1.2", Started: locked}, "/opt/flow-1.2", true},
		{"same program name as self", Process{Args: []string{"/tmp/flow.test"}, Started: locked}, "/x/flow.test", true},
		{"pid reused later", Process{Args: []string{"flow"}, Started: locked.Add(time.Minute)}, "", false},
		{"another program", Process{Args: []string{"/usr/bin/vim", "notes"}, Started: locked.Add(-time.Hour)}, "/usr/bin/flow", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := tt.p.RunnerOf(h, tt.self)
			if ok != tt.want || ok != (why == "") {
				t.Errorf("RunnerOf = %v, %q; want %v", ok, why, tt.want)
			}
		})
	}
}
