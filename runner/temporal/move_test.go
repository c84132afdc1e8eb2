package temporal

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/record"
)

// TestWorkflowMove: a run moved off its worker (--move) is opened by
// whichever worker of the run's task queue takes it — not on the lost
// worker's own queue — in that worker's repository: its record there
// starts from the state the run carries, with a warning that says where
// it moved from, its paths are re-rooted, and its sessions run there.
// The lost worker's record is left as it was.
func TestWorkflowMove(t *testing.T) {
	h := failedRestartable(t)
	lost := Host{Name: "w1", Repo: repo, Queue: HostQueue("q", "w1", repo)}
	h.prepareRestart("", true, "")
	st := h.in.Restart.State
	h.in.Restart = &Restart{Host: lost, State: st, Retry: true, Move: true}
	// The worker that takes the run: another host, another checkout.
	const repo2 = "/repo2"
	h.acts = &Activities{Runner: &local.Runner{FS: h.fs, Clock: clock.NewFake(start), Starter: h.starter, Host: "w2", PID: 2},
		Repo: repo2, Host: "w2", Queue: HostQueue("q", "w2", repo2)}
	t.Cleanup(func() { h.acts.Close() })
	h.newEnv()
	var mu sync.Mutex
	queues := map[string][]string{}
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		queues[info.ActivityType.Name] = append(queues[info.ActivityType.Name], info.TaskQueue)
	})
	if res := h.run(); res.Status != core.RunCompleted || res.RunDir != record.RunDir(repo2, "r1") {
		t.Fatalf("the moved retry: %+v", res)
	}
	if got := queues[ActivityOpen]; !slices.Equal(got, []string{"q"}) {
		t.Errorf("the moved run was opened on %v, want the run's task queue [q]", got)
	}
	for _, q := range queues[ActivitySession] {
		if q != h.acts.Queue {
			t.Errorf("a session of the moved run went to %s, want %s", q, h.acts.Queue)
		}
	}
	if got, want := h.starter.steps(), []string{"b.0.1", "c.0.1"}; !slices.Equal(got, want) {
		t.Errorf("the moved retry ran %v, want %v", got, want)
	}
	moved, _, err := record.LoadState(h.fs, record.RunDir(repo2, "r1"), false, start)
	if err != nil {
		t.Fatal(err)
	}
	if moved.Status != core.RunCompleted || moved.RepoDir != repo2 || moved.Runner.Host != "w2" ||
		!strings.HasPrefix(moved.Steps[keytest.K("c")].LogPath, repo2+"/") || moved.Steps[keytest.K("a")].Status != core.Completed {
		t.Errorf("the record on w2: status %s, repo %s, runner %+v, c's log %s, a %s",
			moved.Status, moved.RepoDir, moved.Runner, moved.Steps[keytest.K("c")].LogPath, moved.Steps[keytest.K("a")].Status)
	}
	var carried core.State
	if err := json.Unmarshal(st, &carried); err != nil {
		t.Fatal(err)
	}
	ev := eventLines(t, h.fs, record.RunDir(repo2, "r1"))
	if len(ev) < 3 || !slices.Equal(ev[:3], []string{"warning", "runner_started", "retry"}) {
		t.Errorf("w2's events begin %v, want the move's warning, runner_started, retry", ev)
	}
	if b := readFile(t, h, record.RunDir(repo2, "r1")+"/"+record.EventsFile); !strings.Contains(b, "moved on purpose (--move) off worker w1 (/repo) to worker w2 (/repo2)") ||
		!strings.Contains(b, `"seq":`+jsonInt(carried.Seq+1)) {
		t.Errorf("w2's events do not go on from seq %d with the move's warning:\n%s", carried.Seq, b)
	}
	if old := h.state(); old.Status != core.RunFailed || old.Seq != carried.Seq {
		t.Errorf("the lost worker's record changed: %s at seq %d", old.Status, old.Seq)
	}
}

func readFile(t *testing.T, h *harness, path string) string {
	t.Helper()
	b, err := afero.ReadFile(h.fs, path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestLostLiveness: flow status says that a run waits for a worker that
// may be lost, and how to move it, once no worker has asked for its
// host queue's tasks for LostAfter.
func TestLostLiveness(t *testing.T) {
	host := Host{Name: "w1", Repo: repo, Queue: HostQueue("q", "w1", repo)}
	now := start
	for _, tc := range []struct {
		name string
		last time.Time
		lost bool
	}{
		{"asked a minute ago", now.Add(-time.Minute), false},
		{"asked three minutes ago", now.Add(-3 * time.Minute), true},
		{"never asked", time.Time{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, lost := lostLiveness("r1", host, tc.last, now)
			if lost != tc.lost {
				t.Fatalf("lost = %v, want %v", lost, tc.lost)
			}
			if lost && (l.State != record.LiveStale || !strings.Contains(l.Reason, "flow resume r1 --engine temporal --move")) {
				t.Errorf("liveness %+v", l)
			}
		})
	}
}
