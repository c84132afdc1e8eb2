package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/gitwork"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// This file is the local driver's side of workspaces
// (docs/workspaces.md): it makes a scope's worktree when the scope's
// first session starts, runs the scope's sessions in it, performs the
// core's MergeItem (commit, then merge into the workspace the loop
// works in), and removes the worktrees per their keep policy when the
// run ends. What the outcomes mean is the core's (runner/core/merge.go).

// Git is what the local driver asks of git for workspaces; the real one
// is *gitwork.Git, and flow test gives a scripted one.
type Git interface {
	Resolve(ctx context.Context, dir, rev string) (string, error)
	CheckBranch(ctx context.Context, dir, name string) error
	CurrentBranch(ctx context.Context, dir string) (string, error)
	Create(ctx context.Context, repo string, s gitwork.Spec) (gitwork.Created, error)
	Commit(ctx context.Context, dir, message string) (gitwork.Committed, error)
	AbortMerge(ctx context.Context, dir string) error
	MergeBranch(ctx context.Context, repo string, spec gitwork.MergeSpec) (gitwork.Merge, error)
	MergeCheckout(ctx context.Context, dir string, spec gitwork.MergeSpec) (gitwork.Merge, error)
	MergeInto(ctx context.Context, dir string, spec gitwork.MergeSpec) (gitwork.Merge, error)
	Unlock(ctx context.Context, repo, path string) error
	Remove(ctx context.Context, repo, path, branch string, deleteBranch bool) error
}

// mergeRetryEvery is how often a merge that the shared checkout refused
// is tried again while the run waits.
const mergeRetryEvery = 10 * time.Second

// workspaces is the driver's state of a run's workspaces.
type workspaces struct {
	git Git
	// mu guards paths, which session goroutines read (workDir).
	mu sync.Mutex
	// paths maps each scope whose worktree this runner prepared, or the
	// record names, to its directory.
	paths map[string]string
	// ready holds the scopes prepared by this runner.
	ready map[string]bool
	// lastRetry is when merges waiting for the checkout were last
	// tried again.
	lastRetry time.Time
}

// scope is a workspace scope of the run and what the workflow says of
// it.
type scope struct {
	// name is the core's scope: core.RunScope, <loop>.<key> or <step>.
	name string
	spec *config.Workspace
	// label names the scope for people: "the run", "stories[a]",
	// "step x".
	label string
}

// ws returns the run's workspaces, set up at first use, which is on the
// loop's goroutine as the loop starts (loop), before any session or
// merge goroutine may ask for them.
func (x *run) ws() *workspaces {
	if x.wspaces != nil {
		return x.wspaces
	}
	w := &workspaces{paths: map[string]string{}, ready: map[string]bool{}, git: x.r.Git}
	if w.git == nil {
		g := gitwork.New(x.r.Environ)
		g.FS = x.r.FS
		if x.usesWorktrees() || x.wf.Defaults.Retention != nil {
			// Only a run that has git work to do probes the sandbox
			// for it and makes .agents/worktrees/.
			g.Run = gitwork.ExecThrough("", x.r.Environ, 0, x.gitWrap())
		}
		w.git = g
	}
	for name, rec := range x.st.Workspaces {
		if rec.Path != "" && !rec.Removed {
			w.paths[name] = rec.Path
		}
	}
	x.wspaces = w
	return w
}

// scopeOf returns the worktree scope whose workspace the sessions of a
// step instance work in; ok is false when they work in the
// repository's checkout.
func (x *run) scopeOf(key core.StepKey) (scope, bool) {
	k, inst := key, key.IsInstance()
	if inst {
		if l := x.wf.Step(k.Loop); l != nil && l.Workspace.Worktree() {
			return scope{name: core.ItemScope(k.Loop, k.Item), spec: l.Workspace, label: k.Loop + "[" + k.Item + "]"}, true
		}
	} else if s := x.wf.Step(k.Step); s != nil && s.Loop == "" && s.ForEach == nil && s.Workspace.Worktree() {
		return scope{name: s.ID, spec: s.Workspace, label: "step " + s.ID}, true
	}
	return x.runScope()
}

// runScope returns the run's own worktree scope, when it has one.
func (x *run) runScope() (scope, bool) {
	if x.wf.Workspace.Worktree() {
		return scope{name: core.RunScope, spec: x.wf.Workspace, label: "the run"}, true
	}
	return scope{}, false
}

