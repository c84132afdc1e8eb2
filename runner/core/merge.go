package core

import (
	"fmt"
	"slices"
	"strings"
)

// This file is the core's side of workspaces (docs/workspaces.md): a
// scope — the run, an item of a loop, a step — may work in a git
// worktree of its own. The driver makes the worktrees and records them
// (workspace_ready); the core decides when an item's work comes back
// and what the outcome of its merge means. Items are merged one at a
// time, in item order, once their body completed; a merge that
// conflicts fails the item's merge gate, which loops back into the item
// (merge.loop_back_to) with the conflict as feedback, or fails the
// item; a shared checkout that refuses the merge keeps the item waiting
// (waiting_for: merge) until the checkout allows it.

// The merge modes of a loop whose items have worktrees.
const (
	MergeAuto = "auto"
	MergeNone = "none"
)

// The states of a workspace's merge (Workspace.Merge), and the outcomes
// of a merge the driver reports (MergeResult.Status).
const (
	// MergeMerged: the scope's work is in its parent's workspace.
	MergeMerged = "merged"
	// MergeCommitted: the scope's work is committed on its branch and
	// left there (merge: none).
	MergeCommitted = "committed"
	// MergeConflict: the merge conflicted and the item was sent back to
	// resolve it; its next merge concludes the resolution.
	MergeConflict = "conflict"
	// MergeWaiting: the shared checkout would not take the merge (local
	// changes in the way); it is tried again.
	MergeWaiting = "waiting"
	// MergeFailed: the merge conflicted with no loop-back left, or git
	// failed: the item fails.
	MergeFailed = "failed"
)

// RunScope is the scope of the run's own workspace.
const RunScope = "_run"

// ItemScope is the scope of an item's workspace: "<loop>.<key>".
func ItemScope(loop, key string) string { return loop + "." + key }

// WorkspaceBranch is the branch of a scope's worktree in a run:
// flow/<run>/<scope>, a leaf at one depth.
func WorkspaceBranch(runID, scope string) string { return "flow/" + runID + "/" + scope }

// Workspace is what the record keeps of a scope's worktree.
type Workspace struct {
	// Path is the worktree's directory; Branch its branch; Base the
	// commit the branch was made at. Shared is set for the record of the
	// repository's own checkout, which a run in a shared workspace
	// merges into (Branch is the branch it was on when the run began).
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	Shared bool   `json:"shared,omitempty"`
	// Commit is the last commit of the scope's work.
	Commit string `json:"commit,omitempty"`
	// Merge is the state of the scope's merge (MergeMerged, ...); ""
	// before its first.
	Merge string `json:"merge,omitempty"`
	// Into is the branch the scope was merged into, and MergedAs the
	// merge commit there.
	Into     string `json:"into,omitempty"`
	MergedAs string `json:"merged_as,omitempty"`
	// WaitingFor is "merge" while a shared checkout refuses the merge;
	// Reason says why, or why the merge conflicted or failed.
	WaitingFor string `json:"waiting_for,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Conflicts counts the merges of the scope that conflicted.
	Conflicts int `json:"conflicts,omitempty"`
	// Spent is set when the item failed because its merge loop-backs
	// were spent.
	Spent bool `json:"spent,omitempty"`
	// Removed is set once the worktree was removed at the end of the
	// run, BranchDeleted when its branch was deleted with it.
	Removed       bool `json:"removed,omitempty"`
	BranchDeleted bool `json:"branch_deleted,omitempty"`
}

func (w *Workspace) clone() *Workspace {
	if w == nil {
		return nil
	}
	c := *w
	return &c
}

// The events of workspaces.
const (
	// EvWorkspaceReady records a scope's worktree, made or found.
	EvWorkspaceReady = "workspace_ready"
	// EvWorkspaceRemoved records a worktree removed at the end of the
	// run.
	EvWorkspaceRemoved = "workspace_removed"
	// EvItemMerge records how an item's work came back: committed,
	// merged, conflicting (with the loop-back it leads to), waiting for
	// the checkout, or failed.
	EvItemMerge = "item_merge"
	// EvStepMerge records how the work of a step with a worktree of its
	// own came back; a conflict is then its gate's failure.
	EvStepMerge = "step_merge"
)

// WorkspaceReady is the data of EvWorkspaceReady.
type WorkspaceReady struct {
	Scope  string `json:"scope"`
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	Shared bool   `json:"shared,omitempty"`
	// Created is set when the worktree was made now, not found.
	Created bool `json:"created,omitempty"`
}

// WorkspaceRemoved is the data of EvWorkspaceRemoved.
type WorkspaceRemoved struct {
	Scope         string `json:"scope"`
	BranchDeleted bool   `json:"branch_deleted,omitempty"`
}

// ItemMerge is the data of EvItemMerge (and of EvStepMerge, whose
// scope is the step, with no item): the item, its scope, and the
// merge's outcome. A conflict that loops back names its Target (the
// item's instance of merge.loop_back_to) and the instances it Reset,
// one iteration on; Output is the conflict, the target's feedback.
type ItemMerge struct {
	Index    int       `json:"index"`
	Key      string    `json:"key"`
	Scope    string    `json:"scope"`
	Status   string    `json:"status"`
	Commit   string    `json:"commit,omitempty"`
	Into     string    `json:"into,omitempty"`
	MergedAs string    `json:"merged_as,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Output   string    `json:"output,omitempty"`
	Files    []string  `json:"files,omitempty"`
	Target   StepKey   `json:"target,omitzero"`
	Reset    []StepKey `json:"reset,omitempty"`
	// Spent is set when the conflict failed the item because its
	// loop-backs were spent.
	Spent bool `json:"spent,omitempty"`
}

