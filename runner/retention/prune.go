package retention

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/internal/gitwork"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// Git is what a Pruner asks of git: the worktrees and branches of the
// repository, whether a worktree holds changes, and their removal. The
// real one is *gitwork.Git.
type Git interface {
	Worktrees(ctx context.Context, dir string) ([]gitwork.Worktree, error)
	Branches(ctx context.Context, dir, prefix string) ([]gitwork.Branch, error)
	Clean(ctx context.Context, dir string) (bool, error)
	Remove(ctx context.Context, repo, path, branch string, deleteBranch bool) error
	DeleteBranch(ctx context.Context, dir, name string) error
}

// Pruner removes the runs a Policy chooses. Every side effect goes
// through its fields.
type Pruner struct {
	// FS reads the record; Rec writes and removes it: on the operating
	// system's files, one that opens beneath the repository following
	// no link (internal/safefs).
	FS  afero.Fs
	Rec afero.Fs
	// Git removes the runs' worktrees and branches; nil leaves every
	// run that has a worktree, and removes no branch.
	Git   Git
	Clock clock.Clock
	// Alive reports whether the holder of a run's lock still runs.
	Alive func(runlock.Holder) bool
	// Host and PID name the Pruner in the locks it takes.
	Host string
	PID  int
}

// Options says how Prune goes about it.
type Options struct {
	// DryRun reports what would go, and removes nothing.
	DryRun bool
	// Except is a run that never goes: the run that is ending, whose
	// end applies its workflow's policy.
	Except string
}

// Result is what Prune did, or with DryRun would do.
type Result struct {
	DryRun bool `json:"dry_run"`
	// Pruned are the runs removed (that would be, with DryRun), newest
	// first.
	Pruned []Pruned `json:"pruned"`
	// Left are runs the policy chose that were not removed, with why.
	Left []Left `json:"left,omitempty"`
	// Kept counts the runs the policy covers that it keeps.
	Kept int `json:"kept"`
	// Warnings are what went wrong without stopping the prune: a
	// worktree or a branch that could not be removed.
	Warnings []string `json:"warnings,omitempty"`
}

// Pruned is a run Prune removed.
type Pruned struct {
	RunID     string         `json:"run_id"`
	Workflow  string         `json:"workflow_name"`
	Status    core.RunStatus `json:"status"`
	CreatedAt string         `json:"created_at"`
	EndedAt   string         `json:"ended_at"`
	// Why says why the policy chose it.
	Why string `json:"why"`
	// Worktrees are the git worktrees removed with it; Branches its
	// branches deleted, each with the commit it was at.
	Worktrees []string         `json:"worktrees,omitempty"`
	Branches  []gitwork.Branch `json:"branches,omitempty"`
	// History is set when its line of the history was written now (it
	// had none).
	History bool `json:"history_written,omitempty"`
}

// Left is a run the policy chose that was not removed.
type Left struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason"`
}

// batch bounds the runs held (locked, their logs open) at once before
// their history lines are written together.
const batch = 64

// candidate is a run on its way out.
type candidate struct {
	p     Pruned
	dir   string
	state *core.State
	lock  *runlock.Lock
	log   *eventlog.Log
	// branches and worktrees found for it.
	worktrees []string
	branches  []gitwork.Branch
}

