package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// hclDecoder walks the syntax tree of an HCL workflow into the raw model.
type hclDecoder struct {
	src *source
	d   *diags
}

// decodeHCL decodes an HCL workflow; it returns nil when the file does
// not parse.
func decodeHCL(src *source, d *diags) *rawWorkflow {
	h := &hclDecoder{src: src, d: d}
	if h.tooDeep() {
		return nil
	}
	file, hd := hclsyntax.ParseConfig(src.data, src.name, hcl.Pos{Line: 1, Column: 1, Byte: 0})
	if hd.HasErrors() {
		h.hclDiags(hd)
		return nil
	}
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		d.errorf(Pos{File: src.name, Line: 1, Col: 1}, "not an HCL native syntax file")
		return nil
	}
	w := &rawWorkflow{src: src, name: str{sp: span{src: src}}}
	h.body(body, &workflowTable.keySet, w)
	return w
}

// maxHCLNesting bounds how deeply brackets, strings, interpolations
// and template directives nest in an HCL file: hclsyntax parses them
// recursively, and a few megabytes of [ would overflow its stack.
const maxHCLNesting = 1000

// tooDeep reports, having said where, whether the file nests deeper than
// maxHCLNesting.
func (h *hclDecoder) tooDeep() bool {
	tokens, _ := hclsyntax.LexConfig(h.src.data, h.src.name, hcl.InitialPos)
	depth, directive := 0, false
	for _, t := range tokens {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenOQuote,
			hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			depth++
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCQuote,
			hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			depth--
		case hclsyntax.TokenIdent:
			// The text between %{if} and %{endif}, or %{for} and
			// %{endfor}, is nested too.
			if directive {
				switch string(t.Bytes) {
				case "if", "for":
					depth++
				case "endif", "endfor":
					depth--
				}
			}
		}
		directive = t.Type == hclsyntax.TokenTemplateControl
		if depth > maxHCLNesting {
			h.d.errorf(h.pos(t.Range), "hcl: nested more than %d levels deep (brackets, strings, interpolations and template directives)", maxHCLNesting)
			return true
		}
	}
	return false
}

// hclValue is a value in an HCL file: an attribute, a block or a block's
// label.
type hclValue struct {
	h     *hclDecoder
	attr  *hclsyntax.Attribute
	block *hclsyntax.Block
	// once records the blocks met in the body that holds block, for the
	// blocks that may appear once.
	once map[string]bool
	// labelled is set when block's labels were already checked: block
	// is the body of a named entry.
	labelled bool
	// label is the value of a key given by a block's label.
	label *str
}

func (v *hclValue) pos() Pos {
	switch {
	case v.attr != nil:
		return v.h.pos(v.attr.Expr.Range())
	case v.block != nil:
		return v.h.pos(v.block.TypeRange)
	}
	return v.label.pos()
}

func (v *hclValue) keyPos() Pos {
	if v.attr != nil {
		return v.h.pos(v.attr.NameRange)
	}
	return v.pos()
}

func (v *hclValue) errorf(format string, args ...any) { v.h.d.errorf(v.pos(), format, args...) }

// The values of attributes: a block is never given to a key that is not
// a block (body reports it), nor an attribute to a key that is.

func (v *hclValue) str(what string) str {
	if v.label != nil {
		return *v.label
	}
	return v.h.str(what, v.attr.Expr)
}

func (v *hclValue) list(what string, one bool) []str {
	if _, ok := v.attr.Expr.(*hclsyntax.TupleConsExpr); !ok && !one {
		v.errorf("%s: want a list [\"...\", ...]", what)
		return nil
	}
	return v.h.list(what, v.attr.Expr)
}

func (v *hclValue) strMap(what string) []kv { return v.h.strMap(what, v.attr.Expr) }