// MergeItem asks the driver to commit what an item's sessions left in
// its worktree and, with Mode MergeAuto, to merge it into the workspace
// the loop works in; it answers with MergeResult. Resolving is set when
// the item was sent back to resolve a conflict, whose merge in progress
// the commit concludes; otherwise a merge left in progress by a kill is
// aborted first. LoopBack is set when a conflict will send the item
// back: the driver then merges the parent into the item's worktree,
// leaving the conflict markers for the item's sessions to resolve.
type MergeItem struct {
	Loop      string
	Index     int
	Key       string
	Mode      string
	Resolving bool
	LoopBack  bool
}

// MergeStep asks the driver to commit what a step's session left in its
// worktree and merge it into the run's workspace; it answers with
// MergeResult (Step set). Resolving and LoopBack are MergeItem's: the
// step was sent back to resolve a conflict, and a conflict will send it
// back to itself.
type MergeStep struct {
	Step      StepKey
	Resolving bool
	LoopBack  bool
}

func (MergeStep) isEffect() {}

// MergeResult answers MergeItem (or, with Step, MergeStep): Status is
// MergeMerged, MergeCommitted,
// MergeConflict, MergeWaiting or MergeFailed; Commit the item's commit,
// MergedAs the merge commit in Into; Reason git's reason (refused,
// failed) or the conflict's summary, Output the conflict's files and
// hunks, Files the conflicting files.
type MergeResult struct {
	Step     StepKey
	Loop     string
	Index    int
	Key      string
	Status   string
	Commit   string
	Into     string
	MergedAs string
	Reason   string
	Output   string
	Files    []string
}

// MergeRetry asks the core to try again the merges that wait for the
// shared checkout.
type MergeRetry struct{}

func (MergeItem) isEffect()  {}
func (MergeResult) isInput() {}
func (MergeRetry) isInput()  {}

// itemMergeState returns the merge state of a loop's item: its
// workspace's Merge, "" when it has none yet.
func itemMergeState(st *State, loop, key string) *Workspace {
	return st.Workspaces[ItemScope(loop, key)]
}

// mergeItem moves on an item whose body completed, of a loop whose
// items are merged (fe.Merge != ""): it reports whether the item is done
// — merged, committed or failed (then failed is set, with why) — and
// otherwise asks the driver for the merge when it may be made: the
// item's turn has come (turn: every item before it finished; any time
// with merge none), no merge of it is in flight, and none waits.
func (c *Core) mergeItem(x *decider, ps *PlanStep, i int, it *Item, turn, start bool) (done, failed bool, why string) {
	fe := ps.ForEach
	ws := itemMergeState(x.st, ps.ID, it.Key)
	state := ""
	if ws != nil {
		state = ws.Merge
	}
	switch state {
	case MergeMerged, MergeCommitted:
		return true, false, ""
	case MergeFailed:
		return true, true, "merge: " + ws.Reason
	}
	scope := ItemScope(ps.ID, it.Key)
	if !start || c.merging[scope] || c.mergeHeld[scope] || (fe.Merge == MergeAuto && !turn) {
		return false, false, ""
	}
	loopBack := false
	if t := fe.MergeLoopBack; t != "" && fe.Merge == MergeAuto {
		if ts := x.st.Steps[Instance(ps.ID, it.Key, t)]; ts != nil && ts.IterationCount+1 < c.mergeBudget(ps) {
			loopBack = true
		}
	}
	c.merging[scope] = true
	x.effect(MergeItem{Loop: ps.ID, Index: i, Key: it.Key, Mode: fe.Merge, Resolving: state == MergeConflict, LoopBack: loopBack})
	return false, false, ""
}