// scopeBranch is the branch of a scope's worktree: flow/<run>/<scope>,
// or the run's as the command line names it (--git-worktree-branch).
func (x *run) scopeBranch(sc scope) string {
	if sc.name == core.RunScope && sc.spec.Branch != "" {
		return sc.spec.Branch
	}
	return core.WorkspaceBranch(x.st.RunID, sc.name)
}

// worktreePath is where the worktree of a scope goes: <root>/<run>/<scope>,
// root .agents/worktrees unless the workspace gives its own.
func (x *run) worktreePath(sc scope) string {
	root := filepath.Join(x.opts.Repo, ".agents", "worktrees")
	if r := sc.spec.Root; r != "" {
		root = r
		if !filepath.IsAbs(r) {
			root = filepath.Join(x.opts.Repo, r)
		}
	}
	return filepath.Join(root, x.st.RunID, sc.name)
}

// workDir is the directory the sessions of a step instance work in:
// its scope's worktree, or the repository. It has no side effect.
func (x *run) workDir(key core.StepKey) string {
	sc, ok := x.scopeOf(key)
	if !ok {
		return x.opts.Repo
	}
	w := x.ws()
	w.mu.Lock()
	p, known := w.paths[sc.name]
	w.mu.Unlock()
	if known {
		return p
	}
	return x.worktreePath(sc)
}

// workspaceEnv returns what a session learns of its workspace:
// FLOW_WORKSPACE, the directory it works in, and FLOW_REPO_DIR, the
// repository; none when the workflow has no worktrees.
func (x *run) workspaceEnv(key core.StepKey) []string {
	if !x.usesWorktrees() {
		return nil
	}
	return []string{"FLOW_WORKSPACE=" + x.workDir(key), "FLOW_REPO_DIR=" + x.opts.Repo}
}

// usesWorktrees reports whether any session of the run's workflow works
// in a worktree. Every session asks, so the answer is kept until the
// workflow changes (an accepted edit) rather than found again by a walk
// over the steps each time.
func (x *run) usesWorktrees() bool {
	if x.worktreesOf != x.wf {
		x.worktreesOf, x.worktrees = x.wf, x.wf.UsesWorktrees()
	}
	return x.worktrees
}

// prepareWorkspace makes sure the worktree a step instance's session
// works in exists — made now, or found from an earlier runner — and
// returns its directory (the repository's for a session without one).
// It runs on the loop's goroutine, before the session starts.
func (x *run) prepareWorkspace(key core.StepKey) (string, error) {
	sc, ok := x.scopeOf(key)
	if !ok {
		return x.opts.Repo, nil
	}
	return x.prepareScope(sc)
}

// prepareScope makes or finds the worktree of a scope (its parent's
// first, an item's base being its parent's head), records it, and
// returns its directory.
func (x *run) prepareScope(sc scope) (string, error) {
	w := x.ws()
	if w.ready[sc.name] {
		return x.scopePath(sc.name), nil
	}
	ctx := x.sessCtx
	repo := x.opts.Repo
	rec := x.st.Workspaces[sc.name]
	path := x.worktreePath(sc)
	if rec != nil && rec.Path != "" {
		path = rec.Path
	}
	branch := x.scopeBranch(sc)
	if rec != nil && rec.Branch != "" {
		branch = rec.Branch
	}
	base := ""
	switch {
	case rec != nil && rec.Base != "":
		base = rec.Base
	case sc.spec.Base != "":
		c, err := w.git.Resolve(ctx, repo, sc.spec.Base)
		if err != nil {
			return "", fmt.Errorf("%s: workspace.base: %w", posString(sc.spec.Pos), err)
		}
		base = c
	default:
		c, err := x.parentHead(sc)
		if err != nil {
			return "", err
		}
		base = c
	}
	if err := gitwork.EnsureIgnore(x.r.FS, repo); err != nil {
		return "", err
	}
	made, err := w.git.Create(ctx, repo, gitwork.Spec{Path: path, Branch: branch, Base: base, LockReason: "flow run " + x.st.RunID})
	if err != nil {
		return "", fmt.Errorf("workspace of %s: %w", sc.label, err)
	}
	if made.Path != "" {
		path = made.Path
	}
	// A worktree not yet recorded is new to the run, whether made now
	// or by a runner killed before it recorded it: its files are copied
	// and its setup runs (again) before it is recorded.
	if rec == nil || rec.Path == "" || rec.Removed {
		if err := gitwork.CopyIn(x.r.FS, repo, path, sc.spec.Copy); err != nil {
			return "", fmt.Errorf("%s: workspace.copy: %w", posString(sc.spec.Pos), err)
		}
		if err := x.setup(sc, path); err != nil {
			return "", err
		}
		x.emitWorkspace(core.WorkspaceReady{Scope: sc.name, Path: path, Branch: branch, Base: base, Created: made.New})
	}
	w.mu.Lock()
	w.paths[sc.name] = path
	w.mu.Unlock()
	w.ready[sc.name] = true
	return path, nil
}

