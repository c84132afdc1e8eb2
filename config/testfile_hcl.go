package config

import (
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"go.yaml.in/yaml/v3"
)

// An HCL test file is read by building, from its syntax tree, the node
// tree its YAML twin would have, each node at the position of the HCL it
// comes from; the one decoder of test files then reads it. So both forms
// accept the same keys, decode to the same model and report the same
// problems at the places they are written. The shape:
//
//	workflow = "sdlc.hcl"
//
//	test "review fails once" {
//	  vars     = { feature = "search" }
//	  sessions = { code_review = [{ output = "FAIL" }, { output = "PASS" }] }
//	  expect {
//	    exit_code = 0
//	    steps     = { coding = { iteration = 1 } }
//	  }
//	}
//
// A test is a block labelled with its name; any other key of a test may
// be an attribute or a block without label. Values are literals:
// strings (quoted or heredoc, without interpolation), numbers, bools,
// null, lists and objects.

// hclRoot parses an HCL test file into the root mapping of its YAML
// form; it returns nil when the file does not parse.
func (t *testDecoder) hclRoot() *yaml.Node {
	h := &hclDecoder{src: t.y.src, d: t.y.d}
	file, hd := hclsyntax.ParseConfig(h.src.data, h.src.name, hcl.Pos{Line: 1, Column: 1, Byte: 0})
	if hd.HasErrors() {
		h.hclDiags(hd)
		return nil
	}
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		h.d.errorf(Pos{File: h.src.name, Line: 1, Col: 1}, "not an HCL native syntax file")
		return nil
	}
	c := &hclTree{h: h}
	root := &yaml.Node{Kind: yaml.MappingNode, Line: 1, Column: 1}
	for _, a := range sortedAttrs(body) {
		switch a.Name {
		case "workflow":
			if v := c.expr("workflow", a.Expr); v != nil {
				root.Content = append(root.Content, c.key("workflow", a.NameRange), v)
			} else {
				t.badWorkflow = true
			}
		case "test", "tests":
			h.d.errorf(h.pos(a.NameRange), "tests are blocks: write test \"name\" { ... }")
		default:
			h.d.unknown(h.pos(a.NameRange), "key", a.Name, []string{"workflow"})
		}
	}
	var tests *yaml.Node
	for _, bl := range body.Blocks {
		switch {
		case bl.Type == "workflow":
			h.d.errorf(h.pos(bl.TypeRange), "workflow is an argument: write workflow = \"...\"")
			continue
		case bl.Type != "test":
			h.d.unknown(h.pos(bl.TypeRange), "block", bl.Type, []string{"test"})
			continue
		case !h.labels(bl, 1):
			t.badTests = true
			continue
		}
		if tests == nil {
			tests = c.node(yaml.SequenceNode, bl.TypeRange)
			root.Content = append(root.Content, c.key("tests", bl.TypeRange), tests)
		}
		test := c.node(yaml.MappingNode, bl.TypeRange)
		name := c.node(yaml.ScalarNode, bl.LabelRanges[0])
		name.Tag, name.Value = "!!str", bl.Labels[0]
		test.Content = append(test.Content, c.key("name", bl.LabelRanges[0]), name)
		c.body("test", bl.Body, test)
		tests.Content = append(tests.Content, test)
	}
	return root
}

// hclTree builds YAML nodes from HCL syntax.
type hclTree struct{ h *hclDecoder }

// node is an empty node of a kind at the start of r.
func (c *hclTree) node(kind yaml.Kind, r hcl.Range) *yaml.Node {
	p := c.h.pos(r)
	return &yaml.Node{Kind: kind, Line: p.Line, Column: p.Col}
}

// key is a mapping key at the start of r.
func (c *hclTree) key(name string, r hcl.Range) *yaml.Node {
	k := c.node(yaml.ScalarNode, r)
	k.Tag, k.Value = "!!str", name
	return k
}

// sortedAttrs lists the attributes of a body in file order.
func sortedAttrs(b *hclsyntax.Body) []*hclsyntax.Attribute {
	list := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		list = append(list, a)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].SrcRange.Start.Byte < list[j].SrcRange.Start.Byte })
	return list
}

