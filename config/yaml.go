package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlDecoder walks the node tree of a YAML workflow into the raw model.
type yamlDecoder struct {
	src *source
	d   *diags
}

// yamlErrLine finds the line number in an error of the yaml package.
var yamlErrLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decodeYAML decodes a YAML workflow from its root (yamlRoot).
func decodeYAML(y *yamlDecoder, root *yaml.Node) *rawWorkflow {
	w := &rawWorkflow{src: y.src}
	workflowTable.decode(&yamlValue{y: y, n: root}, w)
	if !w.name.set {
		w.name.sp = y.span(root)
	}
	return w
}

// yamlRoot parses a YAML workflow file: one document, a mapping. It
// returns its root node, or nil having said why there is none.
func yamlRoot(src *source, d *diags) (*yamlDecoder, *yaml.Node) {
	y := &yamlDecoder{src: src, d: d}
	dec := yaml.NewDecoder(bytes.NewReader(src.data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		y.syntaxError(err)
		return y, nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		y.syntaxError(err)
		return y, nil
	default:
		d.errorf(y.pos(&next), "a second YAML document: a workflow file holds one document (remove this ---)")
		return y, nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		d.errorf(Pos{File: src.name, Line: 1, Col: 1}, "empty workflow file")
		return y, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		d.errorf(y.pos(root), "a workflow must be a mapping of keys, got %s", kindName(root))
		return y, nil
	}
	return y, root
}

// yamlValue is a value in a YAML file: the node n, under the key k (nil
// for an item of a list).
type yamlValue struct {
	y    *yamlDecoder
	k, n *yaml.Node
}

func (v *yamlValue) pos() Pos { return v.y.pos(v.n) }

func (v *yamlValue) keyPos() Pos {
	if v.k == nil {
		return v.pos()
	}
	return v.y.pos(v.k)
}

func (v *yamlValue) errorf(format string, args ...any) { v.y.d.errorf(v.pos(), format, args...) }

func (v *yamlValue) str(what string) str { return v.y.str(what, v.n) }

func (v *yamlValue) list(what string, one bool) []str {
	out := []str{}
	if one {
		if n := resolve(v.n); n.Kind == yaml.ScalarNode {
			if sv := v.y.str(what, n); sv.ok() {
				out = append(out, sv)
			}
			return out
		}
	}
	v.y.list(v.n, what, func(n *yaml.Node) bool {
		if sv := v.y.str(what, n); sv.ok() {
			out = append(out, sv)
		}
		return true
	})
	return out
}

func (v *yamlValue) strMap(what string) []kv { return v.y.strMap(what, v.n) }

// section reads a mapping; anything else is reported, and the section
// still stands, empty.
func (v *yamlValue) section(t *keySet, dst any) bool {
	fv := &yamlValue{y: v.y}
	v.y.mapping(v.n, t.what, t.yamlKeys, func(key string, k, n *yaml.Node) {
		fv.k, fv.n = k, n
		t.set(dst, t.yIndex[key], fv)
	})
	return true
}

// entries reads a mapping of names to blocks.
func (v *yamlValue) entries(what string, f func(name str, body value)) {
	body := &yamlValue{y: v.y}
	v.y.mapping(v.n, what, nil, func(key string, k, n *yaml.Node) {
		body.k, body.n = k, n
		f(str{val: key, set: true, sp: v.y.span(k)}, body)
	})
}

// items reads a list of blocks.
func (v *yamlValue) items(what string, f func(item value)) {
	item := &yamlValue{y: v.y}
	v.y.list(v.n, what, func(n *yaml.Node) bool {
		item.n = resolve(n)
		f(item)
		return true
	})
}

// entry reads an item of a list as a mapping, which it must be.
func (v *yamlValue) entry(t *keySet, dst any) bool {
	if v.n.Kind != yaml.MappingNode {
		v.errorf("a %s must be a mapping of keys, got %s", t.what, kindName(v.n))
		return false
	}
	return v.section(t, dst)
}

func (v *yamlValue) isList() bool { return resolve(v.n).Kind == yaml.SequenceNode }

func (v *yamlValue) isBlock() bool { return resolve(v.n).Kind == yaml.MappingNode }

func (v *yamlValue) isEmpty() bool {
	n := resolve(v.n)
	return isNull(n) || n.Kind == yaml.MappingNode && len(n.Content) == 0
}

func (v *yamlValue) literal(what string) (any, bool) {
	budget := maxLiteralValues
	return v.y.literal(what, resolve(v.n), 0, &budget)
}

func (v *yamlValue) literalList(what string) []any {
	budget := maxLiteralValues
	out, ok := v.y.literal(what, resolve(v.n), 0, &budget)
	if !ok {
		return nil
	}
	return out.([]any)
}

// maxLiteralValues bounds the values of a list written in a workflow
// file, aliases expanded: YAML aliases can make a small file name a
// huge value.
const maxLiteralValues = 1 << 20

// maxLiteralDepth bounds the nesting of a list written in a workflow
// file.
const maxLiteralDepth = 64

// literal reads the node n as a JSON-compatible value; budget counts
// down the values it may still read.
func (y *yamlDecoder) literal(what string, n *yaml.Node, depth int, budget *int) (any, bool) {
	n = resolve(n)
	if *budget--; *budget < 0 {
		y.d.errorf(y.pos(n), "%s: too many values: a list written in the file holds at most %d", what, maxLiteralValues)
		return nil, false
	}
	if depth > maxLiteralDepth {
		y.d.errorf(y.pos(n), "%s: nested too deeply (at most %d levels)", what, maxLiteralDepth)
		return nil, false
	}
	switch n.Kind {
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, ok := y.literal(what, item, depth+1, budget)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode || isNull(k) {
				y.d.errorf(y.pos(k), "%s: a key must be a string, got %s", what, kindName(k))
				return nil, false
			}
			if _, dup := out[k.Value]; dup {
				y.d.errorf(y.pos(k), "duplicate key %q", k.Value)
				return nil, false
			}
			v, ok := y.literal(what, n.Content[i+1], depth+1, budget)
			if !ok {
				return nil, false
			}
			out[k.Value] = v
		}
		return out, true
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, true
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				y.d.errorf(y.pos(n), "%s: %v", what, err)
				return nil, false
			}
			switch x := v.(type) {
			case int:
				return float64(x), true
			case int64:
				return float64(x), true
			case uint64:
				return float64(x), true
			}
			return v, true
		}
		return n.Value, true
	}
	y.d.errorf(y.pos(n), "%s: want a value, got %s", what, kindName(n))
	return nil, false
}

