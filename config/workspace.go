package config

import (
	"path/filepath"
	"slices"
)

// A workspace says where the sessions of a scope work: the run (the
// workflow's workspace), each item of a for_each loop (the loop's), or
// one step. shared is the repository's checkout, as without one;
// worktree gives the scope a git worktree and a branch of its own
// (flow/<run>/_run, flow/<run>/<loop>.<key>, flow/<run>/<step>), made
// from a recorded base, whose work is committed when the scope ends and
// merged into the workspace around it (docs/workspaces.md).

// The modes of a workspace.
const (
	WorkspaceShared   = "shared"
	WorkspaceWorktree = "worktree"
)

// WorkspaceModes lists the modes of a workspace, the default first.
var WorkspaceModes = []string{WorkspaceShared, WorkspaceWorktree}

// The keep policies of a worktree: when it is kept at the end of a run.
const (
	KeepNever     = "never"
	KeepOnFailure = "on_failure"
	KeepAlways    = "always"
)

// KeepPolicies lists the keep policies; on_failure is the default.
var KeepPolicies = []string{KeepNever, KeepOnFailure, KeepAlways}

// The merge modes of a loop whose items have worktrees.
const (
	MergeAuto = "auto"
	MergeNone = "none"
)

// MergeModes lists the merge modes, the default first.
var MergeModes = []string{MergeAuto, MergeNone}

// Workspace is where the sessions of a scope work. A nil *Workspace is
// shared.
type Workspace struct {
	// Mode is WorkspaceShared or WorkspaceWorktree.
	Mode string
	// Base is the ref a new worktree starts from, as written; "" is the
	// commit the run (or, for items, the loop) started from.
	Base string
	// Root is the directory the worktrees are made in, as written
	// (relative to the repository unless absolute); "" is
	// .agents/worktrees/<run>.
	Root string
	// Keep is KeepNever, KeepOnFailure or KeepAlways (KeepOnFailure
	// when the file gives none).
	Keep string
	// Setup is a command run once in a new worktree, or nil.
	Setup *Template
	// Copy lists paths relative to the repository copied into a new
	// worktree.
	Copy []string
	// Branch is the branch of the run's worktree when the command line
	// names one (agent_orchestrator's --git-worktree-branch); "" is
	// flow/<run>/_run. Items and steps always have flow's names.
	Branch string
	// Pos is where workspace is written.
	Pos Pos
}

// Worktree reports whether the workspace is a worktree of its own.
func (w *Workspace) Worktree() bool { return w != nil && w.Mode == WorkspaceWorktree }

// Merge is how the work of a loop's items comes back into the
// workspace the loop works in.
type Merge struct {
	// Mode is MergeAuto or MergeNone.
	Mode string
	// LoopBackTo is the body step an item whose merge conflicts
	// re-enters, with the conflict as feedback; "" fails such an item.
	LoopBackTo string
	LoopPos    Pos
	// MaxIterations bounds those loop-backs (nil: the workflow's
	// max_iterations).
	MaxIterations *Limit
	Pos           Pos
}

// ItemMerge returns how the items of a loop step are merged: nil when
// they have no worktrees, else the loop's merge (auto when it gives
// none).
func (s *Step) ItemMerge() *Merge {
	if s.ForEach == nil || !s.Workspace.Worktree() {
		return nil
	}
	if s.ForEach.Merge != nil {
		return s.ForEach.Merge
	}
	return &Merge{Mode: MergeAuto}
}

// UsesWorktrees reports whether any scope of the workflow works in a
// worktree: the run, a loop's items or a step.
func (w *Workflow) UsesWorktrees() bool {
	if w.Workspace.Worktree() {
		return true
	}
	for _, s := range w.Steps {
		if s.Workspace.Worktree() {
			return true
		}
	}
	return false
}

