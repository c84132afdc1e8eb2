package ops

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/record"
)

// summaryOf is what ListRuns must say of a run that Status shows as st.
func summaryOf(st Status) RunSummary {
	x := RunSummary{RunID: st.State.RunID, Dir: st.RunDir, Workflow: st.State.WorkflowName, Status: string(st.State.Status),
		ExitCode: st.State.ExitCode, Usage: st.State.Usage}
	if st.State.CreatedAt != nil {
		x.CreatedAt = st.State.CreatedAt.String()
	}
	if st.State.UpdatedAt != nil {
		x.UpdatedAt = st.State.UpdatedAt.String()
	}
	return x
}

// TestListRunsDamaged: runs whose record is damaged are listed, newest
// first, as status reads them, a fault in a log as the run's error.
func TestListRunsDamaged(t *testing.T) {
	s, clk := newService(t, twoSteps, nil)
	for _, id := range []string{"r1", "r2", "r3", "r4"} {
		run(t, s, RunRequest{Workflow: wf, RunID: id})
		clk.Advance(time.Minute)
	}
	dir := func(id string) string { return record.RunDir(repo, id) }
	// r1: a second writer's line in the middle of its log.
	events := filepath.Join(dir("r1"), record.EventsFile)
	b, err := afero.ReadFile(s.FS, events)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	b = bytes.Join(append(lines[:4:4], append([][]byte{lines[1]}, lines[4:]...)...), nil)
	if err := afero.WriteFile(s.FS, events, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// r2: no run_state.json; r3: a torn last line.
	if err := s.FS.Remove(filepath.Join(dir("r2"), record.StateFile)); err != nil {
		t.Fatal(err)
	}
	events = filepath.Join(dir("r3"), record.EventsFile)
	if b, err = afero.ReadFile(s.FS, events); err != nil {
		t.Fatal(err)
	}
	if err := afero.WriteFile(s.FS, events, append(b, `{"seq":99,"at":"20`...), 0o644); err != nil {
		t.Fatal(err)
	}
	// r5: a directory that holds no run.
	if err := s.FS.MkdirAll(dir("r5"), 0o755); err != nil {
		t.Fatal(err)
	}

	list, err := s.ListRuns("")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range list.Runs {
		ids = append(ids, r.RunID)
	}
	if got := strings.Join(ids, " "); got != "r4 r3 r2 r1 r5" {
		t.Fatalf("runs listed %s", got)
	}
	for _, r := range list.Runs[:3] {
		st, err := s.Status("", r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if want := summaryOf(st); r != want || r.Status != "completed" {
			t.Errorf("%s listed as\n%+v\nstatus says\n%+v", r.RunID, r, want)
		}
	}
	if r := list.Runs[3]; !strings.Contains(r.Error, "events.jsonl:5: seq 2 is not after 4") || r.Status != "" {
		t.Errorf("r1 listed as %+v", r)
	}
	if r := list.Runs[4]; !strings.Contains(r.Error, "no "+record.EventsFile) {
		t.Errorf("r5 listed as %+v", r)
	}
}

// blocking is a proc.Starter whose sessions of step block run until
// release is closed.
type blocking struct {
	step    string
	started chan struct{}
	release chan struct{}
}

func (b *blocking) Start(ctx context.Context, spec proc.Spec) (proc.Session, error) {
	for _, kv := range spec.Env {
		if kv == "FLOW_STEP_ID="+b.step {
			b.started <- struct{}{}
			return blockedSession{b.release}, nil
		}
	}
	return proc.Ended{}, nil
}

type blockedSession struct{ release chan struct{} }

func (s blockedSession) Pid() int              { return 1 }
func (s blockedSession) Wait() proc.Result     { <-s.release; return proc.Result{} }
func (s blockedSession) LastOutput() time.Time { return time.Time{} }

// TestListRunsLive: a run whose runner is appending to its record is
// listed as status shows it, running, and finished once it is.
func TestListRunsLive(t *testing.T) {
	s, _ := newService(t, `name: wf
steps:
  - id: a
    run: echo a
  - id: b
    run: echo b
  - id: c
    run: echo c
`, nil)
	s.Alive = func(runlock.Holder) bool { return true }
	bl := &blocking{step: "b", started: make(chan struct{}), release: make(chan struct{})}
	s.Starter = bl
	l, err := s.PrepareRun(RunRequest{Workflow: wf, RunID: "live"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := s.Start(context.Background(), l, Attach{})
		done <- err
	}()
	<-bl.started
	list, err := s.ListRuns("")
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Status("", "live")
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Runs) != 1 || list.Runs[0] != summaryOf(st) || list.Runs[0].Status != "running" {
		t.Errorf("live run listed as %+v; status %+v", list.Runs, summaryOf(st))
	}
	if st.Liveness.State != record.LiveWorking || st.Liveness.Hook != keytest.K("b") {
		t.Errorf("live run's liveness %+v", st.Liveness)
	}
	close(bl.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if list, err = s.ListRuns(""); err != nil || len(list.Runs) != 1 || list.Runs[0].Status != "completed" {
		t.Errorf("finished run listed as %+v, %v", list.Runs, err)
	}
}

// TestPruneAndListAll: flow prune removes the completed runs beyond the
// newest, and flow runs --all still lists them, from the history, with
// the runs that have their record.
func TestPruneAndListAll(t *testing.T) {
	s, clk := newService(t, twoSteps, nil)
	for _, id := range []string{"r1", "r2", "r3"} {
		run(t, s, RunRequest{Workflow: wf, RunID: id})
		clk.Advance(time.Minute)
	}
	dry, err := s.Prune(context.Background(), PruneRequest{Keep: 1, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Pruned) != 2 || dry.Pruned[0].RunID != "r2" || dry.Pruned[1].RunID != "r1" || dry.Kept != 1 || !dry.DryRun {
		t.Fatalf("dry run: %+v", dry)
	}
	before, err := s.ListAllRuns("")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Prune(context.Background(), PruneRequest{Keep: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pruned) != 2 || res.DryRun {
		t.Fatalf("prune: %+v", res)
	}
	list, err := s.ListRuns("")
	if err != nil || len(list.Runs) != 1 || list.Runs[0].RunID != "r3" {
		t.Fatalf("runs after the prune: %+v, %v", list.Runs, err)
	}
	all, err := s.ListAllRuns("")
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Runs) != 3 {
		t.Fatalf("--all lists %+v", all.Runs)
	}
	for i, r := range all.Runs {
		b := before.Runs[i]
		if r.RunID != b.RunID || r.Status != b.Status || r.Workflow != b.Workflow || r.CreatedAt != b.CreatedAt || r.UpdatedAt != b.UpdatedAt {
			t.Errorf("run %d: %+v, before the prune %+v", i, r, b)
		}
		if pruned := r.RunID != "r3"; r.Pruned != pruned || (r.Dir == "") != pruned {
			t.Errorf("%s: pruned %v, dir %q", r.RunID, r.Pruned, r.Dir)
		}
	}
	// A usage error for a repository that is not one.
	if _, err := s.Prune(context.Background(), PruneRequest{Repo: "/nowhere", Keep: 1}); CodeOf(err) != ExitUsage {
		t.Errorf("prune /nowhere: %v", err)
	}
}
