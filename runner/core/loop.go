package core

import (
	"fmt"
	"strconv"
	"strings"
)

// This file is the core's side of loops over items (docs/loops.md, "Scheduling and failure"): a
// loop step runs when its list of items is known, admits its items in
// order, up to its own max_parallel at once, starts each item's
// instances as their needs are met, and ends when its items have: with
// a failed item, once the items in flight finish (or, with
// continue_on_error, once every item has run).

// loopRun caches the instance keys of a running loop step:
// inst[i][j] is the key of body step j for item i.
type loopRun struct {
	inst [][]StepKey
	// head is the first item that has not finished: items before it
	// are never looked at again.
	head int
}

// step returns the plan step of a key: a step, or the body step of an
// instance.
func (c *Core) step(key StepKey) *PlanStep {
	ps := c.plan.Step(key.Step)
	if key.IsInstance() && (ps == nil || ps.Loop != key.Loop) {
		return nil
	}
	return ps
}

// stepFailed halts the run for a step that failed for good — unless it
// is an instance of a loop: its item fails, and its loop decides.
func (c *Core) stepFailed(key StepKey, code int, reason string) {
	if key.IsInstance() {
		return
	}
	c.fail(code, reason)
}

// loopOf returns the loop's cache, building it from the state.
func (c *Core) loopOf(st *State, ps *PlanStep) *loopRun {
	if lr := c.loops[ps.ID]; lr != nil {
		return lr
	}
	ls := st.Steps[Key(ps.ID)]
	lr := &loopRun{inst: make([][]StepKey, len(ls.Items))}
	for i, it := range ls.Items {
		keys := make([]StepKey, len(ps.ForEach.Body))
		for j, b := range ps.ForEach.Body {
			keys[j] = Instance(ps.ID, it.Key, b)
		}
		lr.inst[i] = keys
	}
	c.loops[ps.ID] = lr
	return lr
}

// instances returns the keys of every instance of a loop step's items
// (of its current body).
func (c *Core) instances(st *State, loop string) []StepKey {
	ps := c.plan.Step(loop)
	ls := st.Steps[Key(loop)]
	if ps == nil || ps.ForEach == nil || ls == nil {
		return nil
	}
	out := make([]StepKey, 0, len(ls.Items)*len(ps.ForEach.Body))
	for _, it := range ls.Items {
		for _, b := range ps.ForEach.Body {
			if id := Instance(loop, it.Key, b); st.Steps[id] != nil {
				out = append(out, id)
			}
		}
	}
	return out
}

// loopBusy reports whether an instance of a loop step is in flight.
func (c *Core) loopBusy(st *State, loop string) bool {
	for _, id := range c.instances(st, loop) {
		if s := st.Steps[id]; s.Status == Running || s.Status == WaitingOnHuman || c.active(id) {
			return true
		}
	}
	return false
}

// active reports whether the core is deciding something of a step: its
// when, its human wait or its retry timer.
func (c *Core) active(id StepKey) bool { return c.evaluating[id] || c.preparing[id] || c.waiting[id] }

// itemsResult starts a loop with the items the driver evaluated, or
// fails it.
func (c *Core) itemsResult(x *decider, in ItemsResult) {
	if !c.expanding[in.Step] {
		return
	}
	delete(c.expanding, in.Step)
	c.mark(in.Step)
	s := x.st.Steps[in.Step]
	ps := c.step(in.Step)
	if in.Step.IsInstance() || s == nil || ps == nil || ps.ForEach == nil || s.Status != Pending {
		return
	}
	fail := func(why string) {
		msg := shorten(why)
		x.emit(EvStepFailed, in.Step, Outcome{Attempt: s.Attempts + 1, Error: msg})
		c.fail(ExitFailed, fmt.Sprintf("step %s failed: %s", in.Step, msg))
	}
	if in.Err != "" {
		fail(in.Err)
		return
	}
	if c.haltCode != 0 || c.paused() {
		return // started again later, evaluating the list afresh
	}
	if limit := ps.ForEach.MaxItems; limit > 0 && len(in.Items) > limit {
		by := "defaults.max_items raises the limit"
		if ps.ForEach.OwnMaxItems {
			by = "the loop's max_items"
		}
		n := max(in.Total, len(in.Items))
		fail(fmt.Sprintf("for_each gave %d items; a loop has at most %d (%s)", n, limit, by))
		return
	}
	where := ""
	if in.Where != "" {
		where = in.Where + ": "
	}
	items := make([]LoopItem, len(in.Items))
	byKey := make(map[string]int, len(in.Items))
	for i, it := range in.Items {
		k := SanitizeItemKey(it.Key)
		if k == "" {
			fail(fmt.Sprintf("%sitem %d: its key %q has no letter, digit, '_' or '-' to keep", where, i, it.Key))
			return
		}
		if j, dup := byKey[k]; dup {
			fail(fmt.Sprintf("%sitems %d (key %q) and %d (key %q) have the same key %s: keys must be unique", where, j, in.Items[j].Key, i, it.Key, k))
			return
		}
		byKey[k] = i
		items[i] = LoopItem{Key: k, Value: it.Value}
	}
	x.emit(EvLoopItems, in.Step, LoopItems{Items: items, Body: ps.ForEach.Body})
	if len(items) == 0 {
		x.emit(EvStepCompleted, in.Step, Outcome{Attempt: x.st.Steps[in.Step].Attempts})
	}
}

