package config

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

//go:generate go test -run TestSchemaFile -update .

// Schema returns a JSON Schema (draft 2020-12) of the YAML workflow
// format, with descriptions, for editors: a workflow file that starts
// with "# yaml-language-server: $schema=<path to it>" is checked and
// completed as it is typed. It is built from the tables of keys.go, so
// that it knows exactly the keys the decoders do, and describes each
// with its description and default; schema.json in this directory is a
// copy of it, kept equal by a test (go generate rewrites it, with
// test-schema.json). The schema checks shape only; Load checks
// everything else.
func Schema() []byte {
	defs := obj{
		{"expression", obj{
			{"description", "An expression (expr-lang), compiled when the workflow loads."},
			{"type", "string"},
		}},
		{"template", obj{
			{"description", "A string in which {{ expr }} is replaced by the expression's value."},
			{"type", "string"},
		}},
		{"limit", obj{
			{"description", "A positive integer, or an expression giving one."},
			{"oneOf", []any{positiveInteger(), obj{{"type", "string"}}}},
		}},
		{"duration", obj{
			{"description", "A duration such as 90s, 30m, 1h30m or 2d (a number is seconds), or an expression giving one."},
			{"type", []string{"string", "number"}},
		}},
		{"size", obj{
			{"description", "A size: a number of bytes, or a whole number and a unit such as 64MiB, 100 KiB or 1MB (KB, MB, GB are powers of 1000; KiB, MiB, GiB of 1024; B is bytes)."},
			{"oneOf", []any{positiveInteger(), obj{{"type", "string"}, {"pattern", "^ *[0-9]+ *(B|KB|MB|GB|KiB|MiB|GiB)? *$"}}}},
		}},
		{"env", obj{
			{"description", "Environment variables of the session; values are templates."},
			{"type", "object"},
			{"propertyNames", obj{{"pattern", envName.String()}}},
			{"additionalProperties", scalarValue()},
		}},
		{"stepId", obj{
			{"type", "string"},
			{"pattern", namePattern.String()},
		}},
	}
	s := &schemaBuilder{defs: defs}
	root := obj{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", "https://github.com/flow-run/flow/config/schema.json"},
		{"title", "flow workflow"},
		{"description", workflowTable.doc},
	}
	root = append(root, workflowTable.object(s)...)
	root = append(root, member{"$defs", s.defs})
	return indented(root)
}

// indented encodes a schema as indented JSON with a final newline.
func indented(root obj) []byte {
	compact, err := marshal(root)
	if err != nil {
		// The schema holds only strings, numbers, booleans and lists and
		// objects of them: it always encodes.
		panic(err)
	}
	var b bytes.Buffer
	_ = json.Indent(&b, compact, "", "  ")
	b.WriteByte('\n')
	return b.Bytes()
}

// schemaTable is a table of keys as the schema and the reference see
// it.
type schemaTable interface {
	// object is the schema of a block of the table's keys.
	object(s *schemaBuilder) obj
	// defName is the block's name under $defs, or "" when it is inline.
	defName() string
	// keyDocs and blockDoc are what the reference says of the block's
	// keys and of the block (reference.go).
	keyDocs() []keyDoc
	blockDoc() string
}

// schemaBuilder collects the $defs of the tables it meets.
type schemaBuilder struct {
	defs obj
}

// ref is the schema of a block: a reference to its $defs entry, which
// is added the first time, or the block inline.
func (s *schemaBuilder) ref(t schemaTable) obj {
	name := t.defName()
	if name == "" {
		return t.object(s)
	}
	if !s.defs.has(name) {
		s.defs = append(s.defs, member{name, nil})
		i := len(s.defs) - 1
		s.defs[i].val = t.object(s)
	}
	return obj{{"$ref", "#/$defs/" + name}}
}

func (tb *table[T]) defName() string { return tb.def }

func (tb *table[T]) object(s *schemaBuilder) obj {
	o := obj{}
	if tb.def != "" && tb.doc != "" {
		o = append(o, member{"description", tb.doc})
	}
	o = append(o, member{"type", "object"}, member{"additionalProperties", false})
	var required []string
	props := obj{}
	for _, f := range tb.fields {
		if f.required {
			required = append(required, f.name)
		}
		props = append(props, member{f.name, f.schema(s)})
	}
	if required != nil {
		o = append(o, member{"required", required})
	}
	if tb.nonEmpty {
		o = append(o, member{"minProperties", 1})
	}
	if tb.oneOf != nil {
		var alts []any
		for _, k := range tb.oneOf {
			alts = append(alts, obj{{"required", []string{k}}})
		}
		o = append(o, member{"oneOf", alts})
	}
	return append(o, member{"properties", props})
}