// section reads a block without labels; a second block of its kind in
// one body does not stand.
func (v *hclValue) section(t *keySet, dst any) bool {
	if !v.labelled && (!v.h.labels(v.block, 0) || v.h.repeated(v.block, v.once)) {
		return false
	}
	v.h.body(v.block.Body, t, dst)
	return true
}

// entries reads a block with one label, the entry's name.
func (v *hclValue) entries(what string, f func(name str, body value)) {
	if v.h.labels(v.block, 1) {
		f(v.h.label(v.block), &hclValue{h: v.h, block: v.block, labelled: true})
	}
}

// items gives the block as one item: each block is one.
func (v *hclValue) items(what string, f func(item value)) { f(v) }

// entry reads an item's block, whose label gives the table's label key.
func (v *hclValue) entry(t *keySet, dst any) bool {
	if !v.h.labels(v.block, 1) {
		return false
	}
	if t.label >= 0 {
		id := v.h.label(v.block)
		t.set(dst, t.label, &hclValue{h: v.h, label: &id})
	}
	v.h.body(v.block.Body, t, dst)
	return true
}

func (v *hclValue) isList() bool {
	if v.attr == nil {
		return false
	}
	_, ok := v.attr.Expr.(*hclsyntax.TupleConsExpr)
	return ok
}

func (v *hclValue) isBlock() bool { return v.block != nil }

func (v *hclValue) isEmpty() bool {
	return v.block != nil && len(v.block.Body.Attributes) == 0 && len(v.block.Body.Blocks) == 0
}

func (v *hclValue) literalList(what string) []any {
	out, ok := v.literal(what)
	if !ok {
		return nil
	}
	return out.([]any)
}

func (v *hclValue) literal(what string) (any, bool) {
	e := v.attr.Expr
	if vars := e.Variables(); len(vars) > 0 {
		v.h.d.errorf(v.h.pos(vars[0].SourceRange()), "%s: must be a literal value, not a reference (an expression is a string)", what)
		return nil, false
	}
	if !v.h.loopsBounded(what, e) {
		return nil, false
	}
	val, diags := e.Value(nil)
	if diags.HasErrors() {
		v.h.hclDiags(diags)
		return nil, false
	}
	budget := maxLiteralValues
	return v.h.literal(what, e.Range(), val, 0, &budget)
}

// literal converts an HCL value into a JSON-compatible one; budget
// counts down the values it may still convert.
func (h *hclDecoder) literal(what string, r hcl.Range, val cty.Value, depth int, budget *int) (any, bool) {
	if *budget--; *budget < 0 {
		h.d.errorf(h.pos(r), "%s: too many values: a list written in the file holds at most %d", what, maxLiteralValues)
		return nil, false
	}
	if depth > maxLiteralDepth {
		h.d.errorf(h.pos(r), "%s: nested too deeply (at most %d levels)", what, maxLiteralDepth)
		return nil, false
	}
	t := val.Type()
	switch {
	case val.IsNull():
		return nil, true
	case !val.IsKnown():
		h.d.errorf(h.pos(r), "%s: want a literal value", what)
		return nil, false
	case t == cty.String:
		return val.AsString(), true
	case t == cty.Number:
		f, _ := val.AsBigFloat().Float64()
		return f, true
	case t == cty.Bool:
		return val.True(), true
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		out := make([]any, 0, val.LengthInt())
		for it := val.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			x, ok := h.literal(what, r, ev, depth+1, budget)
			if !ok {
				return nil, false
			}
			out = append(out, x)
		}
		return out, true
	case t.IsObjectType() || t.IsMapType():
		out := make(map[string]any, val.LengthInt())
		for it := val.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			x, ok := h.literal(what, r, ev, depth+1, budget)
			if !ok {
				return nil, false
			}
			out[k.AsString()] = x
		}
		return out, true
	}
	h.d.errorf(h.pos(r), "%s: want a literal value, got %s", what, ctyKind(t))
	return nil, false
}