// mergeBudget is how many iterations an item's merge loop-backs may
// take its target to: merge.max_iterations, else the target's own.
func (c *Core) mergeBudget(ps *PlanStep) int {
	if n := ps.ForEach.MergeMaxIterations; n > 0 {
		return n
	}
	if t := c.plan.Step(ps.ForEach.MergeLoopBack); t != nil {
		return t.MaxIterations
	}
	return 1
}

// mergeResult records the outcome of an item's merge.
func (c *Core) mergeResult(x *decider, in MergeResult) {
	if !in.Step.IsZero() {
		c.stepMergeResult(x, in)
		return
	}
	scope := ItemScope(in.Loop, in.Key)
	if !c.merging[scope] {
		return
	}
	delete(c.merging, scope)
	loop := Key(in.Loop)
	c.mark(loop)
	ps := c.plan.Step(in.Loop)
	ls := x.st.Steps[loop]
	if ps == nil || ps.ForEach == nil || ls == nil || in.Index < 0 || in.Index >= len(ls.Items) ||
		ls.Items[in.Index].Key != in.Key || ls.Items[in.Index].Status != Running {
		return
	}
	d := ItemMerge{Index: in.Index, Key: in.Key, Scope: scope, Status: in.Status, Commit: in.Commit, Into: in.Into, MergedAs: in.MergedAs,
		Reason: shorten(in.Reason), Files: in.Files}
	switch in.Status {
	case MergeMerged, MergeCommitted, MergeFailed:
	case MergeWaiting:
		c.mergeHeld[scope] = true
		if ws := x.st.Workspaces[scope]; ws != nil && ws.Merge == MergeWaiting && ws.Reason == d.Reason {
			// Still refused, for the same reason: nothing new to
			// record, and a run that waited still waits.
			if c.idleAtRetry && len(c.merging) == 0 {
				c.idle = true
			}
			return
		}
	case MergeConflict:
		d.Output = evidence(in.Output)
		reason := "merge conflict"
		if len(in.Files) > 0 {
			reason += " in " + strings.Join(in.Files, ", ")
		}
		if in.Reason != "" {
			reason = in.Reason
		}
		d.Reason = shorten(reason)
		target := ps.ForEach.MergeLoopBack
		if target == "" {
			d.Status = MergeFailed
			break
		}
		tid := Instance(in.Loop, in.Key, target)
		ts := x.st.Steps[tid]
		if budget := c.mergeBudget(ps); ts == nil || ts.IterationCount+1 >= budget {
			d.Status, d.Spent = MergeFailed, true
			d.Reason = shorten(fmt.Sprintf("max iterations reached (%d): %s", budget, reason))
			break
		}
		d.Target = tid
		d.Reset = []StepKey{tid}
		for _, id := range c.plan.Downstream(target) {
			if k := Instance(in.Loop, in.Key, id); !slices.Contains(d.Reset, k) && x.st.Steps[k] != nil {
				d.Reset = append(d.Reset, k)
			}
		}
	default:
		d.Status, d.Reason = MergeFailed, shorten(fmt.Sprintf("the driver reported merge status %q", in.Status))
	}
	x.emit(EvItemMerge, loop, d)
	for _, id := range d.Reset {
		delete(c.waiting, id)
		delete(c.evaluating, id)
		delete(c.preparing, id)
		c.mark(id)
	}
}

// mergesWaiting lists the items whose merges wait for the shared
// checkout, as loop[key].
func (c *Core) mergesWaiting() []string {
	var out []string
	for scope := range c.mergeHeld {
		out = append(out, scope)
	}
	slices.Sort(out)
	return out
}

// applyItemMerge folds an item_merge event into the state: the item's
// workspace and, for a conflict sent back, the instances it resets.
func applyItemMerge(s *State, loop *StepState, d *ItemMerge, e Event) {
	if s.Workspaces == nil {
		s.Workspaces = map[string]*Workspace{}
	}
	ws := s.Workspaces[d.Scope]
	if ws == nil {
		ws = &Workspace{}
		s.Workspaces[d.Scope] = ws
	}
	ws.Merge, ws.Reason, ws.WaitingFor, ws.Spent = d.Status, d.Reason, "", d.Spent
	if d.Commit != "" {
		ws.Commit = d.Commit
	}
	switch d.Status {
	case MergeMerged:
		ws.Into, ws.MergedAs, ws.Reason = d.Into, d.MergedAs, ""
	case MergeWaiting:
		ws.WaitingFor = "merge"
		if d.Into != "" {
			ws.Into = d.Into
		}
	case MergeConflict:
		ws.Conflicts++
	case MergeFailed:
		if len(d.Files) > 0 {
			ws.Conflicts++
		}
	}
	if d.Target.IsZero() {
		return
	}
	from := e.Step.String() + "[" + d.Key + "]"
	for _, id := range d.Reset {
		other := s.Steps[id]
		if other == nil {
			continue
		}
		other.IterationCount++
		other.Status = Pending
		other.Attempts = 0
		other.GateFailed = false
		if id == d.Target {
			other.BlockedByLoop = nil
			other.Feedback = &Feedback{Step: from, Reason: d.Reason, Output: d.Output}
		} else {
			other.BlockedByLoop = strp(from)
		}
	}
}