// schema is the schema of a key's value, with its description.
func (f *field[T]) schema(s *schemaBuilder) obj {
	var o obj
	switch f.kind {
	case kindBlock:
		o = s.ref(f.sub)
	case kindEntries:
		o = obj{{"type", "object"}, {"propertyNames", obj{{"pattern", f.pattern}}}, {"additionalProperties", s.ref(f.sub)}}
	case kindItems:
		o = obj{{"type", "array"}, {"items", s.ref(f.sub)}}
	case kindList:
		o = obj{{"type", "array"}}
		if f.unique {
			o = append(o, member{"uniqueItems", true})
		}
		o = append(o, member{"items", f.itemSchema()})
	case kindOneOrList:
		item := f.itemSchema()
		list := obj{{"type", "array"}}
		if f.unique {
			list = append(list, member{"uniqueItems", true})
		}
		o = obj{{"oneOf", []any{item, append(list, member{"items", item})}}}
	case kindWordOrBlock:
		o = obj{{"oneOf", []any{obj{{"type", "string"}, {"enum", f.enum}}, s.ref(f.sub)}}}
	case kindString:
		o = kindSchema(f.kind, f.pattern)
		if f.enum != nil {
			o = append(o, member{"enum", f.enum})
		}
	default:
		o = kindSchema(f.kind, f.pattern)
	}
	if v, ok := f.defaultValue(); ok {
		o = append(o, member{"default", v})
	}
	if d := f.description(); d != "" {
		o = append(obj{{"description", d}}, o...)
	}
	return o
}

// description is what the schema and the reference say of a key: its
// doc, and its default.
func (f *field[T]) description() string {
	switch {
	case f.def == "":
		return f.doc
	case f.doc == "":
		return "Default: " + f.def + "."
	}
	return f.doc + " Default: " + f.def + "."
}

// defaultValue is a key's default as a JSON value, when it is one the
// key's kind can be written as; a default said in words is none.
func (f *field[T]) defaultValue() (any, bool) {
	if f.def == "" || f.defWords {
		return nil, false
	}
	switch f.kind {
	case kindCount, kindLimit:
		n, err := strconv.Atoi(f.def)
		return n, err == nil
	case kindNumber, kindPositive:
		n, err := strconv.ParseFloat(f.def, 64)
		return n, err == nil
	case kindBool:
		b, err := strconv.ParseBool(f.def)
		return b, err == nil
	case kindOneOrList, kindList:
		var items []string
		for _, it := range strings.Split(strings.Trim(f.def, "[]"), ",") {
			items = append(items, strings.TrimSpace(it))
		}
		return items, true
	}
	return f.def, true
}

// itemSchema is the schema of an item of a list key.
func (f *field[T]) itemSchema() obj {
	o := kindSchema(f.elem, f.pattern)
	if f.enum != nil {
		o = append(o, member{"enum", f.enum})
	}
	return o
}

// kindSchema is the schema of a value of a scalar or mapping kind.
func kindSchema(k kind, pattern string) obj {
	switch k {
	case kindTemplate:
		return obj{{"$ref", "#/$defs/template"}}
	case kindExpr:
		return obj{{"$ref", "#/$defs/expression"}}
	case kindLimit:
		return obj{{"$ref", "#/$defs/limit"}}
	case kindDuration:
		return obj{{"$ref", "#/$defs/duration"}}
	case kindSize:
		return obj{{"$ref", "#/$defs/size"}}
	case kindStepID:
		return obj{{"$ref", "#/$defs/stepId"}}
	case kindEnv:
		return obj{{"$ref", "#/$defs/env"}}
	case kindForEach:
		return obj{{"oneOf", []any{obj{{"$ref", "#/$defs/expression"}}, obj{{"type", "array"}}}}}
	case kindCount:
		return positiveInteger()
	case kindBool:
		return obj{{"type", "boolean"}}
	case kindNumber:
		return obj{{"type", "number"}, {"minimum", 0}}
	case kindPositive:
		return obj{{"type", "number"}, {"exclusiveMinimum", 0}}
	case kindVars:
		return obj{{"type", "object"}, {"additionalProperties", scalarValue()}}
	case kindMapping:
		return obj{{"type", "object"}}
	}
	o := obj{{"type", "string"}}
	if pattern != "" {
		o = append(o, member{"pattern", pattern})
	}
	return o
}

func positiveInteger() obj { return obj{{"type", "integer"}, {"minimum", 1}} }

// scalarValue is the schema of a value written as a string, number or boolean.
func scalarValue() obj { return obj{{"type", []string{"string", "number", "boolean"}}} }

// obj is a JSON object that keeps its members in order.
type obj []member

type member struct {
	key string
	val any
}

func (o obj) has(key string) bool {
	for _, m := range o {
		if m.key == key {
			return true
		}
	}
	return false
}

// MarshalJSON encodes the members in order.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(m.val)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal encodes v as JSON, leaving <, > and & as they are.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