// Prune removes the runs of repo that the policy chooses (see the
// package documentation for what a run's removal is, and what keeps a
// run). An error is a failure to read the repository or to write the
// history; runs that cannot be removed are Left, with why.
func (p *Pruner) Prune(ctx context.Context, repo string, pol Policy, o Options) (Result, error) {
	res := Result{DryRun: o.DryRun, Pruned: []Pruned{}}
	entries, err := record.ListRunEntries(p.FS, repo, p.Rec)
	if err != nil {
		return res, err
	}
	if !o.DryRun {
		p.removeLeftovers(repo)
	}
	runs := make([]Run, 0, len(entries))
	for _, e := range entries {
		if e.Err != nil {
			continue // unreadable: not a run the policy can judge
		}
		r := Run{ID: e.ID, Workflow: e.Workflow, Status: e.Status}
		// A time the record does not say (or says garbled) is zero:
		// Select keeps a run whose age it cannot tell.
		r.Created, _ = record.ParseTime(e.CreatedAt)
		r.Ended, _ = record.ParseTime(e.UpdatedAt)
		runs = append(runs, r)
	}
	now := p.clock().Now()
	var cands []*candidate
	for _, d := range Select(pol, runs, now) {
		if !d.Go {
			res.Kept++
			continue
		}
		if d.ID == o.Except {
			res.Left = append(res.Left, Left{d.ID, "the run that is ending"})
			continue
		}
		dir := record.RunDir(repo, d.ID)
		c := &candidate{dir: dir, p: Pruned{RunID: d.ID, Workflow: d.Workflow, Status: d.Status, Why: d.Why,
			CreatedAt: timeText(d.Created), EndedAt: timeText(d.Ended)}}
		if why := p.live(dir); why != "" {
			res.Left = append(res.Left, Left{d.ID, why})
			continue
		}
		st, _, err := record.LoadState(p.FS, dir, false, time.Time{})
		if st == nil {
			res.Left = append(res.Left, Left{d.ID, "unreadable: " + err.Error()})
			continue
		}
		if why := p.stays(pol, dir, st); why != "" {
			res.Left = append(res.Left, Left{d.ID, why})
			continue
		}
		c.state = st
		cands = append(cands, c)
	}
	if len(cands) == 0 {
		return res, nil
	}
	g := p.gitOf(ctx, repo)
	for _, c := range cands {
		if why := p.find(ctx, repo, g, c); why != "" {
			res.Left = append(res.Left, Left{c.p.RunID, why})
			c.dir = ""
		}
	}
	cands = slices.DeleteFunc(cands, func(c *candidate) bool { return c.dir == "" })
	if o.DryRun {
		for _, c := range cands {
			res.Pruned = append(res.Pruned, c.pruned())
		}
		return res, nil
	}
	history, err := record.ReadHistory(p.FS, repo)
	if err != nil {
		return res, err
	}
	lined := map[string]bool{}
	for _, h := range history {
		lined[h.RunID] = true
	}
	for len(cands) > 0 {
		n := min(batch, len(cands))
		if err := p.removeBatch(ctx, repo, pol, g, cands[:n], lined, &res); err != nil {
			return res, err
		}
		cands = cands[n:]
	}
	return res, nil
}

// removeBatch takes the runs of a batch, writes the history lines they
// lack together, and removes them.
func (p *Pruner) removeBatch(ctx context.Context, repo string, pol Policy, g *gitState, cands []*candidate, lined map[string]bool, res *Result) error {
	var taken []*candidate
	var lines []record.HistoryEntry
	for _, c := range cands {
		if why := p.take(pol, c); why != "" {
			res.Left = append(res.Left, Left{c.p.RunID, why})
			continue
		}
		taken = append(taken, c)
		if !lined[c.p.RunID] {
			lines = append(lines, record.HistoryOf(c.state))
			c.p.History = true
		}
	}
	// Each line, written now or when its run ended, is made durable
	// before its run's directory goes.
	err := record.AppendHistory(p.Rec, repo, lines...)
	if err == nil && len(taken) > 0 {
		err = record.SyncHistory(p.Rec, repo)
	}
	if err != nil {
		for _, c := range taken {
			c.release()
		}
		return err
	}
	for _, h := range lines {
		lined[h.RunID] = true
	}
	for _, c := range taken {
		res.Warnings = append(res.Warnings, p.remove(ctx, repo, g, c)...)
		res.Pruned = append(res.Pruned, c.pruned())
	}
	return nil
}

// live says why the run in dir must stay because a live runner holds
// its lock, or "".
func (p *Pruner) live(dir string) string {
	if h, err := runlock.Read(p.FS, filepath.Join(dir, record.LockFile)); err == nil && p.alive()(h) {
		return fmt.Sprintf("live: its runner (pid %d on %s) holds it", h.PID, h.Host)
	}
	return ""
}

