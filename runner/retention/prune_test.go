package retention

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/internal/faultfs"
	"github.com/flow-run/flow/internal/gitwork"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

const repo = "/repo"

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// spec is a run a test records.
type spec struct {
	id, wf  string
	status  core.RunStatus
	ageDays int
	// waiting makes its step wait on a human; worktree gives it the
	// worktree of a workspace (under .agents/worktrees).
	waiting, worktree bool
	// holder, when set, holds its lock.
	holder *runlock.Holder
}

// writeRun records a run as its runner leaves it: its snapshot (and no
// events after it).
func writeRun(t *testing.T, fsys afero.Fs, s spec) {
	t.Helper()
	at := core.Time{Time: now.Add(-time.Duration(s.ageDays) * 24 * time.Hour)}
	created := core.Time{Time: at.Add(-time.Hour)}
	st := &core.State{SchemaVersion: 1, RunID: s.id, WorkflowName: s.wf, RepoDir: repo, Status: s.status, CreatedAt: &created, UpdatedAt: &at,
		Seq: 3, StepOrder: keytest.Keys("work"), Steps: map[core.StepKey]*core.StepState{keytest.K("work"): {Status: core.Completed}}}
	if s.waiting {
		st.Steps[keytest.K("work")].Status = core.WaitingOnHuman
	}
	if s.worktree {
		st.Workspaces = map[string]*core.Workspace{core.RunScope: {Path: worktreeOf(s.id), Branch: core.WorkspaceBranch(s.id, core.RunScope)}}
	}
	dir := record.RunDir(repo, s.id)
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := record.WriteSnapshot(fsys, dir, st); err != nil {
		t.Fatal(err)
	}
	if s.holder != nil {
		if _, err := runlock.Acquire(fsys, filepath.Join(dir, record.LockFile), *s.holder, func(runlock.Holder) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
}

func worktreeOf(id string) string {
	return filepath.Join(repo, ".agents", "worktrees", id, core.RunScope)
}

// fakeGit is a repository's git: its worktrees and branches, and what
// was removed.
type fakeGit struct {
	mu        sync.Mutex
	worktrees []gitwork.Worktree
	branches  []gitwork.Branch
	dirty     map[string]bool
	removed   []string
	// onClean, when set, runs when a worktree is checked.
	onClean func(path string)
	err     error
}

func (g *fakeGit) Worktrees(context.Context, string) ([]gitwork.Worktree, error) {
	return append([]gitwork.Worktree{{Path: repo, Main: true}}, g.worktrees...), g.err
}

func (g *fakeGit) Branches(_ context.Context, _, prefix string) ([]gitwork.Branch, error) {
	var out []gitwork.Branch
	for _, b := range g.branches {
		if strings.HasPrefix(b.Name, prefix+"/") {
			out = append(out, b)
		}
	}
	return out, g.err
}

func (g *fakeGit) Clean(_ context.Context, dir string) (bool, error) {
	if g.onClean != nil {
		g.onClean(dir)
	}
	return !g.dirty[dir], nil
}

func (g *fakeGit) Remove(_ context.Context, _, path, _ string, _ bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removed = append(g.removed, "worktree "+path)
	return nil
}

func (g *fakeGit) DeleteBranch(_ context.Context, _, name string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removed = append(g.removed, "branch "+name)
	return nil
}

// withWorktree gives the fake git a run's worktree and branch.
func (g *fakeGit) withWorktree(fsys afero.Fs, id string) {
	b := core.WorkspaceBranch(id, core.RunScope)
	g.worktrees = append(g.worktrees, gitwork.Worktree{Path: worktreeOf(id), Branch: b})
	g.branches = append(g.branches, gitwork.Branch{Name: b, Commit: "c0ffee" + id})
	_ = fsys.MkdirAll(worktreeOf(id), 0o755)
}

// logFs records the removals and lock files of a file system, in
// order.
type logFs struct {
	afero.Fs
	mu  sync.Mutex
	ops []string
}

func (l *logFs) note(op, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op+" "+strings.TrimPrefix(name, record.RunsDir(repo)+"/"))
}

func (l *logFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if filepath.Base(name) == record.LockFile && flag&os.O_CREATE != 0 {
		l.note("lock", filepath.Dir(name))
	}
	return l.Fs.OpenFile(name, flag, perm)
}

func (l *logFs) RemoveAll(name string) error {
	l.note("remove", name)
	return l.Fs.RemoveAll(name)
}

func newPruner(fsys afero.Fs, g Git) *Pruner {
	return &Pruner{FS: fsys, Rec: fsys, Git: g, Clock: clock.NewFake(now), Host: "here", PID: 7,
		Alive: func(h runlock.Holder) bool { return h.PID != 666 }}
}

func ids(ps []Pruned) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.RunID)
	}
	return strings.Join(s, " ")
}

