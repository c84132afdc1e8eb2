package config

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"
)

// needs resolves each step's dependencies: those it wrote, or else the
// step before it in the file; a pair review that writes no needs needs
// its reviewers.
func (b *builder) needs() {
	w := b.w
	for i, s := range w.Steps {
		if !s.NeedsSet() {
			s.Needs = []string{}
			switch {
			case s.Kind == KindConsensus && s.Gate != nil:
				s.Needs = append(s.Needs, s.Gate.Reviewers...)
			case i > 0:
				s.Needs = append(s.Needs, w.Steps[i-1].ID)
			}
			continue
		}
		s.Needs = []string{}
		for _, n := range b.rawNeeds[s] {
			loop, inBody := b.bodyIDs[n.val]
			switch _, ok := w.index[n.val]; {
			case !ok && inBody:
				b.d.errorf(n.pos(), "needs: %q is a step of the body of loop %q; need the loop %q, which is done when every item is", n.val, loop, loop)
			case !ok:
				b.d.unknown(n.pos(), "step", n.val, b.scope.Steps)
				b.d.list[len(b.d.list)-1].Message = "needs: " + b.d.list[len(b.d.list)-1].Message
			case n.val == s.ID:
				b.d.errorf(n.pos(), "needs: step %q cannot need itself", s.ID)
			case slices.Contains(s.Needs, n.val):
				b.d.errorf(n.pos(), "needs: %q is listed twice", n.val)
			default:
				s.Needs = append(s.Needs, n.val)
			}
		}
		b.needsReviewers(s)
	}
	for _, l := range b.loops {
		b.bodyNeeds(l)
	}
}

// bodyNeeds resolves the needs of the steps of a loop's body: those
// each wrote, steps of the body or of the top level before the loop, or
// else the body step before it (none for the first).
func (b *builder) bodyNeeds(l *Step) {
	w, body := b.w, l.ForEach.Body
	li := w.stepIndex(l.ID)
	allowed := []string{}
	for _, s := range w.Steps[:li] {
		allowed = append(allowed, s.ID)
	}
	for _, s := range body {
		allowed = append(allowed, s.ID)
	}
	index := bodyIndex(body)
	for i, s := range body {
		s.Needs = []string{}
		if !s.NeedsSet() {
			switch {
			case s.Kind == KindConsensus && s.Gate != nil:
				s.Needs = append(s.Needs, s.Gate.Reviewers...)
			case i > 0:
				s.Needs = append(s.Needs, body[i-1].ID)
			}
			continue
		}
		for _, n := range b.rawNeeds[s] {
			j, top := w.index[n.val]
			_, other := b.bodyIDs[n.val]
			switch {
			case n.val == s.ID:
				b.d.errorf(n.pos(), "needs: step %q cannot need itself", s.ID)
			case slices.Contains(s.Needs, n.val):
				b.d.errorf(n.pos(), "needs: %q is listed twice", n.val)
			case index(n.val) >= 0 || top && j < li:
				s.Needs = append(s.Needs, n.val)
			case top || other:
				b.d.errorf(n.pos(), "needs: %q is neither a step of the body of %q nor a step before it; a step of a loop's body needs steps of its body or steps before the loop", n.val, l.ID)
			default:
				b.d.unknown(n.pos(), "step", n.val, allowed)
				b.d.list[len(b.d.list)-1].Message = "needs: " + b.d.list[len(b.d.list)-1].Message
			}
		}
		b.needsReviewers(s)
	}
}

// bodyIndex returns a function giving the place of a step in body by
// its id, or -1.
func bodyIndex(body []*Step) func(string) int {
	m := make(map[string]int, len(body))
	for i, s := range body {
		if _, dup := m[s.ID]; !dup {
			m[s.ID] = i
		}
	}
	return func(id string) int {
		if i, ok := m[id]; ok {
			return i
		}
		return -1
	}
}