// stays says why the run in dir, whose state is st, must stay, or "":
// its status is not one the policy removes (any more), a step of it
// waits on a human, or a Temporal server may go on with it.
func (p *Pruner) stays(pol Policy, dir string, st *core.State) string {
	if !slices.Contains(pol.statuses(), st.Status) {
		return "its status is now " + string(st.Status)
	}
	for _, id := range st.StepOrder {
		if s := st.Steps[id]; s != nil && s.Status == core.WaitingOnHuman {
			return "step " + id.String() + " waits on a human"
		}
	}
	if !st.Status.Terminal() && record.OnTemporal(p.FS, dir) {
		return "driven by a Temporal server that may go on with it"
	}
	return ""
}

// take takes the run's lock and its event log's, and reads it again
// under them: it says why the run must stay, or "" with the run held.
func (p *Pruner) take(pol Policy, c *candidate) string {
	holder := runlock.Holder{PID: p.PID, Host: p.Host, StartedAt: p.clock().Now()}
	lock, err := runlock.Acquire(p.Rec, filepath.Join(c.dir, record.LockFile), holder, p.alive())
	var held *runlock.HeldError
	if errors.As(err, &held) {
		return fmt.Sprintf("live: its runner (pid %d on %s) holds it", held.Holder.PID, held.Holder.Host)
	}
	if err != nil {
		return "its lock: " + err.Error()
	}
	c.lock = lock
	log, err := eventlog.Open(p.Rec, filepath.Join(c.dir, record.EventsFile))
	var locked *eventlog.LockedError
	switch {
	case errors.As(err, &locked):
		c.release()
		return fmt.Sprintf("live: pid %d on %s writes its log", locked.PID, locked.Host)
	case err == nil:
		c.log = log
	}
	// Any other fault of the log (a second writer's line) does not
	// keep the run: its lock is held, and what it says is read below.
	// A run that changed since it was chosen (a runner took it and let
	// it go meanwhile) is left for the next prune to judge again.
	st, _, err := record.LoadState(p.FS, c.dir, false, time.Time{})
	switch {
	case st == nil:
		c.release()
		return "unreadable: " + err.Error()
	case st.Seq != c.state.Seq:
		c.release()
		return "it changed while it was being pruned"
	}
	c.state = st
	return ""
}

// release lets go of a run that stays.
func (c *candidate) release() {
	if c.log != nil {
		_ = c.log.Close()
		c.log = nil
	}
	if c.lock != nil {
		_ = c.lock.Release()
		c.lock = nil
	}
}

// remove removes a taken run: its worktrees, its branches, then its
// directory (renamed to a hidden name first). It returns warnings for
// what could not be removed.
func (p *Pruner) remove(ctx context.Context, repo string, g *gitState, c *candidate) []string {
	var warns []string
	if g.git != nil {
		for _, wt := range c.worktrees {
			if err := g.git.Remove(ctx, repo, wt, "", false); err != nil {
				warns = append(warns, fmt.Sprintf("run %s: worktree %s: %v", c.p.RunID, wt, err))
			}
		}
		for _, b := range c.branches {
			if err := g.git.DeleteBranch(ctx, repo, b.Name); err != nil {
				warns = append(warns, fmt.Sprintf("run %s: branch %s: %v", c.p.RunID, b.Name, err))
			}
		}
	}
	if c.log != nil {
		_ = c.log.Close()
		c.log = nil
	}
	gone := filepath.Join(record.RunsDir(repo), leftoverPrefix+c.p.RunID)
	if err := p.Rec.Rename(c.dir, gone); err != nil {
		gone = c.dir
	}
	if err := p.Rec.RemoveAll(gone); err != nil {
		warns = append(warns, fmt.Sprintf("run %s: remove %s: %v", c.p.RunID, gone, err))
	}
	c.lock = nil // removed with the directory
	return warns
}

// leftoverPrefix begins the hidden name a run directory is renamed to
// before it is removed.
const leftoverPrefix = ".pruned-"