func leftText(ls []Left) string {
	var s []string
	for _, l := range ls {
		s = append(s, l.RunID+": "+l.Reason)
	}
	return strings.Join(s, "; ")
}

func exists(fsys afero.Fs, id string) bool {
	_, err := fsys.Stat(record.RunDir(repo, id))
	return err == nil
}

// TestPrune removes what the policy chooses and nothing else: never a
// live run or one waiting on a human, never the run that is ending.
func TestPrune(t *testing.T) {
	alive := &runlock.Holder{PID: 1, Host: "here", Token: "t"}
	dead := &runlock.Holder{PID: 666, Host: "here", Token: "t"}
	runs := []spec{
		{id: "c1", wf: "a", status: core.RunCompleted, ageDays: 1},
		{id: "c2", wf: "a", status: core.RunCompleted, ageDays: 2},
		{id: "c3", wf: "a", status: core.RunCompleted, ageDays: 3, holder: dead},
		{id: "c4", wf: "a", status: core.RunCompleted, ageDays: 4, holder: alive},
		{id: "f1", wf: "a", status: core.RunFailed, ageDays: 5},
		{id: "i1", wf: "a", status: core.RunInterrupted, ageDays: 6, waiting: true},
		{id: "i2", wf: "a", status: core.RunInterrupted, ageDays: 7},
		{id: "w1", wf: "a", status: core.RunWaitingOnHuman, ageDays: 8},
		{id: "b1", wf: "b", status: core.RunCompleted, ageDays: 9},
	}
	cases := []struct {
		name   string
		p      Policy
		o      Options
		pruned string
		left   string
		kept   int
	}{
		{"completed runs beyond the newest", Policy{Keep: 1}, Options{},
			"c2 c3", "c4: live: its runner (pid 1 on here) holds it", 2},
		{"the run that is ending stays", Policy{Keep: 0, Workflow: "a"}, Options{Except: "c1"},
			"c2 c3", "c1: the run that is ending; c4: live: its runner (pid 1 on here) holds it", 0},
		{"interrupted runs: not one that waits", Policy{Keep: 0, Statuses: []core.RunStatus{core.RunInterrupted}}, Options{},
			"i2", "i1: step work waits on a human", 0},
		{"older than 3 days, any status", Policy{Keep: 0, OlderThan: 72 * time.Hour, Statuses: Prunable}, Options{},
			"c3 f1 i2 b1", "c4: live: its runner (pid 1 on here) holds it; i1: step work waits on a human", 2},
		{"a dry run removes nothing", Policy{Keep: 0}, Options{DryRun: true},
			"c1 c2 c3 b1", "c4: live: its runner (pid 1 on here) holds it", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := afero.NewMemMapFs()
			fsys := &logFs{Fs: mem}
			for _, r := range runs {
				writeRun(t, mem, r)
			}
			res, err := newPruner(fsys, &fakeGit{}).Prune(context.Background(), repo, c.p, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(res.Pruned); got != c.pruned {
				t.Errorf("pruned %q, want %q", got, c.pruned)
			}
			if got := leftText(res.Left); got != c.left {
				t.Errorf("left %q, want %q", got, c.left)
			}
			if res.Kept != c.kept {
				t.Errorf("kept %d, want %d", res.Kept, c.kept)
			}
			for _, r := range runs {
				gone := !c.o.DryRun && slices.ContainsFunc(res.Pruned, func(p Pruned) bool { return p.RunID == r.id })
				if exists(mem, r.id) == gone {
					t.Errorf("run %s: exists %v", r.id, !gone)
				}
			}
			// Each run's lock is taken before it is removed.
			for _, p := range res.Pruned {
				if c.o.DryRun {
					break
				}
				lock := slices.Index(fsys.ops, "lock "+p.RunID)
				rm := slices.Index(fsys.ops, "remove "+leftoverPrefix+p.RunID)
				if lock < 0 || rm < 0 || lock > rm {
					t.Errorf("run %s: lock at %d, removal at %d in %v", p.RunID, lock, rm, fsys.ops)
				}
			}
			// Every run removed has its line in the history.
			h, err := record.ReadHistory(mem, repo)
			if err != nil {
				t.Fatal(err)
			}
			if c.o.DryRun && len(h) != 0 {
				t.Errorf("a dry run wrote the history: %v", h)
			}
			for _, p := range res.Pruned {
				if !c.o.DryRun && !slices.ContainsFunc(h, func(e record.HistoryEntry) bool {
					return e.RunID == p.RunID && e.Status == p.Status && e.Workflow == p.Workflow
				}) {
					t.Errorf("run %s has no history line: %v", p.RunID, h)
				}
			}
		})
	}
}