// mapping calls f for each key of the mapping n, in file order. Keys not
// in keys (when keys is not nil) and repeated keys are reported.
func (y *yamlDecoder) mapping(n *yaml.Node, what string, keys []string, f func(key string, k, v *yaml.Node)) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		if isNull(n) {
			return // an empty section
		}
		y.d.errorf(y.pos(n), "%s: want a mapping, got %s", what, kindName(n))
		return
	}
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			y.d.errorf(y.pos(k), "%s: a key must be a string, got %s", what, kindName(k))
			continue
		}
		key := k.Value
		if seen[key] {
			y.d.errorf(y.pos(k), "duplicate key %q", key)
			continue
		}
		seen[key] = true
		if keys != nil && !slices.Contains(keys, key) {
			y.d.unknown(y.pos(k), "key", key, keys)
			continue
		}
		f(key, k, v)
	}
}

// list calls f for each item of the sequence n, until f returns false.
func (y *yamlDecoder) list(n *yaml.Node, what string, f func(n *yaml.Node) bool) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		if isNull(n) {
			return
		}
		y.d.errorf(y.pos(n), "%s: want a list, got %s", what, kindName(n))
		return
	}
	for _, item := range n.Content {
		if !f(item) {
			return
		}
	}
}

// str reads a scalar. Numbers and booleans are read as written; build
// decides what each field accepts.
func (y *yamlDecoder) str(what string, n *yaml.Node) str {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || isNull(n) {
		y.d.errorf(y.pos(n), "%s: want a string, got %s", what, kindName(n))
		return str{set: true, bad: true, sp: y.span(n)}
	}
	return str{val: n.Value, set: true, sp: y.span(n)}
}

// strMap reads a mapping of names to strings, in file order.
func (y *yamlDecoder) strMap(what string, n *yaml.Node) []kv {
	out := []kv{}
	y.mapping(n, what, nil, func(key string, k, v *yaml.Node) {
		if sv := y.str(what+"."+key, v); sv.ok() {
			out = append(out, kv{key: key, keyPos: y.pos(k), val: sv})
		}
	})
	return out
}

func (y *yamlDecoder) pos(n *yaml.Node) Pos {
	return y.src.pos(y.src.offset(n.Line, n.Column))
}

func (y *yamlDecoder) span(n *yaml.Node) span {
	sp := span{src: y.src, off: y.src.offset(n.Line, n.Column), style: stylePlain}
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		sp.style = styleDouble
	case n.Style&yaml.SingleQuotedStyle != 0:
		sp.style = styleSingle
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		sp.style = styleBlock
	}
	if n.Style&yaml.TaggedStyle != 0 {
		// A value after an explicit tag maps no further than its start.
		sp.style = styleOpaque
	}
	return sp
}

// syntaxError reports an error of the YAML parser at the line it names.
func (y *yamlDecoder) syntaxError(err error) {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 1
	if m := yamlErrLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	line = max(1, min(line, len(y.src.lines)))
	// Point at the first character of the line that is not indentation.
	off := y.src.lines[line-1]
	for off < len(y.src.data) && (y.src.data[off] == ' ' || y.src.data[off] == '\t') {
		off++
	}
	y.d.errorf(y.src.pos(off), "yaml: %s", msg)
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// kindName names the kind of a node for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		}
		return fmt.Sprintf("the string %q", n.Value)
	}
	return "nothing"
}