// label is the first label of a block.
func (h *hclDecoder) label(b *hclsyntax.Block) str {
	return str{val: b.Labels[0], set: true, sp: span{src: h.src, off: b.LabelRanges[0].Start.Byte, style: styleOpaque}}
}

// body reads each attribute and then each block of b, in file order,
// into dst through t.set, reporting unknown names and attributes written
// as blocks or blocks as attributes.
func (h *hclDecoder) body(b *hclsyntax.Body, t *keySet, dst any) {
	list := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		list = append(list, a)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].SrcRange.Start.Byte < list[j].SrcRange.Start.Byte })
	fv := &hclValue{h: h}
	for _, a := range list {
		i, ok := t.hIndex[a.Name]
		switch {
		case ok && !t.kinds[i].isBlock():
			*fv = hclValue{h: h, attr: a}
			t.set(dst, i, fv)
		case ok:
			h.d.errorf(h.pos(a.NameRange), "%s is a block: write %s { ... }", a.Name, a.Name)
		default:
			h.d.unknown(h.pos(a.NameRange), "key", a.Name, t.hclKnown())
		}
	}
	var once map[string]bool
	for _, bl := range b.Blocks {
		i, ok := t.hIndex[bl.Type]
		switch {
		case ok && (t.kinds[i].isBlock() || t.kinds[i] == kindWordOrBlock):
			if once == nil {
				once = map[string]bool{}
			}
			*fv = hclValue{h: h, block: bl, once: once}
			t.set(dst, i, fv)
		case ok:
			h.d.errorf(h.pos(bl.TypeRange), "%s is an argument: write %s = ...", bl.Type, bl.Type)
		default:
			h.d.unknown(h.pos(bl.TypeRange), "block", bl.Type, t.hclKnown())
		}
	}
}

// labels checks that a block has n labels.
func (h *hclDecoder) labels(b *hclsyntax.Block, n int) bool {
	if len(b.Labels) == n {
		return true
	}
	switch {
	case n == 0:
		h.d.errorf(h.pos(b.LabelRanges[0]), "a %s block takes no label", b.Type)
	case len(b.Labels) == 0:
		h.d.errorf(h.pos(b.OpenBraceRange), "a %s block needs a name: %s \"name\" { ... }", b.Type, b.Type)
	default:
		h.d.errorf(h.pos(b.LabelRanges[n]), "a %s block takes %d label", b.Type, n)
	}
	return false
}

// repeated reports a second block of a kind that may appear once; seen
// records the kinds met so far.
func (h *hclDecoder) repeated(b *hclsyntax.Block, seen map[string]bool) bool {
	if seen[b.Type] {
		h.d.errorf(h.pos(b.TypeRange), "duplicate %s block", b.Type)
		return true
	}
	seen[b.Type] = true
	return false
}

// str reads a literal value: a string, a number or a boolean.
func (h *hclDecoder) str(what string, e hclsyntax.Expression) str {
	if vars := e.Variables(); len(vars) > 0 {
		h.d.errorf(h.pos(vars[0].SourceRange()), "%s: must be a literal value, not a reference (expressions are strings; templates use {{ }})", what)
		return str{}
	}
	if !h.loopsBounded(what, e) {
		return str{}
	}
	v, diags := e.Value(nil)
	if diags.HasErrors() {
		h.hclDiags(diags)
		return str{}
	}
	sp := span{src: h.src, off: e.Range().Start.Byte, style: styleOpaque}
	if sp.off < len(h.src.data) {
		switch h.src.data[sp.off] {
		case '"':
			sp.style = styleHCLQuoted
		case '<':
			sp.style = styleHCLHeredoc
		}
	}
	switch {
	case v.IsNull():
		h.d.errorf(sp.pos(), "%s: want a string, got null", what)
		return str{}
	case v.Type() == cty.String:
		return str{val: v.AsString(), set: true, sp: sp}
	case v.Type() == cty.Number:
		return str{val: h.numberText(v, e.Range()), set: true, sp: sp}
	case v.Type() == cty.Bool:
		return str{val: fmt.Sprint(v.True()), set: true, sp: sp}
	}
	h.d.errorf(sp.pos(), "%s: want a string, got %s", what, ctyKind(v.Type()))
	return str{set: true, bad: true, sp: sp}
}