// applyWorkspaceReady folds a workspace_ready event into the state.
func applyWorkspaceReady(s *State, d *WorkspaceReady) {
	if s.Workspaces == nil {
		s.Workspaces = map[string]*Workspace{}
	}
	ws := s.Workspaces[d.Scope]
	if ws == nil {
		ws = &Workspace{}
		s.Workspaces[d.Scope] = ws
	}
	ws.Path, ws.Branch, ws.Base, ws.Shared = d.Path, d.Branch, d.Base, d.Shared
	ws.Removed, ws.BranchDeleted = false, false
}

// resetItemMerges forgets the merges of a loop's items that run again
// (a loop run again, flow retry, --start-at-step): their worktrees and
// commits stay, and their next merge is a new one.
func resetItemMerges(s *State, loop string, keys []string) {
	for _, k := range keys {
		if ws := s.Workspaces[ItemScope(loop, k)]; ws != nil {
			ws.Merge, ws.WaitingFor, ws.Reason, ws.Spent = "", "", "", false
		}
	}
}

// startStepMerge asks for the merge of a step whose session succeeded
// and whose gate passed, keeping the session's outcome until the merge
// is recorded.
func (c *Core) startStepMerge(x *decider, id StepKey, ps *PlanStep, o Outcome) {
	c.stepMerges[id] = o
	c.merging[id.Step] = true
	x.effect(c.mergeStepEffect(x.st, id, ps))
}

func (c *Core) mergeStepEffect(st *State, id StepKey, ps *PlanStep) MergeStep {
	m := MergeStep{Step: id}
	if ws := st.Workspaces[id.Step]; ws != nil && ws.Merge == MergeConflict {
		m.Resolving = true
	}
	if s := st.Steps[id]; s != nil && ps.LoopTarget == id.Step && !id.IsInstance() && s.IterationCount+1 < ps.MaxIterations {
		m.LoopBack = true
	}
	return m
}

// retryStepMerges asks again for the merges of steps that wait for the
// shared checkout.
func (c *Core) retryStepMerges(x *decider) {
	for _, scope := range c.mergesWaiting() {
		id := Key(scope)
		ps := c.step(id)
		if _, ok := c.stepMerges[id]; !ok || ps == nil {
			continue
		}
		c.merging[scope] = true
		x.effect(c.mergeStepEffect(x.st, id, ps))
	}
}

// stepMergeResult records the outcome of a step's merge, and then
// completes the step, fails its gate (a conflict) or fails it.
func (c *Core) stepMergeResult(x *decider, in MergeResult) {
	id := in.Step
	if id.IsInstance() || !c.merging[id.Step] {
		return
	}
	delete(c.merging, id.Step)
	c.mark(id)
	o, ok := c.stepMerges[id]
	s, ps := x.st.Steps[id], c.step(id)
	if !ok || s == nil || ps == nil || s.Status != Running {
		delete(c.stepMerges, id)
		return
	}
	d := ItemMerge{Index: -1, Scope: id.Step, Status: in.Status, Commit: in.Commit, Into: in.Into, MergedAs: in.MergedAs,
		Reason: shorten(in.Reason), Files: in.Files}
	switch in.Status {
	case MergeMerged:
		x.emit(EvStepMerge, id, d)
		delete(c.stepMerges, id)
		c.completed(x, id, ps, o)
	case MergeWaiting:
		c.mergeHeld[id.Step] = true
		if ws := x.st.Workspaces[id.Step]; ws != nil && ws.Merge == MergeWaiting && ws.Reason == d.Reason {
			if c.idleAtRetry && len(c.merging) == 0 {
				c.idle = true
			}
			return
		}
		x.emit(EvStepMerge, id, d)
	case MergeConflict:
		d.Output = evidence(in.Output)
		reason := "merge conflict"
		if len(in.Files) > 0 {
			reason += " in " + strings.Join(in.Files, ", ")
		}
		if in.Reason != "" {
			reason = in.Reason
		}
		d.Reason = shorten(reason)
		x.emit(EvStepMerge, id, d)
		delete(c.stepMerges, id)
		c.gateFailure(x, id, d.Reason, d.Output, o)
	default:
		d.Status = MergeFailed
		x.emit(EvStepMerge, id, d)
		delete(c.stepMerges, id)
		o.Error = shorten("merge: " + in.Reason)
		x.emit(EvStepFailed, id, o)
		c.stepFailed(id, ExitFailed, fmt.Sprintf("step %s failed: %s", id, o.Error))
	}
}
