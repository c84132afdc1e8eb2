package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
)

// Weakenings lists how w, a workflow file as it is now, weakens the
// gates of recorded, the canonical form a run recorded of its workflow
// (Spec, kept in the run's workflow.json): a human step removed or no
// longer asking a human, an auto_approve added or changed, a gate
// removed or its expressions or check changed, a loop-back removed, the
// notifications changed, or a sandbox mode lowered. Sessions can write
// the workflow file — it lives in the repository — so a run applies
// such an edit only when a person accepts it (flow resume
// --accept-edits); other edits apply as they are. An empty list means
// nothing is weakened; an error means recorded is not a Spec.
func Weakenings(recorded []byte, w *Workflow) ([]string, error) {
	var before specWorkflow
	if err := json.Unmarshal(recorded, &before); err != nil {
		return nil, fmt.Errorf("read the recorded workflow: %w", err)
	}
	after := w.spec()
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	now := map[string]*specStep{}
	var index func(steps []*specStep)
	index = func(steps []*specStep) {
		for _, s := range steps {
			now[s.ID] = s
			if s.ForEach != nil {
				index(s.ForEach.Steps)
			}
		}
	}
	index(after.Steps)
	var walk func(steps []*specStep)
	walk = func(steps []*specStep) {
		for _, old := range steps {
			cur := now[old.ID]
			if old.ForEach != nil {
				walk(old.ForEach.Steps)
			}
			switch {
			case cur == nil && (old.Human != nil || old.Gate != nil || old.LoopBackTo != ""):
				add("step %s, which had a human step or a gate, is removed", old.ID)
				continue
			case cur == nil:
				continue
			}
			if old.Human != nil {
				switch {
				case cur.Human == nil:
					add("step %s no longer asks a human", old.ID)
				case cur.Human.AutoApprove != old.Human.AutoApprove:
					add("step %s's human.auto_approve changes from %q to %q", old.ID, old.Human.AutoApprove, cur.Human.AutoApprove)
				}
			}
			if old.When != cur.When && (old.Human != nil || old.Gate != nil) {
				add("step %s's when changes from %q to %q", old.ID, old.When, cur.When)
			}
			if old.Gate != nil && !reflect.DeepEqual(old.Gate, cur.Gate) {
				add("step %s's gate changes", old.ID)
			}
			if old.LoopBackTo != "" && cur.LoopBackTo != old.LoopBackTo {
				add("step %s's loop_back_to changes from %q to %q", old.ID, old.LoopBackTo, cur.LoopBackTo)
			}
			if (old.Sandbox != "" || cur.Sandbox != "") && lower(old.Sandbox, cur.Sandbox, before.Defaults.Sandbox, after.Defaults.Sandbox) {
				add("step %s's sandbox is lowered to %s", old.ID, orOn(cur.Sandbox, after.Defaults.Sandbox))
			}
		}
	}
	walk(before.Steps)
	if lower(before.Defaults.Sandbox, after.Defaults.Sandbox, "", "") {
		add("defaults.sandbox is lowered to %s", orOn(after.Defaults.Sandbox, ""))
	}
	if before.Notify != nil && !reflect.DeepEqual(before.Notify, after.Notify) {
		add("notify changes")
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// sandboxRank orders the sandbox modes from the weakest.
var sandboxRank = map[string]int{SandboxOff: 0, SandboxOn: 1, SandboxRequired: 2}

// lower reports whether a sandbox mode was lowered: from old (or its
// default oldDef) to cur (or curDef), "" being on.
func lower(old, cur, oldDef, curDef string) bool {
	return sandboxRank[orOn(cur, curDef)] < sandboxRank[orOn(old, oldDef)]
}

// orOn returns the first mode given, else on.
func orOn(mode, def string) string {
	switch {
	case mode != "":
		return mode
	case def != "":
		return def
	}
	return SandboxOn
}
