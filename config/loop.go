package config

import (
	"fmt"
	"slices"

	"github.com/flow-run/flow/gates"
)

// A for_each step (docs/loops.md, "Keys" and "Expressions") is a loop: its body, a list of steps,
// runs once per item. The rules that make a loop hang together are
// checked here: what a loop step may say of itself, the names of its
// item and index, and the scope of the expressions of its body, which
// see the steps before the loop, the steps of the body and the item.
// Its body's needs and loop-backs are checked in graph.go.

// bodyScopes records the loop of every step of a body, by its id, and
// returns why each cannot be read by the top level's expressions.
func (b *builder) bodyScopes(topIDs map[string]bool) map[string]string {
	elsewhere := map[string]string{}
	for _, rs := range b.raw.steps {
		if !rs.forEachSet || !rs.id.ok() {
			continue
		}
		for _, rb := range rs.body {
			id := rb.id.val
			if !rb.id.ok() || topIDs[id] {
				continue
			}
			if _, dup := b.bodyIDs[id]; dup {
				continue
			}
			b.bodyIDs[id] = rs.id.val
			elsewhere[id] = bodyStepElsewhere(id, rs.id.val)
		}
	}
	return elsewhere
}

// bodyStepElsewhere says why a step of the body of loop cannot be read
// outside it, and how its facts are read there.
func bodyStepElsewhere(id, loop string) string {
	return fmt.Sprintf("step %q is a step of the body of loop %q: outside the body read it per item, as steps.%s.items[i].%s", id, loop, loop, id)
}

// loopStep checks a step with for_each: what it may have besides its
// loop keys (id, description, needs, when, max_iterations), and that it
// is not in the body of another loop. Its ForEach is built by loop.
func (b *builder) loopStep(s *Step, rs *rawStep, loop *Step) *Step {
	s.Kind = KindLoop
	if loop != nil {
		b.d.errorf(rs.forEachPos, "for_each inside the body of %q: loops nest one level", loop.ID)
	}
	if rs.rawStepMore != nil {
		for _, k := range rs.kinded {
			if k.on == sessionStep {
				b.d.errorf(k.pos, "step %q is a for_each loop: %s belongs on a step of its body", s.ID, k.name)
			}
		}
	}
	if rs.gate != nil && !rs.gate.reviewersSet {
		b.d.errorf(rs.gate.pos, "step %q is a for_each loop: gate belongs on a step of its body", s.ID)
	}
	if rs.gate != nil && rs.gate.reviewersSet {
		b.d.errorf(rs.forEachPos, "step %q decides from its reviewers: for_each belongs on a reviewer", s.ID)
	}
	s.Feedback = ""
	if rs.when.set {
		s.When = b.expr("when", rs.when, gates.Bool)
	}
	s.MaxIterations = b.limit("max_iterations", rs.maxIterations)
	b.rawNeeds[s] = rs.needs
	return s
}

// notLoop reports the keys of a loop on a step without for_each: those
// the key table declares for a loop only. The body (steps) and merge
// have messages of their own; for_each itself makes a step a loop.
func (b *builder) notLoop(s *Step, rs *rawStep) {
	if rs.rawStepMore != nil {
		for _, k := range rs.kinded {
			if k.on == loopStep && k.name != "steps" && k.name != "merge" && k.name != "for_each" {
				b.d.errorf(k.pos, "%s: step %q has no for_each; only a for_each loop has %s", k.name, s.ID, k.name)
			}
		}
	}
	if rs.bodySet {
		b.d.errorf(rs.bodyPos, "steps: step %q has no for_each; only a for_each loop has a body of steps", s.ID)
	}
}