// scopePath is the directory recorded for a scope.
func (x *run) scopePath(name string) string {
	w := x.ws()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.paths[name]
}

// emitWorkspace records a workspace and says so.
func (x *run) emitWorkspace(d core.WorkspaceReady) {
	x.emit(newEvent(x.r.Clock.Now(), core.EvWorkspaceReady, core.StepKey{}, d))
	if d.Shared {
		return
	}
	how := "found"
	if d.Created {
		how = "made"
	}
	x.printf("workspace %s %s: %s on branch %s (from %s)\n", d.Scope, how, d.Path, d.Branch, shortCommit(d.Base))
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// parentHead is the commit a new worktree of sc starts from when its
// workspace names no base: for the run, the repository's head; for an
// item, the head of the workspace its loop works in, whose work so far
// is committed first (so that the item starts from it).
func (x *run) parentHead(sc scope) (string, error) {
	ctx, repo, g := x.sessCtx, x.opts.Repo, x.ws().git
	if sc.name != core.RunScope {
		if rs, ok := x.runScope(); ok {
			dir, err := x.prepareScope(rs)
			if err != nil {
				return "", err
			}
			c, err := g.Commit(ctx, dir, fmt.Sprintf("flow: run %s: the run's work before %s", x.st.RunID, sc.label))
			if err != nil {
				return "", fmt.Errorf("workspace of %s: commit the run's work first: %w", sc.label, err)
			}
			return c.Commit, nil
		}
		if err := x.recordCheckout(); err != nil {
			return "", err
		}
	}
	c, err := g.Resolve(ctx, repo, "HEAD")
	if err != nil {
		return "", fmt.Errorf("workspace of %s: %w", sc.label, err)
	}
	return c, nil
}

// recordCheckout records, once, the branch the repository's checkout
// is on: the branch the items of a shared run are merged into, whatever
// the checkout is on later.
func (x *run) recordCheckout() error {
	if rec := x.st.Workspaces[core.RunScope]; rec != nil {
		return nil
	}
	ctx, repo, g := x.sessCtx, x.opts.Repo, x.ws().git
	branch, err := g.CurrentBranch(ctx, repo)
	if err != nil {
		return fmt.Errorf("the repository's checkout, which the items merge into: %w", err)
	}
	head, err := g.Resolve(ctx, repo, "HEAD")
	if err != nil {
		return fmt.Errorf("the repository's checkout: %w", err)
	}
	x.emitWorkspace(core.WorkspaceReady{Scope: core.RunScope, Path: repo, Branch: branch, Base: head, Shared: true})
	return nil
}

// setup runs a workspace's setup command in a new worktree, its output
// in logs/workspace.<scope>.setup.log.
func (x *run) setup(sc scope, dir string) error {
	t := sc.spec.Setup
	if t == nil {
		return nil
	}
	env := x.env(nil)
	cmd, err := t.Compiled().RenderLimit(env, int(x.limits.Command))
	if err != nil {
		return errors.New(templateError("workspace.setup", t, err))
	}
	path := filepath.Join(x.dir, record.LogsDir, "workspace."+sc.name+".setup.log")
	f, err := createFile(x.rec, path)
	if err != nil {
		return fmt.Errorf("create setup log: %w", err)
	}
	defer f.Close()
	tail := &tailBuffer{max: outputTail}
	hidden := x.redact.Writer(f)
	defer hidden.Close()
	out := &lockedWriter{ws: []io.Writer{hidden, tail}}
	sp := proc.Spec{Command: cmd, Dir: dir, Output: out, KillGrace: x.r.KillGrace,
		Env: slices.Concat(x.r.Environ, x.opts.Invocation.Env, []string{"FLOW_RUN_ID=" + x.st.RunID, "FLOW_WORKSPACE=" + dir, "FLOW_REPO_DIR=" + x.opts.Repo})}
	x.printf("workspace %s: setup: %s\n", sc.name, cmd)
	sess, err := x.r.Starter.Start(x.sessCtx, sp)
	if err != nil {
		return fmt.Errorf("workspace of %s: start setup: %w", sc.label, err)
	}
	res := sess.Wait()
	switch {
	case res.Err != nil:
		return fmt.Errorf("workspace of %s: setup: %w", sc.label, res.Err)
	case res.ExitCode != 0:
		return fmt.Errorf("workspace of %s: setup exited %d (%s):\n%s", sc.label, res.ExitCode, path, strings.TrimSpace(tail.String()))
	}
	return nil
}

// mergeJob is what the merge of an item needs, read from the run's
// state on the loop's goroutine, so that the merge itself, on a
// goroutine of its own, reads nothing the loop changes.
type mergeJob struct {
	git                 Git
	res                 core.MergeResult
	mode                string
	resolving, loopBack bool
	// path and branch are the item's worktree and branch ("" when no
	// session of the item ran in one).
	path, branch string
	// into is the branch merged into; intoPath the run's worktree that
	// holds it, or the repository's checkout when shared.
	into, intoPath string
	shared         bool
	commitMsg      string
	mergeMsg       string
	label          string
}

// startMerge performs a merge the core asked for (MergeItem,
// MergeStep): on its own goroutine, its result sent to the core as it
// comes (at once in a Serial run).
func (x *run) startMerge(job *mergeJob) {
	job.git = x.ws().git
	if x.r.Serial {
		x.queue = append(x.queue, x.merge(job))
		return
	}
	x.sessions.Add(1)
	go func() {
		defer x.sessions.Done()
		x.send(x.merge(job))
	}()
}

func (x *run) mergeJobOf(m core.MergeItem) *mergeJob {
	sc := core.ItemScope(m.Loop, m.Key)
	label := m.Loop + "[" + m.Key + "]"
	job := &mergeJob{res: core.MergeResult{Loop: m.Loop, Index: m.Index, Key: m.Key}, mode: m.Mode, resolving: m.Resolving, loopBack: m.LoopBack, label: label}
	if rec := x.st.Workspaces[sc]; rec != nil && !rec.Removed {
		job.path, job.branch = rec.Path, rec.Branch
	}
	iteration := 0
	if l := x.wf.Step(m.Loop); l != nil && l.ForEach != nil {
		for _, b := range l.ForEach.Body {
			if s := x.st.Steps[core.Instance(m.Loop, m.Key, b.ID)]; s != nil {
				iteration = max(iteration, s.IterationCount)
			}
		}
	}
	job.commitMsg = fmt.Sprintf("flow: run %s, %s, iteration %d", x.st.RunID, label, iteration)
	job.mergeMsg = fmt.Sprintf("flow: merge %s of run %s", label, x.st.RunID)
	x.mergeParent(job)
	return job
}

// stepMergeJob is the merge of a step with a worktree of its own.
func (x *run) stepMergeJob(m core.MergeStep) *mergeJob {
	job := &mergeJob{res: core.MergeResult{Step: m.Step}, mode: core.MergeAuto, resolving: m.Resolving, loopBack: m.LoopBack, label: "step " + m.Step.String()}
	if rec := x.st.Workspaces[m.Step.Step]; rec != nil && !rec.Removed {
		job.path, job.branch = rec.Path, rec.Branch
	}
	iteration := 0
	if s := x.st.Steps[m.Step]; s != nil {
		iteration = s.IterationCount
	}
	job.commitMsg = fmt.Sprintf("flow: run %s, step %s, iteration %d", x.st.RunID, m.Step, iteration)
	job.mergeMsg = fmt.Sprintf("flow: merge step %s of run %s", m.Step, x.st.RunID)
	x.mergeParent(job)
	return job
}

// mergeParent fills in where a job merges into: the run's worktree, or
// the repository's checkout (its branch as recorded when the run
// began).
func (x *run) mergeParent(job *mergeJob) {
	if rs, ok := x.runScope(); ok {
		job.into, job.intoPath = x.scopeBranch(rs), x.scopePath(rs.name)
		if rec := x.st.Workspaces[rs.name]; rec != nil {
			job.into, job.intoPath = rec.Branch, rec.Path
		}
	} else if rec := x.st.Workspaces[core.RunScope]; rec != nil {
		job.into, job.intoPath, job.shared = rec.Branch, rec.Path, true
	} else {
		job.intoPath, job.shared = x.opts.Repo, true
	}
}

// merge commits an item's work and merges it; it reads nothing of the
// run's state.
func (x *run) merge(job *mergeJob) core.MergeResult {
	ctx, repo, g := context.WithoutCancel(x.sessCtx), x.opts.Repo, job.git
	res := job.res
	fail := func(err error) core.MergeResult {
		res.Status, res.Reason = core.MergeFailed, err.Error()
		return res
	}
	if job.path == "" {
		// No session of the item ran: there is nothing to bring back.
		res.Status = core.MergeMerged
		if job.mode == core.MergeNone {
			res.Status = core.MergeCommitted
		}
		return res
	}
	if !job.resolving {
		// A merge a killed runner left in progress for a loop-back it
		// never recorded.
		if err := g.AbortMerge(ctx, job.path); err != nil {
			return fail(err)
		}
	}
	c, err := g.Commit(ctx, job.path, job.commitMsg)
	var markers *gitwork.MarkersError
	if errors.As(err, &markers) {
		res.Status, res.Reason = core.MergeConflict, fmt.Sprintf("%s still holds conflict markers", job.label)
		res.Output = err.Error()
		for _, at := range markers.Where {
			if f, _, ok := strings.Cut(at, ":"); ok && !slices.Contains(res.Files, f) {
				res.Files = append(res.Files, f)
			}
		}
		return res
	}
	if err != nil {
		return fail(err)
	}
	res.Commit = c.Commit
	if job.mode == core.MergeNone {
		res.Status = core.MergeCommitted
		return res
	}
	spec := gitwork.MergeSpec{Into: job.into, From: job.branch, Message: job.mergeMsg}
	var m gitwork.Merge
	if job.shared {
		m, err = g.MergeCheckout(ctx, job.intoPath, spec)
	} else {
		if _, err := g.Commit(ctx, job.intoPath, fmt.Sprintf("flow: the run's work before merging %s", job.label)); err != nil {
			return fail(err)
		}
		spec.Checkout = job.intoPath
		m, err = g.MergeBranch(ctx, repo, spec)
	}
	if err != nil {
		return fail(err)
	}
	res.Into = job.into
	switch m.Status {
	case gitwork.Merged:
		res.Status, res.MergedAs = core.MergeMerged, m.New
	case gitwork.Refused:
		res.Status, res.Reason = core.MergeWaiting, m.Reason
	case gitwork.Conflict:
		res.Status = core.MergeConflict
		if m.Conflicts != nil {
			res.Files, res.Output = m.Conflicts.Files, m.Conflicts.String()
		}
		if job.loopBack {
			// The item takes its parent's work in, markers and all, for
			// its sessions to resolve.
			into := job.into
			if _, err := g.MergeInto(ctx, job.path, gitwork.MergeSpec{From: into, Message: fmt.Sprintf("flow: take %s into %s to resolve the conflict", into, job.label)}); err != nil {
				return fail(err)
			}
		}
	default:
		return fail(fmt.Errorf("merge %s: unknown outcome %q", job.label, m.Status))
	}
	return res
}

// mergesWaiting reports whether a merge waits for the shared checkout.
func (x *run) mergesWaiting() bool {
	for _, w := range x.st.Workspaces {
		if w.WaitingFor == "merge" {
			return true
		}
	}
	return false
}

// pollMerges tries again, now and then, the merges that wait for the
// shared checkout.
func (x *run) pollMerges() {
	if !x.mergesWaiting() {
		return
	}
	w, now := x.ws(), x.r.Clock.Now()
	if now.Sub(w.lastRetry) < mergeRetryEvery {
		return
	}
	w.lastRetry = now
	x.queue = append(x.queue, core.MergeRetry{})
}

// announceWorkspace prints a line for the events of workspaces.
func (x *run) announceWorkspace(e core.Event) {
	switch e.Type {
	case core.EvItemMerge:
		var d core.ItemMerge
		_ = jsonUnmarshal(e.Data, &d)
		label := e.Step.String() + "[" + d.Key + "]"
		switch d.Status {
		case core.MergeMerged:
			x.printf("%s: merged into %s (%s)\n", label, d.Into, shortCommit(d.MergedAs))
		case core.MergeCommitted:
			x.printf("%s: committed on its branch (%s)\n", label, shortCommit(d.Commit))
		case core.MergeConflict:
			x.printf("%s: merge conflict (%s); looping back to %s\n", label, strings.Join(d.Files, ", "), d.Target)
		case core.MergeWaiting:
			x.printf("%s: waiting to merge into the checkout: %s\n", label, d.Reason)
		case core.MergeFailed:
			x.printf("%s: merge FAILED: %s\n", label, d.Reason)
		}
	case core.EvStepMerge:
		var d core.ItemMerge
		_ = jsonUnmarshal(e.Data, &d)
		switch d.Status {
		case core.MergeMerged:
			x.printf("%s: merged into %s (%s)\n", e.Step, d.Into, shortCommit(d.MergedAs))
		case core.MergeConflict:
			x.printf("%s: merge conflict (%s)\n", e.Step, strings.Join(d.Files, ", "))
		case core.MergeWaiting:
			x.printf("%s: waiting to merge into the checkout: %s\n", e.Step, d.Reason)
		case core.MergeFailed:
			x.printf("%s: merge FAILED: %s\n", e.Step, d.Reason)
		}
	case core.EvWorkspaceRemoved:
		var d core.WorkspaceRemoved
		_ = jsonUnmarshal(e.Data, &d)
		x.printf("workspace %s removed\n", d.Scope)
	}
}

// releaseWorkspaces ends the worktrees of a run that ended: the run's
// work left uncommitted is committed, and each worktree is unlocked and
// kept, or removed with (for an item whose work was merged, or with
// keep never) its branch, as its keep policy says. The run's own branch
// is never deleted: it holds the run's result. An interrupted run keeps
// everything as it is, to go on.
func (x *run) releaseWorkspaces(status core.RunStatus) {
	if len(x.st.Workspaces) == 0 || status != core.RunCompleted && status != core.RunFailed {
		return
	}
	ctx, repo, g := context.WithoutCancel(x.sessCtx), x.opts.Repo, x.ws().git
	if rec := x.st.Workspaces[core.RunScope]; rec != nil && !rec.Shared && !rec.Removed {
		if _, err := g.Commit(ctx, rec.Path, fmt.Sprintf("flow: run %s %s", x.st.RunID, status)); err != nil {
			x.warn(core.StepKey{}, fmt.Sprintf("the run's worktree %s: %v", rec.Path, err))
		}
	}
	names := make([]string, 0, len(x.st.Workspaces))
	for name := range x.st.Workspaces {
		names = append(names, name)
	}
	// The run's worktree goes last: the others may be merging into it.
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case a == core.RunScope:
			return 1
		case b == core.RunScope:
			return -1
		}
		return strings.Compare(a, b)
	})
	for _, name := range names {
		rec := x.st.Workspaces[name]
		if rec.Shared || rec.Removed || rec.Path == "" {
			continue
		}
		keep, ok := x.keepOf(name, status)
		if !ok {
			continue
		}
		if keep {
			if err := g.Unlock(ctx, repo, rec.Path); err != nil {
				x.warn(core.StepKey{}, err.Error())
			}
			continue
		}
		deleteBranch := name != core.RunScope && (rec.Merge == core.MergeMerged || x.keepPolicy(name) == config.KeepNever)
		if err := g.Remove(ctx, repo, rec.Path, rec.Branch, deleteBranch); err != nil {
			x.warn(core.StepKey{}, fmt.Sprintf("remove the worktree of %s: %v", name, err))
			continue
		}
		e := newEvent(x.r.Clock.Now(), core.EvWorkspaceRemoved, core.StepKey{}, core.WorkspaceRemoved{Scope: name, BranchDeleted: deleteBranch})
		x.emit(e)
		x.announceWorkspace(e)
	}
}

