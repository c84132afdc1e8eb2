package record

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
)

// TestPausedLiveness: a paused run says whether a live runner waits in
// it (flow continue is enough) or not (flow continue, then flow resume).
func TestPausedLiveness(t *testing.T) {
	now := time.Date(2025, 1, 15, 15, 0, 0, 0, time.UTC)
	holder := runlock.Holder{PID: 7, Host: "h", StartedAt: now.Add(-time.Hour), Token: "t"}
	tests := []struct {
		name      string
		lock      bool
		alive     bool
		beat      time.Duration
		want      []string
		wantNot   []string
		wantLive  bool
		wantOwner bool
	}{
		{name: "a foreground runner waits", lock: true, alive: true, beat: 2 * time.Second,
			want: []string{"the runner (pid 7) waits", "flow continue r1"}, wantNot: []string{"flow resume"}, wantLive: true, wantOwner: true},
		{name: "no runner after --no-wait", beat: time.Hour,
			want: []string{"no runner holds the run", "flow continue r1, then flow resume r1"}},
		{name: "the runner was killed while paused", lock: true, alive: false, beat: 2 * time.Second,
			want: []string{"(pid 7) is gone", "flow continue r1, then flow resume r1"}, wantOwner: true},
		{name: "a live pid that stopped beating", lock: true, alive: true, beat: 2 * time.Minute,
			want: []string{"then flow resume r1"}, wantOwner: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			dir := "/repo/.agents/runs/r1"
			fsys.MkdirAll(dir, 0o755)
			if tt.lock {
				b, _ := json.Marshal(holder)
				afero.WriteFile(fsys, filepath.Join(dir, LockFile), b, 0o644)
			}
			st := &core.State{RunID: "r1", Status: core.RunPaused, Steps: map[core.StepKey]*core.StepState{},
				Runner: &core.RunnerInfo{HeartbeatAt: &core.Time{Time: now.Add(-tt.beat)}}}
			alive := func(runlock.Holder) bool { return tt.alive }
			got := Live(fsys, dir, st, nil, now, alive)
			if got.State != LiveStopped {
				t.Errorf("state %s, want %s", got.State, LiveStopped)
			}
			for _, w := range tt.want {
				if !strings.Contains(got.Reason, w) {
					t.Errorf("reason %q does not say %q", got.Reason, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(got.Reason, w) {
					t.Errorf("reason %q says %q", got.Reason, w)
				}
			}
			h, live := LiveRunner(fsys, dir, st, now, alive)
			if live != tt.wantLive || (h != nil) != tt.wantOwner {
				t.Errorf("LiveRunner = %v, %v; want live %v, a holder %v", h, live, tt.wantLive, tt.wantOwner)
			}
		})
	}
}

// TestTemporalMirrorIsNotDead: a worker's mirror of a run the Temporal
// engine drives has no local runner, and is never called dead (nor
// offered to a local resume).
func TestTemporalMirrorIsNotDead(t *testing.T) {
	fsys := afero.NewMemMapFs()
	dir := "/repo/.agents/runs/r1"
	st := &core.State{RunID: "r1", Status: core.RunRunning, StepOrder: keytest.Keys("a"), Steps: map[core.StepKey]*core.StepState{keytest.K("a"): {Status: core.Running}}}
	now := time.Date(2025, 1, 15, 15, 0, 0, 0, time.UTC)
	never := func(runlock.Holder) bool { return false }
	if l := Live(fsys, dir, st, nil, now, never); l.State != LiveDead {
		t.Fatalf("without temporal.json: %+v, want dead", l)
	}
	if err := afero.WriteFile(fsys, filepath.Join(dir, TemporalLaunchFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := Live(fsys, dir, st, nil, now, never)
	if l.State != LiveStale || !strings.Contains(l.Reason, "--engine temporal") {
		t.Errorf("a Temporal mirror: %+v, want stale, naming --engine temporal", l)
	}
}
