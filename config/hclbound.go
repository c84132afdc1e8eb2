package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// A value in an HCL workflow is evaluated without variables or
// functions, so only its for expressions and %{for} directives can make
// it larger than its text: each repeats its body once for each element
// of its collection, and bodies nest and repeat the variables of the
// loops around them, so that a few kilobytes of them could ask for
// gigabytes. Before a value that has any is evaluated, its syntax tree
// alone bounds how many times their bodies can run, and how large the
// value can be; a value that could run them more than maxForRuns times
// in all, or be larger than maxForSize, is refused at the position of
// its outermost loop that is too large (or at the value, when only
// their sum is).

const (
	// maxForRuns is how many times, in all, the loops of one value may
	// run their bodies.
	maxForRuns = 10_000
	// maxForSize is how large a value with loops may be: the bytes of
	// its strings and one for every value in it.
	maxForSize = 1 << 20
)

// boundInf stands for any count beyond every limit; the bounds'
// arithmetic stops there, so that it never overflows.
const boundInf = int64(1) << 40

// bound is an upper bound of an expression's value and of the work of
// evaluating it.
type bound struct {
	// size bounds the bytes of the value's strings plus one for every
	// value it holds, itself included (so size ≥ elems).
	size int64
	// elems bounds how many elements the value has, when it is a
	// collection.
	elems int64
	// item bounds each element; nil bounds it by the value itself.
	item *bound
	// runs bounds how many times loop bodies run while it is evaluated.
	runs int64
	// at is the outermost loop that is too large, if one is.
	at *hcl.Range
}

// each returns the bound of an element of b's value.
func (b bound) each() bound {
	if b.item != nil {
		return *b.item
	}
	return bound{size: b.size, elems: b.size}
}

// over reports whether b is beyond a limit.
func (b bound) over() bool { return b.size > maxForSize || b.runs > maxForRuns }

func badd(xs ...int64) int64 {
	var s int64
	for _, x := range xs {
		s = min(s+x, boundInf)
	}
	return s
}

func bmul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > boundInf/b {
		return boundInf
	}
	return min(a*b, boundInf)
}

// join bounds a value that is either a's or b's.
func join(a, b bound) bound {
	j := bound{size: max(a.size, b.size), elems: max(a.elems, b.elems), runs: max(a.runs, b.runs)}
	if a.item != nil && b.item != nil {
		it := join(*a.item, *b.item)
		j.item = &it
	}
	return j
}

// loopScope binds the variables of the loops around an expression to
// the bounds of their values.
type loopScope struct {
	name string
	anon *hclsyntax.AnonSymbolExpr // a splat's item, when name is ""
	b    bound
	up   *loopScope
}

func (s *loopScope) lookup(name string, anon *hclsyntax.AnonSymbolExpr) (bound, bool) {
	for ; s != nil; s = s.up {
		if s.name == name && s.anon == anon {
			return s.b, true
		}
	}
	return bound{}, false
}

// hasLoop reports whether e holds a for expression or a %{for}
// directive.
func hasLoop(e hclsyntax.Expression) bool {
	found := false
	hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		if _, ok := n.(*hclsyntax.ForExpr); ok {
			found = true
		}
		return nil
	})
	return found
}