// keepPolicy is the keep policy of a scope's workspace.
func (x *run) keepPolicy(name string) string {
	if name == core.RunScope {
		if x.wf.Workspace.Worktree() {
			return x.wf.Workspace.Keep
		}
		return config.KeepOnFailure
	}
	loop, _, _ := strings.Cut(name, ".")
	if l := x.wf.Step(loop); l != nil && l.Workspace.Worktree() {
		return l.Workspace.Keep
	}
	return config.KeepOnFailure
}

// keepOf says whether a scope's worktree is kept at the end of a run
// that ended with status; ok is false for a scope the workflow no
// longer knows (left for flow prune --worktrees).
func (x *run) keepOf(name string, status core.RunStatus) (keep, ok bool) {
	switch x.keepPolicy(name) {
	case config.KeepAlways:
		return true, true
	case config.KeepNever:
		return false, true
	}
	if status != core.RunCompleted {
		return true, true
	}
	if name == core.RunScope {
		return false, true
	}
	loop, key, isItem := strings.Cut(name, ".")
	ls := x.st.Steps[core.Key(loop)]
	if ls == nil {
		return false, false
	}
	if !isItem {
		return ls.Status != core.Completed, true
	}
	for _, it := range ls.Items {
		if it.Key == key {
			return it.Status != core.Completed, true
		}
	}
	return false, true
}