// cycles reports every dependency cycle, once each, and whether there
// was one: among the steps of the top level, where a loop also waits
// for the steps of the top level its body needs, and among the steps
// of each body.
func (b *builder) cycles() bool {
	w := b.w
	found := b.cyclesIn(w.Steps, func(i int) []int {
		var deps []int
		add := func(ids []string) {
			for _, n := range ids {
				if j, ok := w.index[n]; ok {
					deps = append(deps, j)
				}
			}
		}
		add(w.Steps[i].Needs)
		if fe := w.Steps[i].ForEach; fe != nil {
			for _, s := range fe.Body {
				add(s.Needs)
			}
		}
		return deps
	})
	for _, l := range b.loops {
		body, index := l.ForEach.Body, bodyIndex(l.ForEach.Body)
		found = b.cyclesIn(body, func(i int) []int {
			var deps []int
			for _, n := range body[i].Needs {
				if j := index(n); j >= 0 {
					deps = append(deps, j)
				}
			}
			return deps
		}) || found
	}
	return found
}

// cyclesIn reports the cycles among steps, where deps gives the places
// of the steps that step i waits for.
func (b *builder) cyclesIn(steps []*Step, deps func(i int) []int) bool {
	const (
		unvisited = iota
		active
		done
	)
	state := make([]int, len(steps))
	var stack []int
	found := false
	reported := map[string]bool{}
	var visit func(i int)
	visit = func(i int) {
		state[i] = active
		stack = append(stack, i)
		for _, j := range deps(i) {
			switch state[j] {
			case unvisited:
				visit(j)
			case active:
				found = true
				b.reportCycle(steps, stack[slices.Index(stack, j):], reported)
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
	}
	for i := range steps {
		if state[i] == unvisited {
			visit(i)
		}
	}
	return found
}

// reportCycle reports the cycle of steps in cyc, where each needs the
// next and the last needs the first. It is written in run order, from the
// cycle's first step in the file.
func (b *builder) reportCycle(steps []*Step, cyc []int, reported map[string]bool) {
	first := slices.Index(cyc, slices.Min(cyc))
	rot := slices.Concat(cyc[first:], cyc[:first])
	key := fmt.Sprint(rot)
	if reported[key] {
		return
	}
	reported[key] = true
	// rot[k] needs rot[k+1]: in run order the path goes backwards.
	names := make([]string, 0, len(rot)+1)
	names = append(names, steps[rot[0]].ID)
	for k := len(rot) - 1; k >= 0; k-- {
		names = append(names, steps[rot[k]].ID)
	}
	s := steps[rot[0]]
	b.d.errorf(s.NeedsPos(), "dependency cycle: %s", strings.Join(names, " -> "))
}

// loopBacks checks loop-back targets: each is the step itself, one it
// depends on, or one independent of it (neither upstream nor downstream:
// a fix step off to the side, which the gate step then waits for); never
// one that depends on it. From a step of a loop's body, that
// is a step of the body; or a step of the top level the loop depends on,
// which runs the whole loop again.
func (b *builder) loopBacks() {
	w := b.w
	r := newReach(w.Steps, w.stepIndex)
	each := func(s *Step, f func(field, target string, pos Pos)) {
		if s.LoopBackTo() != "" {
			f("loop_back_to", s.LoopBackTo(), s.LoopPos())
		}
		if s.Gate != nil && s.Gate.LoopBackTo != "" {
			f("gate.loop_back_to", s.Gate.LoopBackTo, s.Gate.LoopPos)
		}
	}
	for i, s := range w.Steps {
		each(s, func(field, target string, pos Pos) { b.loopBack(r, field, i, target, pos) })
	}
	for _, l := range b.loops {
		body, index := l.ForEach.Body, bodyIndex(l.ForEach.Body)
		br := newReach(body, index)
		li := w.stepIndex(l.ID)
		for i, s := range body {
			each(s, func(field, target string, pos Pos) {
				j := index(target)
				switch {
				case j >= 0 && i != j && br.needs(j, i):
					b.d.errorf(pos, "%s %q is downstream of %q; a loop-back must go to this step or one it depends on", field, target, s.ID)
				case j >= 0:
					// This step, one it depends on, or one to the side
					// of it in the body, which it then waits for.
				case w.stepIndex(target) >= 0 && r.needs(li, w.stepIndex(target)):
					// A step the loop needs: the whole loop runs again.
				case w.stepIndex(target) >= 0 || b.bodyIDs[target] != "":
					b.d.errorf(pos, "%s %q: a step of the body of %q loops back to a step of its body that does not depend on it, or to a step loop %q depends on (which runs all items again)", field, target, l.ID, l.ID)
				default:
					candidates := slices.Clone(b.scope.Steps)
					for _, o := range body {
						candidates = append(candidates, o.ID)
					}
					b.d.unknown(pos, "step", target, candidates)
					b.d.list[len(b.d.list)-1].Message = field + ": " + b.d.list[len(b.d.list)-1].Message
				}
			})
		}
	}
}

func (b *builder) loopBack(r *reach, field string, i int, target string, pos Pos) {
	s := b.w.Steps[i]
	j := b.w.stepIndex(target)
	loop, inBody := b.bodyIDs[target]
	switch {
	case j < 0 && inBody:
		b.d.errorf(pos, "%s %q is a step of the body of loop %q; loop back to %q instead, which runs all items again", field, target, loop, loop)
	case j < 0:
		b.d.unknown(pos, "step", target, b.scope.Steps)
		b.d.list[len(b.d.list)-1].Message = field + ": " + b.d.list[len(b.d.list)-1].Message
	case i != j && r.needs(j, i):
		// The target would wait for the step that sends work back to
		// it: a cycle in meaning.
		b.d.errorf(pos, "%s %q is downstream of %q; a loop-back must go to this step or one it depends on", field, target, s.ID)
	default:
		// This step, one it depends on, or one independent of it: the
		// step then waits for the target (waiting_for) before it runs
		// again.
	}
}

// reach answers whether one step depends on another, reusing its marks
// between questions so that checking every loop-back of a large workflow
// allocates nothing per question.
type reach struct {
	deps [][]int
	// order is each step's place in an order where every step comes
	// after the steps it needs, or nil when the needs have a cycle: a
	// step can depend only on steps before it, which bounds each walk.
	order []int
	mark  []int
	gen   int
	stack []int
}

// newReach indexes the needs among steps, where index gives the place
// of a step by its id, or -1.
func newReach(steps []*Step, index func(string) int) *reach {
	r := &reach{deps: make([][]int, len(steps)), mark: make([]int, len(steps))}
	for i, s := range steps {
		for _, n := range s.Needs {
			if j := index(n); j >= 0 {
				r.deps[i] = append(r.deps[i], j)
			}
		}
	}
	r.order = topoOrder(r.deps)
	return r
}

// topoOrder places each node after the nodes it depends on (Kahn's
// algorithm over deps, a node's dependencies), or returns nil when they
// have a cycle.
func topoOrder(deps [][]int) []int {
	waiting := make([]int, len(deps)) // dependencies not yet placed
	users := make([][]int, len(deps))
	for i, ds := range deps {
		waiting[i] = len(ds)
		for _, d := range ds {
			users[d] = append(users[d], i)
		}
	}
	queue := make([]int, 0, len(deps))
	for i, n := range waiting {
		if n == 0 {
			queue = append(queue, i)
		}
	}
	order := make([]int, len(deps))
	for placed := 0; placed < len(queue); placed++ {
		i := queue[placed]
		order[i] = placed
		for _, u := range users[i] {
			if waiting[u]--; waiting[u] == 0 {
				queue = append(queue, u)
			}
		}
	}
	if len(queue) < len(deps) {
		return nil
	}
	return order
}

// needs reports whether step i depends on step j, directly or not.
func (r *reach) needs(i, j int) bool {
	// What i depends on comes before it, and so do their needs: a step
	// placed before j cannot lead to j.
	if r.order != nil && r.order[j] >= r.order[i] {
		return false
	}
	r.gen++
	r.stack = append(r.stack[:0], i)
	for len(r.stack) > 0 {
		k := r.stack[len(r.stack)-1]
		r.stack = r.stack[:len(r.stack)-1]
		for _, n := range r.deps[k] {
			if n == j {
				return true
			}
			if r.mark[n] != r.gen && (r.order == nil || r.order[n] > r.order[j]) {
				r.mark[n] = r.gen
				r.stack = append(r.stack, n)
			}
		}
	}
	return false
}

// Step returns the step with the id, of the top level or of a loop's
// body, or nil.
func (w *Workflow) Step(id string) *Step {
	if w.index != nil {
		if s, ok := w.byID[id]; ok {
			return s
		}
		if i, ok := w.index[id]; ok {
			return w.Steps[i]
		}
		return nil
	}
	for _, s := range w.AllSteps() {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// stepIndex returns the place of a step in Steps, or -1.
func (w *Workflow) stepIndex(id string) int {
	if w.index != nil {
		if i, ok := w.index[id]; ok {
			return i
		}
		return -1
	}
	return slices.IndexFunc(w.Steps, func(s *Step) bool { return s.ID == id })
}

// Upstream returns the ids of the steps the step depends on, directly or
// transitively, in file order. Loop-backs are not dependencies.
func (w *Workflow) Upstream(id string) []string {
	seen := make([]bool, len(w.Steps))
	var walk func(i int)
	walk = func(i int) {
		for _, n := range w.Steps[i].Needs {
			if j := w.stepIndex(n); j >= 0 && !seen[j] {
				seen[j] = true
				walk(j)
			}
		}
	}
	if i := w.stepIndex(id); i >= 0 {
		walk(i)
	}
	return w.marked(seen, id)
}

// Downstream returns the ids of the steps that depend on the step,
// directly or transitively, in file order.
func (w *Workflow) Downstream(id string) []string {
	dependents := w.dependents()
	seen := make([]bool, len(w.Steps))
	var walk func(i int)
	walk = func(i int) {
		for _, j := range dependents[i] {
			if !seen[j] {
				seen[j] = true
				walk(j)
			}
		}
	}
	if i := w.stepIndex(id); i >= 0 {
		walk(i)
	}
	return w.marked(seen, id)
}

// marked lists the ids of the marked steps in file order, leaving out id.
func (w *Workflow) marked(seen []bool, id string) []string {
	out := []string{}
	for i, s := range w.Steps {
		if seen[i] && s.ID != id {
			out = append(out, s.ID)
		}
	}
	return out
}

// dependents returns, for each step, the places of the steps needing it.
func (w *Workflow) dependents() [][]int {
	out := make([][]int, len(w.Steps))
	for i, s := range w.Steps {
		for _, n := range s.Needs {
			if j := w.stepIndex(n); j >= 0 {
				out[j] = append(out[j], i)
			}
		}
	}
	return out
}

// Order returns the step ids in an order in which each step comes after
// the steps it needs; among steps that could go next, the one first in
// the file goes first. Steps in a dependency cycle (never in a loaded
// workflow) are left out.
func (w *Workflow) Order() []string {
	dependents := w.dependents()
	pending := make([]int, len(w.Steps))
	ready := &intHeap{}
	for i, s := range w.Steps {
		for _, n := range s.Needs {
			if w.stepIndex(n) >= 0 {
				pending[i]++
			}
		}
		if pending[i] == 0 {
			heap.Push(ready, i)
		}
	}
	out := make([]string, 0, len(w.Steps))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		out = append(out, w.Steps[i].ID)
		for _, j := range dependents[i] {
			if pending[j]--; pending[j] == 0 {
				heap.Push(ready, j)
			}
		}
	}
	return out
}

// intHeap is a min-heap of step places.
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
