package wftest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/gitwork"
)

// scriptedGit stands in for git in a test of a workflow with
// workspaces: its worktrees are the simulated repository itself (the
// sessions' writes land there, as without workspaces), its commits are
// names, and each merge of an item takes the next outcome the test
// scripts for it (merges: {"loop[key]": ...}), the last one repeating;
// an item not scripted merges.
type scriptedGit struct {
	repo string
	test *config.WorkflowTest
	mu   sync.Mutex
	// counts counts the merges of each item; commits names commits.
	counts  map[string]int
	commits int
}

func newScriptedGit(repo string, t *config.WorkflowTest) *scriptedGit {
	return &scriptedGit{repo: repo, test: t, counts: map[string]int{}}
}

func (g *scriptedGit) commit() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.commits++
	return fmt.Sprintf("%040d", g.commits)
}

func (g *scriptedGit) Resolve(_ context.Context, _, rev string) (string, error) {
	return fmt.Sprintf("%040x", len(rev)), nil
}

func (g *scriptedGit) CheckBranch(context.Context, string, string) error { return nil }

func (g *scriptedGit) CurrentBranch(context.Context, string) (string, error) { return "main", nil }

func (g *scriptedGit) Create(_ context.Context, _ string, s gitwork.Spec) (gitwork.Created, error) {
	return gitwork.Created{Worktree: gitwork.Worktree{Path: g.repo, Branch: s.Branch, Head: s.Base}, New: true}, nil
}

func (g *scriptedGit) Commit(context.Context, string, string) (gitwork.Committed, error) {
	return gitwork.Committed{Commit: g.commit(), Made: true}, nil
}

func (g *scriptedGit) AbortMerge(context.Context, string) error { return nil }

func (g *scriptedGit) MergeBranch(_ context.Context, _ string, spec gitwork.MergeSpec) (gitwork.Merge, error) {
	return g.merge(spec)
}

func (g *scriptedGit) MergeCheckout(_ context.Context, _ string, spec gitwork.MergeSpec) (gitwork.Merge, error) {
	return g.merge(spec)
}

func (g *scriptedGit) MergeInto(context.Context, string, gitwork.MergeSpec) (gitwork.Merge, error) {
	return gitwork.Merge{Status: gitwork.Conflict}, nil
}

func (g *scriptedGit) Unlock(context.Context, string, string) error { return nil }

func (g *scriptedGit) Remove(context.Context, string, string, string, bool) error { return nil }

// merge answers a merge of an item from the script. The item is named
// by its branch, flow/<run>/<loop>.<key>.
func (g *scriptedGit) merge(spec gitwork.MergeSpec) (gitwork.Merge, error) {
	scope := spec.From[strings.LastIndexByte(spec.From, '/')+1:]
	loop, key, _ := strings.Cut(scope, ".")
	item := loop + "[" + key + "]"
	g.mu.Lock()
	list := g.test.Merges[item]
	n := g.counts[item]
	g.counts[item]++
	g.mu.Unlock()
	o := config.MergeOutcome{Status: config.MergeOutcomeMerged}
	if len(list) > 0 {
		o = list[min(n, len(list)-1)]
	}
	switch o.Status {
	case config.MergeOutcomeConflict:
		files := o.Files
		if len(files) == 0 {
			files = []string{"(scripted)"}
		}
		msgs := make([]string, len(files))
		for i, f := range files {
			msgs[i] = "CONFLICT (content): Merge conflict in " + f
		}
		if o.Reason != "" {
			msgs = append(msgs, o.Reason)
		}
		return gitwork.Merge{Status: gitwork.Conflict, Conflicts: &gitwork.Conflicts{Files: files, Messages: strings.Join(msgs, "\n")}}, nil
	case config.MergeOutcomeWaiting:
		reason := o.Reason
		if reason == "" {
			reason = "local changes would be overwritten by merge (scripted)"
		}
		return gitwork.Merge{Status: gitwork.Refused, Reason: reason}, nil
	case config.MergeOutcomeFailed:
		reason := o.Reason
		if reason == "" {
			reason = "git failed (scripted)"
		}
		return gitwork.Merge{}, errors.New(reason)
	}
	return gitwork.Merge{Status: gitwork.Merged, New: g.commit()}, nil
}