// list reads a list of literal values; a single value is a list of one.
func (h *hclDecoder) list(what string, e hclsyntax.Expression) []str {
	out := []str{}
	t, ok := e.(*hclsyntax.TupleConsExpr)
	if !ok {
		if s := h.str(what, e); s.ok() {
			out = append(out, s)
		}
		return out
	}
	for _, item := range t.Exprs {
		if s := h.str(what, item); s.ok() {
			out = append(out, s)
		}
	}
	return out
}

// strMap reads an object of names to literal values, in file order.
func (h *hclDecoder) strMap(what string, e hclsyntax.Expression) []kv {
	out := []kv{}
	o, ok := e.(*hclsyntax.ObjectConsExpr)
	if !ok {
		h.d.errorf(h.pos(e.Range()), "%s: want a map { name = \"value\" }", what)
		return out
	}
	seen := map[string]bool{}
	for _, item := range o.Items {
		kpos := h.pos(item.KeyExpr.Range())
		if !h.loopsBounded(what, item.KeyExpr) {
			continue
		}
		k, diags := item.KeyExpr.Value(nil)
		if diags.HasErrors() || k.IsNull() || k.Type() != cty.String {
			h.d.errorf(kpos, "%s: a key must be a name or a string", what)
			continue
		}
		key := k.AsString()
		if seen[key] {
			h.d.errorf(kpos, "duplicate key %q", key)
			continue
		}
		seen[key] = true
		if s := h.str(what+"."+key, item.ValueExpr); s.ok() {
			out = append(out, kv{key: key, keyPos: kpos, val: s})
		}
	}
	return out
}

func (h *hclDecoder) pos(r hcl.Range) Pos { return h.src.pos(r.Start.Byte) }

// maxDecimalExp bounds the binary exponent of a number written out in
// decimal: beyond float64's range, far beyond what any key takes.
const maxDecimalExp = 1100

// numberText writes the number v, written at r, as the decimal it is
// or, when it lies beyond float64's range, as it is written (so that it
// reads as the number it is in messages): the decimal
// of 1e99999999, ten bytes in the file, has a hundred million digits,
// which take hours to work out.
func (h *hclDecoder) numberText(v cty.Value, r hcl.Range) string {
	f := v.AsBigFloat()
	if exp := f.MantExp(nil); f.IsInf() || exp > maxDecimalExp || exp < -maxDecimalExp {
		return strings.TrimSpace(string(r.SliceBytes(h.src.data)))
	}
	return f.Text('f', -1)
}

// ctyKind names a kind of HCL value for messages.
func ctyKind(t cty.Type) string {
	switch {
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		return "a list"
	case t.IsObjectType() || t.IsMapType():
		return "a map"
	}
	return t.FriendlyName()
}

// hclDiags converts the HCL package's diagnostics into ours, keeping the
// first of several at one position.
func (h *hclDecoder) hclDiags(diags hcl.Diagnostics) {
	seen := map[Pos]bool{}
	for _, hd := range diags {
		pos := Pos{File: h.src.name, Line: 1, Col: 1}
		if hd.Subject != nil {
			pos = h.src.pos(hd.Subject.Start.Byte)
		}
		if seen[pos] {
			continue
		}
		seen[pos] = true
		msg := strings.TrimSuffix(hd.Summary, ".")
		if hd.Detail != "" {
			msg += ": " + strings.TrimSuffix(hd.Detail, ".")
		}
		h.d.errorf(pos, "hcl: %s", msg)
	}
}
