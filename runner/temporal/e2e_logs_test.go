package temporal

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/spec"
)

// TestEndToEndFollowLogs: on a real server, flow logs --follow prints a
// running session's output as its activity beats, each byte once and in
// order, and returns when the session ends.
func TestEndToEndFollowLogs(t *testing.T) {
	c := devServer(t)
	repo := t.TempDir()
	src := "name: talk\nsteps:\n  - {id: talk, run: \"for i in 1 2 3 4 5 6; do echo line $i; sleep 0.7; done\"}\n  - {id: after, needs: [talk], run: \"i=0; while [ ! -f released ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\"}\n"
	fsys, wf := e2eWorkflow(t, repo, "talk.yaml", src)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acts := e2eActivities(fsys, repo)
	acts.HeartbeatEvery = 100 * time.Millisecond
	serveE2E(t, ctx, c, "talk", false, acts)
	eng := &Engine{Client: c, TaskQueue: "talk", FS: fsys, PollEvery: 50 * time.Millisecond, SessionHeartbeat: time.Second, Detach: true}
	var started bytes.Buffer
	if _, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "talk-1"}, ops.Attach{Output: &started}); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := Status(ctx, c, "talk-1")
		if err == nil && st.State.Steps[keytest.K("talk")].Status == core.Running {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("step talk never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var out firstWrite
	var notes bytes.Buffer
	begun := time.Now()
	if err := FollowLogs(ctx, c, "talk-1", keytest.K("talk"), 100*time.Millisecond, &out, &notes); err != nil {
		t.Fatal(err)
	}
	if want := "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n"; out.String() != want || notes.Len() > 0 {
		t.Errorf("followed %q (notes %q), want %q", out.String(), notes.String(), want)
	}
	if d := time.Since(begun); d < time.Second {
		t.Errorf("the follow returned after %s, before the session ended", d)
	}
	st, err := Status(ctx, c, "talk-1")
	if err != nil || st.State.Steps[keytest.K("talk")].Status != core.Completed || st.State.Status.Terminal() {
		t.Errorf("when the follow returned: %v %+v", err, st.State)
	}
	if ended := time.Now(); out.first.IsZero() || ended.Sub(out.first) < time.Second {
		t.Errorf("the first output came %s before the session ended: it was not followed while it ran", ended.Sub(out.first))
	}
	// The step after talk waits for this file (a minute at most), so
	// that the run is still open whenever the checks above are made.
	if err := os.WriteFile(filepath.Join(repo, "released"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// firstWrite is a buffer that notes when it was first written to.
type firstWrite struct {
	buf   bytes.Buffer
	first time.Time
}

func (f *firstWrite) Write(p []byte) (int, error) {
	if f.first.IsZero() && len(p) > 0 {
		f.first = time.Now()
	}
	return f.buf.Write(p)
}

func (f *firstWrite) String() string { return f.buf.String() }

// TestEndToEndWatchTails: on a real server, flow status --watch on a
// terminal shows the last lines of a running session's output, as its
// activity beat them, as it does for a local run.
func TestEndToEndWatchTails(t *testing.T) {
	c := devServer(t)
	repo := t.TempDir()
	src := "name: tails\nsteps:\n  - {id: talk, run: \"for i in 1 2 3 4; do echo line $i; done; sleep 5\"}\n"
	fsys, wf := e2eWorkflow(t, repo, "tails.yaml", src)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acts := e2eActivities(fsys, repo)
	acts.HeartbeatEvery = 100 * time.Millisecond
	serveE2E(t, ctx, c, "tails", false, acts)
	eng := &Engine{Client: c, TaskQueue: "tails", FS: fsys, PollEvery: 50 * time.Millisecond, SessionHeartbeat: time.Second, Detach: true}
	if _, err := eng.Run(ctx, spec.Options{Workflow: wf, Repo: repo, RunID: "tails-1"}, ops.Attach{Output: io.Discard}); err != nil {
		t.Fatal(err)
	}
	// Watched as soon as it is started (--detach): the watch waits for
	// a worker to take the run.
	seen := errors.New("seen")
	var got ops.Tail
	err := Watch(ctx, c, "tails-1", 50*time.Millisecond, ops.WatchOptions{Every: true, Tails: 3}, func(u ops.Update) error {
		for _, tl := range u.Tails {
			if tl.Step == "talk" && len(tl.Lines) == 3 {
				got = tl
				return seen
			}
		}
		return nil
	})
	if !errors.Is(err, seen) {
		t.Fatalf("the watch ended without the running session's tail: %v", err)
	}
	if want := []string{"line 2", "line 3", "line 4"}; !slices.Equal(got.Lines, want) || !strings.HasPrefix(got.Log, "talk.") {
		t.Errorf("tail %+v, want the lines %q of talk's log", got, want)
	}
	// flow status shows the running session's process, as its
	// activity beat it: a live process of this host.
	st, err := Status(ctx, c, "tails-1")
	if err != nil {
		t.Fatal(err)
	}
	if s := st.State.Steps[keytest.K("talk")]; s.Status != core.Running || s.PID <= 0 {
		t.Errorf("talk while it runs: %s, pid %d", s.Status, s.PID)
	} else if err := syscall.Kill(s.PID, 0); err != nil {
		t.Errorf("the running session's pid %d: %v", s.PID, err)
	}
}