// removeLeftovers removes the run directories a prune renamed and did
// not finish removing (it was killed).
func (p *Pruner) removeLeftovers(repo string) {
	dir := record.RunsDir(repo)
	names, err := afero.ReadDir(p.FS, dir)
	if err != nil {
		return
	}
	for _, fi := range names {
		if strings.HasPrefix(fi.Name(), leftoverPrefix) {
			_ = p.Rec.RemoveAll(filepath.Join(dir, fi.Name()))
		}
	}
}

func (c *candidate) pruned() Pruned {
	p := c.p
	p.Worktrees, p.Branches = c.worktrees, c.branches
	return p
}

// gitState is what a prune learned of the repository's git: its
// worktrees and flow's branches, read once. err says why git could
// not tell (no repository, no git).
type gitState struct {
	git       Git
	worktrees []gitwork.Worktree
	branches  []gitwork.Branch
	err       error
}

// gitOf reads the repository's worktrees and flow's branches.
func (p *Pruner) gitOf(ctx context.Context, repo string) *gitState {
	g := &gitState{git: p.Git}
	if p.Git == nil {
		g.err = errors.New("no git to remove them with")
		return g
	}
	if g.worktrees, g.err = p.Git.Worktrees(ctx, repo); g.err != nil {
		return g
	}
	g.branches, g.err = p.Git.Branches(ctx, repo, "flow")
	return g
}

// find finds a run's worktrees and branches: the worktrees its record
// names, any worktree on one of its branches or under
// .agents/worktrees/<run>/, and the branches flow/<run>/…. It says why
// the run must stay, or "": a worktree of it holds changes not
// committed, or git cannot tell.
func (p *Pruner) find(ctx context.Context, repo string, g *gitState, c *candidate) string {
	id := c.p.RunID
	prefix := "flow/" + id + "/"
	root := filepath.Join(repo, ".agents", "worktrees", id) + string(filepath.Separator)
	var paths []string
	add := func(path string) {
		if !slices.Contains(paths, filepath.Clean(path)) {
			paths = append(paths, filepath.Clean(path))
		}
	}
	for _, wt := range g.worktrees {
		if !wt.Main && (strings.HasPrefix(wt.Branch, prefix) || strings.HasPrefix(wt.Path, root)) {
			add(wt.Path)
		}
	}
	recorded := false
	for _, name := range slices.Sorted(maps.Keys(c.state.Workspaces)) {
		ws := c.state.Workspaces[name]
		if ws.Shared || ws.Removed || ws.Path == "" {
			continue
		}
		recorded = true
		if g.registered(ws.Path) {
			add(ws.Path)
		}
	}
	if g.err != nil {
		if recorded || len(paths) > 0 {
			return "its worktrees cannot be removed: " + g.err.Error()
		}
		return ""
	}
	for _, path := range paths {
		if _, err := p.FS.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue // registered, its directory gone: removed all the same
		}
		clean, err := g.git.Clean(ctx, path)
		if err != nil {
			return fmt.Sprintf("worktree %s: %v", path, err)
		}
		if !clean {
			return fmt.Sprintf("worktree %s holds changes that are not committed", path)
		}
	}
	c.worktrees = paths
	for _, b := range g.branches {
		if strings.HasPrefix(b.Name, prefix) {
			c.branches = append(c.branches, b)
		}
	}
	return ""
}

// registered reports whether a worktree at path is one of the
// repository's.
func (g *gitState) registered(path string) bool {
	return slices.ContainsFunc(g.worktrees, func(wt gitwork.Worktree) bool { return filepath.Clean(wt.Path) == filepath.Clean(path) })
}

func (p *Pruner) clock() clock.Clock {
	if p.Clock == nil {
		return clock.Real()
	}
	return p.Clock
}

func (p *Pruner) alive() func(runlock.Holder) bool {
	if p.Alive == nil {
		return runlock.ProcessAlive
	}
	return p.Alive
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return core.Time{Time: t}.String()
}