// loop builds the ForEach of the loop step s of the top level: its
// list, its names, its key and its body, whose expressions compile
// against a scope of their own. before are the steps of the top level
// before it.
func (b *builder) loop(s *Step, rs *rawStep, before []*rawStep, seen map[string]bool) {
	fe := &ForEach{As: "item", IndexAs: "index", MaxParallel: 1, Pos: rs.forEachPos}
	s.ForEach = fe
	b.loops = append(b.loops, s)
	limit, limitBy := b.w.Limits().MaxItems, "defaults.max_items"
	if rs.maxItems.ok() {
		if n, ok := b.count("max_items", rs.maxItems); ok {
			fe.MaxItems, limit, limitBy = n, n, "max_items"
		}
	}
	if rs.forEachIsList {
		if rs.forEachList != nil {
			fe.List = rs.forEachList
			if len(fe.List) > limit {
				b.d.errorf(rs.forEachPos, "for_each: %d items; a loop has at most %d (%s)", len(fe.List), limit, limitBy)
			}
		}
	} else {
		fe.Items = b.expr("for_each", rs.forEach, gates.Any)
	}
	scope := gates.Scope{Vars: b.scope.Vars, Elsewhere: map[string]string{}, Inputs: b.scope.Inputs}
	fe.As, scope.Item = b.itemName("as", rs.as, "item")
	fe.IndexAs, scope.Index = b.itemName("index_as", rs.indexAs, "index")
	if fe.As == fe.IndexAs {
		p := rs.indexAs.pos()
		if !rs.indexAs.set {
			p = rs.as.pos()
		}
		b.d.errorf(p, "index_as: %q is also the name of the item (as); give them different names", fe.IndexAs)
		scope.Index = ""
	}
	if rs.maxParallel.ok() {
		if n, ok := b.count("max_parallel", rs.maxParallel); ok {
			fe.MaxParallel = n
		}
	}
	fe.ContinueOnError = b.boolean("continue_on_error", rs.continueOnError, false)
	if len(rs.body) == 0 {
		p := rs.forEachPos
		if rs.bodySet {
			p = rs.bodyPos
		}
		b.d.errorf(p, "step %q is a for_each loop: give it a body, steps: with at least one step", s.ID)
	}

	// The body's scope: the steps of the top level before the loop and
	// those of the body; any other step is named with why it is not.
	inScope := map[string]bool{}
	for _, rp := range before {
		if rp.id.ok() && !inScope[rp.id.val] {
			inScope[rp.id.val] = true
			scope.Steps = append(scope.Steps, rp.id.val)
		}
	}
	for _, rb := range rs.body {
		if rb.id.ok() && !inScope[rb.id.val] {
			inScope[rb.id.val] = true
			scope.Steps = append(scope.Steps, rb.id.val)
		}
	}
	for _, id := range b.scope.Steps {
		if !inScope[id] {
			scope.Elsewhere[id] = fmt.Sprintf("step %q is not before loop %q: the body of a loop reads the steps before the loop and those of its body", id, s.ID)
		}
	}
	for id, l := range b.bodyIDs {
		if !inScope[id] {
			scope.Elsewhere[id] = bodyStepElsewhere(id, l)
		}
	}
	outer := b.comp
	b.comp = gates.NewCompiler(scope)
	defer func() { b.comp = outer }()
	if rs.key.set {
		fe.Key = b.expr("key", rs.key, gates.Any)
	}
	for _, rb := range rs.body {
		if bs := b.step(rb, seen, s); bs != nil {
			fe.Body = append(fe.Body, bs)
		}
	}
	b.loopWorkspace(s, rs)
}

// itemName reads as or index_as: an identifier that is no other name of
// the expressions. It returns the name the loop gives and the name the
// body's scope uses ("" when the name would mean something else there).
func (b *builder) itemName(field string, v str, def string) (string, string) {
	if !v.ok() {
		return def, def
	}
	if !inputName.MatchString(v.val) {
		b.d.errorf(v.pos(), "%s: %q: want lowercase letters, digits and _, not starting with a digit", field, v.val)
		return v.val, v.val
	}
	if what, ok := gates.Reserved(v.val); ok {
		b.d.errorf(v.pos(), "%s: %q is %s; give the %s another name", field, v.val, what, map[string]string{"as": "item", "index_as": "index"}[field])
		return v.val, ""
	}
	return v.val, v.val
}

// AllSteps returns every step: those of the top level in file order,
// each loop's body right after its loop step.
func (w *Workflow) AllSteps() []*Step {
	out := make([]*Step, 0, len(w.Steps))
	for _, s := range w.Steps {
		out = append(out, s)
		if s.ForEach != nil {
			out = append(out, s.ForEach.Body...)
		}
	}
	return out
}

// LoopOf returns the loop step of the body step with the id, or nil
// when there is no such step or it is a step of the top level.
func (w *Workflow) LoopOf(id string) *Step {
	s := w.Step(id)
	if s == nil || s.Loop == "" {
		return nil
	}
	for _, l := range w.Steps {
		if l.ID == s.Loop && l.ForEach != nil && slices.Contains(l.ForEach.Body, s) {
			return l
		}
	}
	return nil
}