// body appends the attributes and blocks of b, in file order, to the
// mapping m: an attribute is a key and its value, a block without label
// a key and the mapping of its body. what names the body in messages.
func (c *hclTree) body(what string, b *hclsyntax.Body, m *yaml.Node) {
	type entry struct {
		off    int
		k, val *yaml.Node
	}
	var list []entry
	for _, a := range sortedAttrs(b) {
		if what == "test" && a.Name == "name" {
			c.h.d.errorf(c.h.pos(a.NameRange), "a test's name is its label: test \"name\" { ... }")
			continue
		}
		if v := c.expr(a.Name, a.Expr); v != nil {
			list = append(list, entry{a.SrcRange.Start.Byte, c.key(a.Name, a.NameRange), v})
		}
	}
	for _, bl := range b.Blocks {
		if !c.h.labels(bl, 0) {
			continue
		}
		v := c.node(yaml.MappingNode, bl.TypeRange)
		c.body(bl.Type, bl.Body, v)
		list = append(list, entry{bl.TypeRange.Start.Byte, c.key(bl.Type, bl.TypeRange), v})
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].off < list[j].off })
	for _, e := range list {
		m.Content = append(m.Content, e.k, e.val)
	}
}

// expr converts a literal value to a node; it reports anything else and
// returns nil.
func (c *hclTree) expr(what string, e hclsyntax.Expression) *yaml.Node {
	switch e := e.(type) {
	case *hclsyntax.TupleConsExpr:
		seq := c.node(yaml.SequenceNode, e.Range())
		for _, item := range e.Exprs {
			if v := c.expr(what, item); v != nil {
				seq.Content = append(seq.Content, v)
			}
		}
		return seq
	case *hclsyntax.ObjectConsExpr:
		m := c.node(yaml.MappingNode, e.Range())
		for _, item := range e.Items {
			k := c.objectKey(what, item.KeyExpr)
			if k == nil {
				continue
			}
			if v := c.expr(what+"."+k.Value, item.ValueExpr); v != nil {
				m.Content = append(m.Content, k, v)
			}
		}
		return m
	}
	if !literal(e) {
		c.h.d.errorf(c.h.pos(e.Range()), "%s: want a literal value (a string, number, bool, list or object), not an expression", what)
		return nil
	}
	v, diags := e.Value(nil)
	if diags.HasErrors() {
		c.h.hclDiags(diags)
		return nil
	}
	n := c.node(yaml.ScalarNode, e.Range())
	switch {
	case v.IsNull():
		n.Tag, n.Value = "!!null", "null"
	case v.Type() == cty.String:
		n.Tag, n.Value = "!!str", v.AsString()
	case v.Type() == cty.Number:
		// Left untagged, so that it reads as an int or a float as the
		// same number written in YAML does.
		n.Value = c.h.numberText(v, e.Range())
	case v.Type() == cty.Bool:
		n.Tag, n.Value = "!!bool", "false"
		if v.True() {
			n.Value = "true"
		}
	default:
		c.h.d.errorf(c.h.pos(e.Range()), "%s: want a literal value, got %s", what, ctyKind(v.Type()))
		return nil
	}
	return n
}

// objectKey converts the key of an object item: a name or a literal.
func (c *hclTree) objectKey(what string, e hclsyntax.Expression) *yaml.Node {
	if k, ok := e.(*hclsyntax.ObjectConsKeyExpr); ok {
		if name := hcl.ExprAsKeyword(k.Wrapped); name != "" {
			return c.key(name, e.Range())
		}
		e = k.Wrapped
	}
	if literal(e) {
		if v, diags := e.Value(nil); !diags.HasErrors() && !v.IsNull() && (v.Type() == cty.String || v.Type() == cty.Number) {
			if v.Type() == cty.Number {
				return c.key(c.h.numberText(v, e.Range()), e.Range())
			}
			return c.key(v.AsString(), e.Range())
		}
	}
	c.h.d.errorf(c.h.pos(e.Range()), "%s: a key must be a name or a literal string", what)
	return nil
}

// literal reports whether e is a literal scalar: a literal value, a
// string without interpolation or directives, or a negated number.
func literal(e hclsyntax.Expression) bool {
	switch e := e.(type) {
	case *hclsyntax.LiteralValueExpr:
		return true
	case *hclsyntax.TemplateExpr:
		for _, p := range e.Parts {
			if _, ok := p.(*hclsyntax.LiteralValueExpr); !ok {
				return false
			}
		}
		return true
	case *hclsyntax.UnaryOpExpr:
		lit, ok := e.Val.(*hclsyntax.LiteralValueExpr)
		return ok && e.Op == hclsyntax.OpNegate && lit.Val.Type() == cty.Number
	}
	return false
}