// TestPruneHistory writes a history line only for a run that has none.
func TestPruneHistory(t *testing.T) {
	fsys := afero.NewMemMapFs()
	writeRun(t, fsys, spec{id: "r1", wf: "a", status: core.RunCompleted, ageDays: 2})
	writeRun(t, fsys, spec{id: "r2", wf: "a", status: core.RunCompleted, ageDays: 3})
	st, _, err := record.LoadState(fsys, record.RunDir(repo, "r1"), false, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := record.AppendHistory(fsys, repo, record.HistoryOf(st)); err != nil {
		t.Fatal(err)
	}
	res, err := newPruner(fsys, nil).Prune(context.Background(), repo, Policy{Keep: 0}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ids(res.Pruned) != "r1 r2" || res.Pruned[0].History || !res.Pruned[1].History {
		t.Errorf("pruned %+v", res.Pruned)
	}
	b, err := afero.ReadFile(fsys, record.HistoryPath(repo))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("%d history lines, want 2:\n%s", n, b)
	}
}

// TestPruneWorktrees removes a run's worktrees and branches with it,
// and leaves a run whose worktree holds work not committed.
func TestPruneWorktrees(t *testing.T) {
	fsys := afero.NewMemMapFs()
	g := &fakeGit{dirty: map[string]bool{worktreeOf("r3"): true}}
	for i, id := range []string{"r1", "r2", "r3"} {
		writeRun(t, fsys, spec{id: id, wf: "a", status: core.RunCompleted, ageDays: i + 1, worktree: id != "r2"})
		if id != "r2" {
			g.withWorktree(fsys, id)
		}
	}
	// A branch of r2 that no worktree holds, and one of another run
	// whose id begins the same.
	g.branches = append(g.branches, gitwork.Branch{Name: "flow/r2/stories.a", Commit: "abc"}, gitwork.Branch{Name: "flow/r22/_run", Commit: "def"})
	res, err := newPruner(fsys, g).Prune(context.Background(), repo, Policy{Keep: 0}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res.Pruned); got != "r1 r2" {
		t.Errorf("pruned %q", got)
	}
	want := "r3: worktree " + worktreeOf("r3") + " holds changes that are not committed"
	if got := leftText(res.Left); got != want {
		t.Errorf("left %q, want %q", got, want)
	}
	removed := strings.Join(g.removed, ", ")
	if want := "worktree " + worktreeOf("r1") + ", branch flow/r1/_run, branch flow/r2/stories.a"; removed != want {
		t.Errorf("removed %s\nwant %s", removed, want)
	}
	if b := res.Pruned[0].Branches; len(b) != 1 || b[0].Commit != "c0ffeer1" {
		t.Errorf("branches reported %+v", b)
	}
	// Without git, a run with a worktree stays; one without goes.
	fsys = afero.NewMemMapFs()
	writeRun(t, fsys, spec{id: "r1", wf: "a", status: core.RunCompleted, ageDays: 1, worktree: true})
	writeRun(t, fsys, spec{id: "r2", wf: "a", status: core.RunCompleted, ageDays: 2})
	res, err = newPruner(fsys, nil).Prune(context.Background(), repo, Policy{Keep: 0}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ids(res.Pruned) != "r2" || !strings.Contains(leftText(res.Left), "r1: its worktrees cannot be removed: no git") {
		t.Errorf("without git: pruned %q, left %q", ids(res.Pruned), leftText(res.Left))
	}
}

// TestPruneRefusesHeldRuns leaves a run whose event log another writer
// holds, and one that changed while it was being pruned.
func TestPruneRefusesHeldRuns(t *testing.T) {
	fsys := afero.NewMemMapFs()
	for i, id := range []string{"r1", "r2", "r3"} {
		writeRun(t, fsys, spec{id: id, wf: "a", status: core.RunCompleted, ageDays: i + 1, worktree: id == "r2"})
	}
	g := &fakeGit{}
	g.withWorktree(fsys, "r2")
	// r1's log is held, without its lock (someone removed the lock file).
	log, err := eventlog.Open(fsys, filepath.Join(record.RunDir(repo, "r1"), record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	// r2 is resumed and stops again while its worktree is looked at.
	g.onClean = func(string) {
		dir := record.RunDir(repo, "r2")
		st, _, err := record.LoadState(fsys, dir, false, now)
		if err != nil {
			t.Error(err)
			return
		}
		st.Seq++
		if err := record.WriteSnapshot(fsys, dir, st); err != nil {
			t.Error(err)
		}
	}
	res, err := newPruner(fsys, g).Prune(context.Background(), repo, Policy{Keep: 0}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ids(res.Pruned) != "r3" {
		t.Errorf("pruned %q", ids(res.Pruned))
	}
	left := leftText(res.Left)
	if !strings.Contains(left, "r1: live: pid") || !strings.Contains(left, "r2: it changed while it was being pruned") {
		t.Errorf("left %q", left)
	}
	for _, id := range []string{"r1", "r2"} {
		if !exists(fsys, id) {
			t.Errorf("%s removed", id)
		}
		if _, err := fsys.Stat(filepath.Join(record.RunDir(repo, id), record.LockFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the lock taken is not released: %v", id, err)
		}
	}
}

// TestPruneLeftovers removes what a prune that was killed left, and
// lists no run for it.
func TestPruneLeftovers(t *testing.T) {
	fsys := afero.NewMemMapFs()
	writeRun(t, fsys, spec{id: "r1", wf: "a", status: core.RunCompleted, ageDays: 1})
	if err := fsys.Rename(record.RunDir(repo, "r1"), filepath.Join(record.RunsDir(repo), leftoverPrefix+"r1")); err != nil {
		t.Fatal(err)
	}
	runs, err := record.ListRunEntries(fsys, repo, nil)
	if err != nil || len(runs) != 0 {
		t.Fatalf("listed %v, %v", runs, err)
	}
	if _, err := newPruner(fsys, nil).Prune(context.Background(), repo, Policy{Keep: 0}, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(filepath.Join(record.RunsDir(repo), leftoverPrefix+"r1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover still there: %v", err)
	}
}

// TestPruneHistoryFails removes nothing when the history cannot be
// written.
func TestPruneHistoryFails(t *testing.T) {
	mem := afero.NewMemMapFs()
	writeRun(t, mem, spec{id: "r1", wf: "a", status: core.RunCompleted, ageDays: 1})
	p := newPruner(mem, nil)
	p.Rec = failHistory{mem}
	_, err := p.Prune(context.Background(), repo, Policy{Keep: 0}, Options{})
	if err == nil || !strings.Contains(err.Error(), "history") {
		t.Fatalf("error %v", err)
	}
	if !exists(mem, "r1") {
		t.Error("run removed without its history line")
	}
	if _, err := mem.Stat(filepath.Join(record.RunDir(repo, "r1"), record.LockFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock not released: %v", err)
	}
}

type failHistory struct{ afero.Fs }

func (f failHistory) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if filepath.Base(name) == record.HistoryFile {
		return nil, fmt.Errorf("disk full")
	}
	return f.Fs.OpenFile(name, flag, perm)
}

// TestPruneSyncsHistory: a run's line, appended unsynced when the run
// ended, is synced before its directory is removed; a sync that fails
// removes nothing.
func TestPruneSyncsHistory(t *testing.T) {
	for _, fail := range []bool{false, true} {
		mem := afero.NewMemMapFs()
		writeRun(t, mem, spec{id: "r1", wf: "a", status: core.RunCompleted, ageDays: 1})
		st, _, err := record.LoadState(mem, record.RunDir(repo, "r1"), false, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := record.AppendHistory(mem, repo, record.HistoryOf(st)); err != nil {
			t.Fatal(err)
		}
		plan := faultfs.Plan{}
		if fail {
			plan = faultfs.Plan{Op: faultfs.OpSync, N: 1}
		}
		ffs := faultfs.New(mem, plan)
		p := newPruner(mem, nil)
		p.Rec = ffs
		res, err := p.Prune(context.Background(), repo, Policy{Keep: 0}, Options{})
		if fail {
			if err == nil || !exists(mem, "r1") {
				t.Errorf("a failed sync of the history: error %v, run kept %v", err, exists(mem, "r1"))
			}
			continue
		}
		if err != nil || ids(res.Pruned) != "r1" || res.Pruned[0].History {
			t.Fatalf("pruned %+v: %v", res.Pruned, err)
		}
		if n := ffs.Count(faultfs.OpSync); n != 1 {
			t.Errorf("%d syncs, want 1: the history's, before the removal", n)
		}
	}
}