// boundOf bounds e with the loop variables of s.
func boundOf(e hclsyntax.Expression, s *loopScope) bound {
	one := bound{size: 1}
	switch e := e.(type) {
	case *hclsyntax.LiteralValueExpr:
		return literalBound(e.Val)
	case *hclsyntax.TemplateExpr:
		b := one
		for _, p := range e.Parts {
			pb := boundOf(p, s)
			b.size, b.runs = badd(b.size, pb.size), badd(b.runs, pb.runs)
			b.at = firstAt(b.at, pb.at)
		}
		return b
	case *hclsyntax.TemplateWrapExpr:
		return boundOf(e.Wrapped, s)
	case *hclsyntax.TemplateJoinExpr:
		tb := boundOf(e.Tuple, s)
		return bound{size: tb.size, runs: tb.runs, at: tb.at}
	case *hclsyntax.ParenthesesExpr:
		return boundOf(e.Expression, s)
	case *hclsyntax.TupleConsExpr:
		b := bound{size: 1, elems: int64(len(e.Exprs))}
		for i, x := range e.Exprs {
			xb := boundOf(x, s)
			b.size, b.runs, b.at = badd(b.size, xb.size), badd(b.runs, xb.runs), firstAt(b.at, xb.at)
			b.item = joinItem(b.item, xb, i == 0)
		}
		return b
	case *hclsyntax.ObjectConsExpr:
		b := bound{size: 1, elems: int64(len(e.Items))}
		for i, it := range e.Items {
			kb, vb := boundOf(it.KeyExpr, s), boundOf(it.ValueExpr, s)
			b.size, b.runs = badd(b.size, kb.size, vb.size), badd(b.runs, kb.runs, vb.runs)
			b.at = firstAt(firstAt(b.at, kb.at), vb.at)
			b.item = joinItem(b.item, vb, i == 0)
		}
		return b
	case *hclsyntax.ObjectConsKeyExpr:
		return boundOf(e.Wrapped, s)
	case *hclsyntax.ForExpr:
		return forBound(e, s)
	case *hclsyntax.ScopeTraversalExpr:
		v, ok := s.lookup(e.Traversal.RootName(), nil)
		if !ok {
			return one // not a loop's: evaluating it fails
		}
		if len(e.Traversal) > 1 {
			// An element or attribute of the variable's value.
			return bound{size: v.size, elems: v.size}
		}
		v.runs, v.at = 0, nil
		return v
	case *hclsyntax.RelativeTraversalExpr:
		sb := boundOf(e.Source, s)
		return bound{size: sb.size, elems: sb.size, runs: sb.runs, at: sb.at}
	case *hclsyntax.IndexExpr:
		cb, kb := boundOf(e.Collection, s), boundOf(e.Key, s)
		return bound{size: cb.size, elems: cb.size, runs: badd(cb.runs, kb.runs), at: firstAt(cb.at, kb.at)}
	case *hclsyntax.SplatExpr:
		sb := boundOf(e.Source, s)
		n := max(sb.elems, 1)
		eb := boundOf(e.Each, &loopScope{anon: e.Item, b: sb.each(), up: s})
		return bound{size: badd(1, bmul(n, badd(eb.size, 1))), elems: n, item: &eb,
			runs: badd(sb.runs, bmul(n, eb.runs)), at: firstAt(sb.at, eb.at)}
	case *hclsyntax.AnonSymbolExpr:
		if v, ok := s.lookup("", e); ok {
			v.runs, v.at = 0, nil
			return v
		}
		return one
	case *hclsyntax.ConditionalExpr:
		cb, tb, fb := boundOf(e.Condition, s), boundOf(e.TrueResult, s), boundOf(e.FalseResult, s)
		b := join(tb, fb)
		b.runs = badd(cb.runs, tb.runs, fb.runs)
		b.at = firstAt(firstAt(cb.at, tb.at), fb.at)
		return b
	case *hclsyntax.BinaryOpExpr:
		lb, rb := boundOf(e.LHS, s), boundOf(e.RHS, s)
		return bound{size: 1, runs: badd(lb.runs, rb.runs), at: firstAt(lb.at, rb.at)}
	case *hclsyntax.UnaryOpExpr:
		vb := boundOf(e.Val, s)
		return bound{size: 1, runs: vb.runs, at: vb.at}
	case *hclsyntax.FunctionCallExpr, *hclsyntax.ExprSyntaxError:
		// A call fails before its arguments are evaluated: there are
		// no functions.
		return one
	}
	// An expression this does not know could be anything.
	return bound{size: boundInf, elems: boundInf, runs: boundInf}
}

// forBound bounds a for expression or a %{for} directive: its body, its
// key and its condition run once for each element of its collection.
func forBound(e *hclsyntax.ForExpr, s *loopScope) bound {
	cb := boundOf(e.CollExpr, s)
	n := cb.elems
	// The key is an index or an attribute's name.
	inner := &loopScope{name: e.ValVar, b: cb.each(), up: s}
	if e.KeyVar != "" {
		inner = &loopScope{name: e.KeyVar, b: bound{size: cb.size}, up: inner}
	}
	vb := boundOf(e.ValExpr, inner)
	per := bound{size: badd(vb.size, 1), runs: badd(1, vb.runs), at: vb.at}
	for _, x := range []hclsyntax.Expression{e.KeyExpr, e.CondExpr} {
		if x != nil {
			xb := boundOf(x, inner)
			per.size, per.runs, per.at = badd(per.size, xb.size), badd(per.runs, xb.runs), firstAt(per.at, xb.at)
		}
	}
	b := bound{size: badd(1, bmul(n, per.size)), elems: n, runs: badd(cb.runs, bmul(n, per.runs)), at: firstAt(cb.at, per.at)}
	item := vb
	item.runs, item.at = 0, nil
	if e.Group {
		// Each element gathers the values of a key.
		item = bound{size: badd(1, bmul(n, vb.size)), elems: n, item: &vb}
	}
	b.item = &item
	if b.over() {
		b.at = e.SrcRange.Ptr()
	}
	return b
}

// literalBound bounds a literal value by itself.
func literalBound(v cty.Value) bound {
	b := bound{size: 1}
	if v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
		b.size = badd(1, int64(len(v.AsString())))
	}
	return b
}

// joinItem adds an element's bound x to the join of the others' (first
// says there were none).
func joinItem(items *bound, x bound, first bool) *bound {
	x.runs, x.at = 0, nil
	if first {
		return &x
	}
	j := join(*items, x)
	return &j
}

// atOf returns the outer loop too large when there is one, else the
// inner.
func firstAt(outer, inner *hcl.Range) *hcl.Range {
	if outer != nil {
		return outer
	}
	return inner
}

// loopsBounded reports whether the value e, about to be evaluated, keeps
// to maxForRuns and maxForSize; if not, it says so where.
func (h *hclDecoder) loopsBounded(what string, e hclsyntax.Expression) bool {
	if !hasLoop(e) {
		return true
	}
	b := boundOf(e, nil)
	if !b.over() {
		return true
	}
	r := e.Range()
	if b.at != nil {
		r = *b.at
	}
	if b.runs > maxForRuns {
		h.d.errorf(h.pos(r), "%s: these for loops could run their bodies more than %d times; the for expressions and %%{for} directives of one value may run them at most %d times in all (write the value out, or loop over shorter lists)",
			what, maxForRuns, maxForRuns)
	} else {
		h.d.errorf(h.pos(r), "%s: these for loops could make a value of more than %d MiB; a value with for expressions or %%{for} directives may hold at most that (write it out, or loop over shorter lists)",
			what, maxForSize>>20)
	}
	return false
}
