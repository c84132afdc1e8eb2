package ops

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flow-run/flow/internal/gitwork"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/retention"
)

// PruneRequest says which finished runs flow prune removes (package
// runner/retention).
type PruneRequest struct {
	Repo string
	// Keep keeps the Keep newest runs of each workflow among those of
	// Statuses; 0 keeps none for being new.
	Keep int
	// OlderThan, when above 0, keeps the runs that ended less than
	// OlderThan ago.
	OlderThan time.Duration
	// Statuses are the statuses of the runs that may go; none means
	// completed only (see retention.ParseStatuses).
	Statuses []core.RunStatus
	// Workflow limits the prune to the runs of one workflow.
	Workflow string
	// DryRun says what would go, and removes nothing.
	DryRun bool
}

// Prune removes the finished runs of a repository that req chooses,
// each with its worktrees and branches, after writing the history line
// of any that has none; it never removes a live run or one that waits
// on a human (retention.Pruner).
func (s *Service) Prune(ctx context.Context, req PruneRequest) (retention.Result, error) {
	dir, err := s.Repo(req.Repo)
	if err != nil {
		return retention.Result{}, err
	}
	p := &retention.Pruner{FS: s.FS, Rec: s.recordFS(dir), Git: s.git(), Clock: s.clock(), Alive: s.alive(), Host: s.Host, PID: s.PID}
	pol := retention.Policy{Keep: req.Keep, OlderThan: req.OlderThan, Statuses: req.Statuses, Workflow: req.Workflow}
	return p.Prune(ctx, dir, pol, retention.Options{DryRun: req.DryRun})
}

// Pruned is what PruneWorktrees did: the worktrees it removed, the
// branches it deleted with them, and the runs it left alone (with why).
type Pruned struct {
	Removed  []string `json:"removed"`
	Branches []string `json:"branches"`
	Skipped  []string `json:"skipped,omitempty"`
}

// PruneWorktrees removes the git worktrees a run (or, with runID "",
// every run of the repository) left: those its record names and has
// not removed — kept by keep: always or on_failure, or left by a run
// that was stopped — and any worktree under .agents/worktrees/ of a run
// that has no record. The branch of an item or step whose work was
// merged is deleted with its worktree; a run's own branch, and a
// branch holding work that was not merged, are kept. A run whose
// runner is alive is left alone. The run records are not changed.
func (s *Service) PruneWorktrees(ctx context.Context, repo, runID string) (Pruned, error) {
	dir, err := s.Repo(repo)
	if err != nil {
		return Pruned{}, err
	}
	out := Pruned{Removed: []string{}, Branches: []string{}}
	g := s.git()
	var ids []string
	if runID != "" {
		ref, err := s.findRun(dir, runID)
		if err != nil {
			return out, err
		}
		ids = []string{ref.ID}
	} else if ids, err = record.RunIDs(s.FS, dir); err != nil {
		return out, err
	}
	list, err := g.Worktrees(ctx, dir)
	if err != nil {
		return out, err
	}
	registered := map[string]bool{}
	for _, wt := range list {
		registered[filepath.Clean(wt.Path)] = true
	}
	known := map[string]bool{}
	for _, id := range ids {
		known[id] = true
		ref, err := record.FindRun(s.FS, dir, id, "")
		if err != nil || ref.State == nil {
			continue
		}
		st := ref.State
		if len(st.Workspaces) == 0 {
			continue
		}
		l := record.Live(s.FS, ref.Dir, st, nil, s.clock().Now(), s.alive())
		if l.Holder != nil && s.alive()(*l.Holder) {
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s: its runner is alive (%s)", id, l.Reason))
			continue
		}
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for n := range st.Workspaces {
				if !yield(n) {
					return
				}
			}
		}) {
			ws := st.Workspaces[name]
			if ws.Shared || ws.Removed || ws.Path == "" {
				continue
			}
			if _, err := s.FS.Stat(ws.Path); err != nil && !registered[filepath.Clean(ws.Path)] {
				continue // pruned before
			}
			merged := name != core.RunScope && ws.Merge == core.MergeMerged
			if err := g.Remove(ctx, dir, ws.Path, ws.Branch, merged); err != nil {
				return out, fmt.Errorf("prune run %s: %w", id, err)
			}
			out.Removed = append(out.Removed, ws.Path)
			if merged {
				out.Branches = append(out.Branches, ws.Branch)
			}
		}
	}
	// Worktrees under .agents/worktrees/ of runs that have no record
	// (their run directory was deleted).
	if runID == "" {
		root := filepath.Join(dir, ".agents", "worktrees") + string(filepath.Separator)
		for _, wt := range list {
			rel, ok := strings.CutPrefix(wt.Path, root)
			if !ok || wt.Main {
				continue
			}
			run, _, _ := strings.Cut(rel, string(filepath.Separator))
			if known[run] || slices.Contains(out.Removed, wt.Path) {
				continue
			}
			if err := g.Remove(ctx, dir, wt.Path, "", false); err != nil {
				return out, fmt.Errorf("prune %s: %w", wt.Path, err)
			}
			out.Removed = append(out.Removed, wt.Path)
		}
	}
	return out, nil
}

// git is the git of workspaces, through the git binary in PATH.
func (s *Service) git() *gitwork.Git {
	g := gitwork.New(s.Environ)
	g.FS = s.FS
	return g
}
