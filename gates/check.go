package gates

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"

	"github.com/flow-run/flow/internal/suggest"
)

// refChecker walks a parsed expression, checking the references the
// type checker cannot know about (step ids and var names come from the
// workflow) or would report less helpfully (fields of a step), and
// recording which environment functions the expression uses.
type refChecker struct {
	src  string
	comp *Compiler
	use  funcSet
	err  *Error
	refs Refs
}

// checkRefs checks the references of the expression tree rooted at
// node against the scope of comp; the returned checker holds the first
// error in source order.
func checkRefs(src string, comp *Compiler, node *ast.Node) *refChecker {
	c := &refChecker{src: src, comp: comp}
	ast.Walk(node, c)
	return c
}

// Visit implements ast.Visitor.
func (c *refChecker) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if n.Value == itemName || n.Value == indexName {
			c.fail(n, fmt.Sprintf("unknown name %q", n.Value))
			return
		}
		if c.isItem(n.Value) {
			c.refs.Item = true
			return
		}
		c.use |= funcBit(n.Value)
		if n.Value == "steps" || n.Value == "run" {
			c.refs.RunWide = true
		}
		if strings.HasPrefix(n.Value, "__") || slices.Contains(guardedBuiltins, n.Value) {
			c.use |= useBudget
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "+", "..":
			c.use |= useBudget | usePatch
		case "in":
			if !isScalarArray(n.Right) {
				c.use |= useBudget | usePatch
			}
		case "==", "!=":
			if !isScalarLiteral(n.Left) && !isScalarLiteral(n.Right) {
				c.use |= useBudget | usePatch
			}
		case "matches":
			c.use |= useBudget | usePatch
			// The type checker compiles a constant pattern: refuse
			// one over the limits before it does.
			if p, ok := n.Right.(*ast.StringNode); ok {
				if err := patternLimit(p.Value); err != nil {
					c.fail(p, err.Error())
				}
			}
		}
	case *ast.BuiltinNode:
		if isPredicate(n.Name) {
			c.use |= useBudget | usePatch
		}
	case *ast.VariableDeclaratorNode:
		switch {
		case slices.Contains(Names(), n.Name):
			c.fail(n, fmt.Sprintf("let %s: %q is already an environment name", n.Name, n.Name))
		case n.Name == c.comp.scope.Item && n.Name != "":
			c.fail(n, fmt.Sprintf("let %s: %q is already the name of the loop's item", n.Name, n.Name))
		case n.Name == c.comp.scope.Index && n.Name != "":
			c.fail(n, fmt.Sprintf("let %s: %q is already the name of the item's index", n.Name, n.Name))
		}
	case *ast.MemberNode:
		c.member(n)
	}
}

// isScalarLiteral reports whether node is a literal nil, boolean,
// number or string: comparing with one costs no more than a step or a
// scan of a string.
func isScalarLiteral(node ast.Node) bool {
	switch node.(type) {
	case *ast.NilNode, *ast.BoolNode, *ast.IntegerNode, *ast.FloatNode, *ast.StringNode:
		return true
	}
	return false
}

// isScalarArray reports whether node is an array written in the
// expression whose elements are all literal nil, booleans, numbers or
// strings: looking a value up in it costs a step per element, and
// expr's optimizer turns it into a set when it can.
func isScalarArray(node ast.Node) bool {
	a, ok := node.(*ast.ArrayNode)
	if !ok {
		return false
	}
	for _, e := range a.Nodes {
		if !isScalarLiteral(e) {
			return false
		}
	}
	return true
}