// scheduleLoop moves a running loop on: it starts the ready instances
// of its items in flight and admits items while it may (start false:
// neither), records items that finished, and ends the loop when its
// items are done.
func (c *Core) scheduleLoop(x *decider, ps *PlanStep, start bool) {
	st := x.st
	id := Key(ps.ID)
	ls := st.Steps[id]
	lr := c.loopOf(st, ps)
	fe := ps.ForEach
	inflight, failed, pending := 0, 0, false
	// merging counts the items whose body completed and whose work is
	// still to come back; turn is set while every item before the one
	// looked at has finished: merges go in item order.
	merging, turn := 0, true
	for i := lr.head; i < len(ls.Items); i++ {
		it := &ls.Items[i]
		switch it.Status {
		case Completed, Skipped:
			if i == lr.head {
				lr.head++
			}
			continue
		case Failed:
			failed++
			continue
		case Pending:
			if !start || inflight >= fe.MaxParallel || failed > 0 && !fe.ContinueOnError {
				pending, turn = true, false
				continue
			}
			x.emit(EvItemStarted, id, ItemEvent{Index: i, Key: it.Key})
		}
		// Running.
		if start {
			c.startItem(x, ps, lr.inst[i])
		}
		status, why := c.itemEnd(st, lr.inst[i])
		if status == Completed && fe.Merge != "" {
			done, bad, reason := c.mergeItem(x, ps, i, it, turn, start)
			switch {
			case !done:
				merging++
				turn = false
				continue
			case bad:
				status, why = Failed, reason
			}
		}
		if status != "" {
			x.emit(EvItemFinished, id, ItemEvent{Index: i, Key: it.Key, Status: status, Error: shorten(why)})
			if status == Failed {
				failed++
			} else if i == lr.head {
				lr.head++
			}
			continue
		}
		inflight++
		turn = false
	}
	if inflight > 0 || merging > 0 || pending && (start && (failed == 0 || fe.ContinueOnError)) {
		return
	}
	if pending && !start {
		return // halted or paused with items still to run
	}
	if failed == 0 {
		x.emit(EvStepCompleted, id, Outcome{Attempt: ls.Attempts})
		return
	}
	var names []string
	code := ExitBudget
	for i, it := range ls.Items {
		if it.Status != Failed {
			continue
		}
		names = append(names, it.Key)
		if ws := itemMergeState(st, ps.ID, it.Key); ws != nil && ws.Merge == MergeFailed {
			if !ws.Spent {
				code = ExitFailed
			}
		} else if !c.failedByBudget(st, lr.inst[i]) {
			code = ExitFailed
		}
	}
	why := fmt.Sprintf("%d of %d items failed: %s", len(names), len(ls.Items), listKeys(names))
	if pending {
		why += "; the items after " + plural(len(names), "it", "them") + " did not run"
	}
	x.emit(EvStepFailed, id, Outcome{Attempt: ls.Attempts, Error: shorten(why)})
	c.fail(code, fmt.Sprintf("step %s failed: %s", ps.ID, why))
}

// startItem starts the ready instances of an item.
func (c *Core) startItem(x *decider, loop *PlanStep, keys []StepKey) {
	for j, key := range keys {
		ps := c.plan.Step(loop.ForEach.Body[j])
		if !c.readyInstance(x.st, ps, key, keys, loop.ForEach) {
			continue
		}
		if c.control == RunOnce && c.onceUsed && ps.Kind != KindHuman {
			continue
		}
		if ps.Conditional {
			c.evaluating[key] = true
			x.effect(Evaluate{Step: key})
			continue
		}
		c.start(x, key, false)
	}
}

// readyInstance reports whether an instance may start: it is pending,
// no loop-back blocks it, and its needs — this item's instances of body
// steps, and steps of the top level — are done.
func (c *Core) readyInstance(st *State, ps *PlanStep, key StepKey, item []StepKey, fe *PlanLoop) bool {
	s := st.Steps[key]
	if s == nil || s.Status != Pending || s.BlockedByLoop != nil || c.active(key) || waitingFor(st, s) {
		return false
	}
	for _, n := range ps.Needs {
		id := Key(n)
		if j := fe.BodyIndex(n); j >= 0 {
			id = item[j]
		}
		if ns := st.Steps[id]; ns != nil && !ns.Status.done() {
			return false
		}
	}
	return true
}

// itemEnd says whether an item has ended — COMPLETED when every
// instance is done, FAILED when one failed and none is still in flight
// — and why it failed; "" while it runs.
func (c *Core) itemEnd(st *State, keys []StepKey) (Status, string) {
	done, why := true, ""
	for _, key := range keys {
		s := st.Steps[key]
		if s == nil {
			continue
		}
		switch {
		case s.Status == Running || s.Status == WaitingOnHuman || c.active(key):
			return "", ""
		case s.Status == Failed && why == "":
			why = key.Step + ": " + deref(s.LastError)
		}
		if !s.Status.done() {
			done = false
		}
	}
	switch {
	case why != "":
		return Failed, why
	case done:
		return Completed, ""
	}
	return "", ""
}

// failedByBudget reports whether an item failed because a gate inside
// it spent its iterations (exit 5), not because a session failed.
func (c *Core) failedByBudget(st *State, keys []StepKey) bool {
	for _, key := range keys {
		if s := st.Steps[key]; s != nil && s.Status == Failed && !s.GateFailed {
			return false
		}
	}
	return true
}

// listKeys lists item keys for a message, the first ten of them.
func listKeys(keys []string) string {
	if len(keys) <= 10 {
		return strings.Join(keys, ", ")
	}
	return strings.Join(keys[:10], ", ") + " and " + strconv.Itoa(len(keys)-10) + " more"
}

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}