// workspace builds a workspace key of the workflow or of a step; what
// says whose ("the workflow", "step x").
func (b *builder) workspace(rw *rawWorkspace) *Workspace {
	if rw == nil {
		return nil
	}
	w := &Workspace{Mode: WorkspaceWorktree, Keep: KeepOnFailure, Pos: rw.pos}
	if !rw.block {
		if !rw.mode.ok() {
			return nil
		}
		if !slices.Contains(WorkspaceModes, rw.mode.val) {
			b.d.unknown(rw.mode.pos(), "workspace", rw.mode.val, WorkspaceModes)
			return nil
		}
		w.Mode = rw.mode.val
		if w.Mode == WorkspaceShared {
			return nil
		}
		return w
	}
	if rw.mode.ok() {
		if !slices.Contains(WorkspaceModes, rw.mode.val) {
			b.d.unknown(rw.mode.pos(), "workspace mode", rw.mode.val, WorkspaceModes)
			return nil
		}
		w.Mode = rw.mode.val
	}
	if w.Mode == WorkspaceShared {
		for _, k := range []struct {
			name string
			v    str
		}{{"base", rw.base}, {"root", rw.root}, {"keep", rw.keep}, {"setup", rw.setup}} {
			if k.v.set {
				b.d.errorf(k.v.pos(), "workspace.%s: a shared workspace is the repository's checkout; only a worktree has %s", k.name, k.name)
			}
		}
		if len(rw.copy) > 0 {
			b.d.errorf(rw.copyPos, "workspace.copy: a shared workspace is the repository's checkout; only a worktree has copy")
		}
		return nil
	}
	if rw.base.ok() {
		if rw.base.val == "" {
			b.d.errorf(rw.base.pos(), "workspace.base: want a commit, branch or tag, not an empty string")
		}
		w.Base = rw.base.val
	}
	if rw.root.ok() {
		if rw.root.val == "" {
			b.d.errorf(rw.root.pos(), "workspace.root: want a directory, not an empty string")
		}
		w.Root = rw.root.val
	}
	if rw.keep.ok() {
		if slices.Contains(KeepPolicies, rw.keep.val) {
			w.Keep = rw.keep.val
		} else {
			b.d.unknown(rw.keep.pos(), "keep policy", rw.keep.val, KeepPolicies)
		}
	}
	if rw.setup.set {
		w.Setup = b.template("workspace.setup", rw.setup)
	}
	for _, c := range rw.copy {
		p := filepath.Clean(filepath.FromSlash(c.val))
		if c.val == "" || filepath.IsAbs(c.val) || !filepath.IsLocal(p) {
			b.d.errorf(c.pos(), "workspace.copy: %q: want a path inside the repository, relative to it", c.val)
			continue
		}
		w.Copy = append(w.Copy, c.val)
	}
	return w
}

// stepWorkspace builds the workspace of a step that is no loop: only a
// session step of the top level has one of its own.
func (b *builder) stepWorkspace(s *Step, rs *rawStep, loop *Step) {
	if rs.merge != nil {
		b.d.errorf(rs.merge.pos, "merge: step %q has no for_each; only a for_each loop whose items have worktrees merges them", s.ID)
	}
	if rs.workspace == nil {
		return
	}
	switch {
	case loop != nil:
		b.d.errorf(rs.workspace.pos, "workspace: step %q is in the body of loop %q, whose items each have one workspace; give workspace on the loop", s.ID, loop.ID)
		return
	case s.Kind == KindHuman:
		b.d.errorf(rs.workspace.pos, "workspace: step %q is a human step, which runs no session", s.ID)
		return
	case s.Kind == KindConsensus:
		b.d.errorf(rs.workspace.pos, "workspace: step %q decides from its reviewers and runs no session", s.ID)
		return
	}
	s.Workspace = b.workspace(rs.workspace)
}

// loopWorkspace builds the workspace of a loop's items and their merge,
// once the loop's body is built.
func (b *builder) loopWorkspace(s *Step, rs *rawStep) {
	s.Workspace = b.workspace(rs.workspace)
	rm := rs.merge
	if rm == nil {
		return
	}
	if !s.Workspace.Worktree() {
		b.d.errorf(rm.pos, "merge: the items of loop %q work in the run's workspace; give the loop workspace: worktree for each item to have a branch to merge", s.ID)
		return
	}
	m := &Merge{Mode: MergeAuto, Pos: rm.pos}
	if rm.mode.ok() {
		if slices.Contains(MergeModes, rm.mode.val) {
			m.Mode = rm.mode.val
		} else {
			b.d.unknown(rm.mode.pos(), "merge mode", rm.mode.val, MergeModes)
		}
	}
	if rm.loopBackTo.ok() {
		m.LoopBackTo, m.LoopPos = rm.loopBackTo.val, rm.loopBackTo.pos()
		var body []string
		for _, bs := range s.ForEach.Body {
			body = append(body, bs.ID)
		}
		switch {
		case m.Mode == MergeNone:
			b.d.errorf(m.LoopPos, "merge.loop_back_to: with mode none the items are not merged, and no merge conflicts")
		case !slices.Contains(body, m.LoopBackTo):
			b.d.unknown(m.LoopPos, "step", m.LoopBackTo, body)
			b.d.list[len(b.d.list)-1].Message = "merge.loop_back_to: " + b.d.list[len(b.d.list)-1].Message + ": a step of the body of " + s.ID
		}
	}
	m.MaxIterations = b.limit("merge.max_iterations", rm.maxIterations)
	if m.MaxIterations != nil && m.LoopBackTo == "" && rm.maxIterations.ok() {
		b.d.errorf(rm.maxIterations.pos(), "merge.max_iterations: without merge.loop_back_to a conflict fails the item at once")
	}
	s.ForEach.Merge = m
}