// member checks steps.X, vars.X and the fields of struct values, and
// records which steps' output is read.
func (c *refChecker) member(n *ast.MemberNode) {
	prop, ok := n.Property.(*ast.StringNode)
	if !ok {
		return // a computed index, known only at run time
	}
	if prop.Value == "output" {
		c.outputRef(n.Node)
	}
	if step, ok := stepInput(n.Node); ok {
		c.inputRef(step, prop)
	}
	if id, ok := n.Node.(*ast.IdentifierNode); ok {
		switch id.Value {
		case "steps":
			if !c.comp.hasStep(prop.Value) {
				if why, ok := c.comp.scope.Elsewhere[prop.Value]; ok {
					c.fail(prop, why)
				} else {
					name, hint := quoteSuggest(prop.Value, c.comp.scope.Steps)
					c.failHint(prop, "unknown step "+name, hint)
				}
			}
			return
		case "vars":
			if !c.comp.hasVar(prop.Value) {
				name, hint := quoteSuggest(prop.Value, c.comp.scope.Vars)
				c.failHint(prop, "unknown var "+name, hint)
			}
			return
		}
	}
	owner, t := structOf(n.Node)
	if t == nil {
		return
	}
	fields := structFields(t)
	if !slices.Contains(fields, prop.Value) {
		msg := fmt.Sprintf("unknown field %q of %s", prop.Value, owner)
		s, ok := suggest.Closest(prop.Value, fields)
		if ok {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		c.failHint(prop, msg, s)
	}
}

// stepInput returns X when node is steps.X.input, written with dots or
// quoted indexes.
func stepInput(node ast.Node) (string, bool) {
	m, ok := node.(*ast.MemberNode)
	if !ok {
		return "", false
	}
	if p, ok := m.Property.(*ast.StringNode); !ok || p.Value != "input" {
		return "", false
	}
	s, ok := m.Node.(*ast.MemberNode)
	if !ok {
		return "", false
	}
	id, ok := s.Node.(*ast.IdentifierNode)
	name, named := s.Property.(*ast.StringNode)
	if !ok || id.Value != "steps" || !named {
		return "", false
	}
	return name.Value, true
}

// inputRef checks an input read from a step, steps.X.input.NAME: X
// must be a human step and, when it declares inputs, NAME one of them
// (an approval gives only those).
func (c *refChecker) inputRef(step string, name *ast.StringNode) {
	if c.comp.scope.Inputs == nil || !c.comp.hasStep(step) {
		return
	}
	declared, human := c.comp.scope.Inputs[step]
	switch {
	case !human:
		c.fail(name, fmt.Sprintf("step %q has no human block: it takes no input", step))
	case len(declared) > 0 && !slices.Contains(declared, name.Value):
		input, hint := quoteSuggest(name.Value, declared)
		c.failHint(name, fmt.Sprintf("step %q declares no input %s", step, input), hint)
	}
}

// isItem reports whether name is the loop's item or index in the scope.
func (c *refChecker) isItem(name string) bool {
	return name != "" && (name == c.comp.scope.Item || name == c.comp.scope.Index)
}

// outputRef records a read of the output of the step node denotes:
// steps.X names it; anything else (steps[expr], a variable holding a
// step) may be any step, except a part of the loop's item, which is a
// recorded value.
func (c *refChecker) outputRef(node ast.Node) {
	root := node
	for {
		m, ok := root.(*ast.MemberNode)
		if !ok {
			break
		}
		root = m.Node
	}
	if id, ok := root.(*ast.IdentifierNode); ok && c.isItem(id.Value) {
		return
	}
	if m, ok := node.(*ast.MemberNode); ok {
		if id, ok := m.Node.(*ast.IdentifierNode); ok && id.Value == "steps" {
			if s, ok := m.Property.(*ast.StringNode); ok {
				if !slices.Contains(c.refs.Outputs, s.Value) {
					c.refs.Outputs = append(c.refs.Outputs, s.Value)
				}
				return
			}
		}
	}
	c.refs.AnyOutput = true
}

// structOf returns a description and the type of the struct value node
// denotes when that is known from the syntax alone: run, feedback,
// check, a step (steps.X or steps[expr]), or the usage of run or of a
// step.
func structOf(node ast.Node) (string, reflect.Type) {
	switch n := node.(type) {
	case *ast.IdentifierNode:
		switch n.Value {
		case "run":
			return "run", reflect.TypeFor[RunInfo]()
		case "feedback":
			return "feedback", reflect.TypeFor[Feedback]()
		case "check":
			return "check", reflect.TypeFor[CheckInfo]()
		}
	case *ast.MemberNode:
		if p, ok := n.Property.(*ast.StringNode); ok && p.Value == "usage" {
			if owner, t := structOf(n.Node); t == reflect.TypeFor[RunInfo]() || t == reflect.TypeFor[StepInfo]() {
				if owner == "run" {
					return "run.usage", reflect.TypeFor[Usage]()
				}
				return "the usage of " + owner, reflect.TypeFor[Usage]()
			}
		}
		if id, ok := n.Node.(*ast.IdentifierNode); ok && id.Value == "steps" {
			if s, ok := n.Property.(*ast.StringNode); ok {
				return fmt.Sprintf("step %q", s.Value), reflect.TypeFor[StepInfo]()
			}
			return "a step", reflect.TypeFor[StepInfo]()
		}
	}
	return "", nil
}

// fail records an error at node unless one earlier in the source is
// already recorded. An error at a quoted name (steps["x"]) points at
// the name, after the quote.
func (c *refChecker) fail(node ast.Node, msg string) { c.failHint(node, msg, "") }

// failHint is fail for a message whose did-you-mean hint suggests
// suggestion ("" for none).
func (c *refChecker) failHint(node ast.Node, msg, suggestion string) {
	off := runeOffset(c.src, node.Location().From)
	if _, ok := node.(*ast.StringNode); ok && off < len(c.src) && strings.ContainsRune("\"'`", rune(c.src[off])) {
		off++
	}
	e := newError(c.src, off, msg)
	e.Suggestion = suggestion
	if c.err == nil || e.Offset < c.err.Offset {
		c.err = e
	}
}

// quoteSuggest quotes name and adds a did-you-mean hint from candidates
// when one is close; it returns the name the hint suggests, or "".
func quoteSuggest(name string, candidates []string) (quoted, suggestion string) {
	if s, ok := suggest.Closest(name, candidates); ok {
		return fmt.Sprintf("%q (did you mean %q?)", name, s), s
	}
	return fmt.Sprintf("%q", name), ""
}

// explain rewrites the type checker's messages that name things the
// user wrote, adding quotes and a did-you-mean hint (from the
// environment, the builtins and the scope's item and index names).
func (c *Compiler) explain(e *Error) *Error {
	if name, ok := strings.CutPrefix(e.Msg, "unknown name "); ok && !strings.ContainsAny(name, " \t\n") {
		names := knownNames()
		for _, n := range []string{c.scope.Item, c.scope.Index} {
			if n != "" {
				names = append(names, n)
			}
		}
		quoted, hint := quoteSuggest(name, names)
		e.Msg, e.Suggestion = "unknown name "+quoted, hint
	}
	return e
}

// knownNames returns every name an expression may use on its own: the
// environment and expr's builtin functions.
func knownNames() []string {
	names := Names()
	for _, f := range builtin.Builtins {
		if f.Name != "now" {
			names = append(names, f.Name)
		}
	}
	return names
}
