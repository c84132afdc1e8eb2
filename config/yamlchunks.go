package config

import (
	"bytes"
	"errors"
	"io"
	"regexp"

	"go.yaml.in/yaml/v3"
)

// A large YAML workflow's steps are parsed a slice of items at a time.
// yaml.v3 builds a document's whole tree before anything reads it: for
// 20,000 steps some 17 MB, the peak of a run's memory. When the file's
// top-level steps are a plain block list, the rest of the file is
// parsed alone (the steps' lines left blank, so that every line keeps
// its number) and the list is split at its items' lines into parts of
// some hundred items, each parsed when the decoder reaches it, its nodes'
// lines moved to where they are in the file. Every part is parsed once
// beforehand and let go, so that a part that does not parse alone (an
// alias to an anchor elsewhere, a split that a quoted scalar spans) or
// a file whose format detection must read its steps sends the whole
// file the ordinary way: the model and diagnostics are the same either
// way (TestChunkedParseIsTheSame).

// chunking says from which size a YAML workflow's steps are parsed in
// parts, and how many items a part has; a file whose list has fewer
// than two parts' items is parsed whole.
type chunking struct {
	minBytes, items int
}

// defaultChunks parses the steps of files from 256 KiB (some 8,000
// plain steps) in parts of 256 items.
var defaultChunks = chunking{minBytes: 256 << 10, items: 256}

// stepsKeyLine is a top-level steps key whose value is a block.
var stepsKeyLine = regexp.MustCompile(`^steps:[ \t]*(#.*)?\r?$`)

// lazySteps is the top-level steps of a file parsed in parts.
type lazySteps struct {
	src *source
	// stub stands for the list in the tree of the rest of the file.
	stub *yaml.Node
	// parts are the byte ranges of the parts and the line each starts
	// on (0-based).
	parts []chunk
}

type chunk struct {
	start, end, line int
}

// each calls f with every item of the list, in order, parsing one part
// at a time, until f returns false.
func (l *lazySteps) each(f func(n *yaml.Node) bool) {
	for _, c := range l.parts {
		seq, err := parseChunk(l.src.data[c.start:c.end], c.line)
		if err != nil {
			// Every part parsed before decoding began.
			panic("config: a part of the steps no longer parses: " + err.Error())
		}
		for i, item := range seq.Content {
			if !f(item) {
				return
			}
			seq.Content[i] = nil
		}
	}
}

// parseChunk parses a part of the list, starting on line (0-based) of
// the file, into its sequence node with the file's line numbers.
func parseChunk(b []byte, line int) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one document")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode {
		return nil, errors.New("not a list")
	}
	seq := doc.Content[0]
	shiftLines(seq, line)
	return seq, nil
}

// shiftLines adds by to the line of n and of every node under it.
func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

// chunkedRoot returns the root of src's tree with its top-level steps
// standing for the list parsed in parts, or false when the file is not
// one whose steps can be (see above).
func chunkedRoot(src *source, per int) (*yaml.Node, *lazySteps, bool) {
	data, lines := src.data, src.lines
	if otherBreak(data) {
		return nil, nil, false
	}
	text := func(i int) []byte {
		end := len(data)
		if i+1 < len(lines) {
			end = lines[i+1]
		}
		return bytes.TrimRight(data[lines[i]:end], "\n")
	}
	key := -1
	for i := range lines {
		if t := text(i); len(t) >= 6 && t[0] == 's' && stepsKeyLine.Match(t) {
			if key >= 0 {
				return nil, nil, false
			}
			key = i
		}
	}
	if key < 0 {
		return nil, nil, false
	}
	// The list's lines run to the next line that starts a key of the
	// top level, or to the end.
	indent, end := -1, len(lines)
	var starts []int
	for i := key + 1; i < len(lines); i++ {
		t := text(i)
		trimmed := bytes.TrimLeft(t, " ")
		n := len(t) - len(trimmed)
		if len(trimmed) == 0 || trimmed[0] == '#' || trimmed[0] == '\r' {
			continue
		}
		if bytes.IndexByte(t[:n], '\t') >= 0 || trimmed[0] == '\t' {
			return nil, nil, false
		}
		item := trimmed[0] == '-' && (len(trimmed) == 1 || trimmed[1] == ' ' || trimmed[1] == '\r')
		if indent < 0 {
			if !item {
				return nil, nil, false
			}
			indent = n
		}
		switch {
		case n == indent && item:
			starts = append(starts, i)
		case n > indent:
		case n == 0 && !item:
			end = i
		default:
			return nil, nil, false
		}
		if end < len(lines) {
			break
		}
	}
	if per < 1 || len(starts) < 2*per {
		return nil, nil, false
	}
	lineStart := func(i int) int {
		if i >= len(lines) {
			return len(data)
		}
		return lines[i]
	}
	// The rest of the file, the list's lines left blank.
	head := make([]byte, 0, lineStart(key+1)+(end-key-1)+len(data)-lineStart(end))
	head = append(head, data[:lineStart(key+1)]...)
	head = append(head, bytes.Repeat([]byte{'\n'}, end-key-1)...)
	head = append(head, data[lineStart(end):]...)
	dec := yaml.NewDecoder(bytes.NewReader(head))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, false
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, nil, false
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, false
	}
	root := doc.Content[0]
	l := &lazySteps{src: src, stub: &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: starts[0] + 1, Column: indent + 1}}
	found, other := false, false
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch k := root.Content[i]; {
		case k.Kind == yaml.ScalarNode && k.Value == "steps" && k.Line == key+1:
			found = true
			root.Content[i+1] = l.stub
		case k.Value != "name" && k.Value != "description":
			other = true
		}
	}
	if !found {
		return nil, nil, false
	}
	for p := 0; p < len(starts); p += per {
		c := chunk{start: lineStart(starts[p]), end: lineStart(end), line: starts[p]}
		if q := p + per; q < len(starts) {
			c.end = lineStart(starts[q])
		}
		l.parts = append(l.parts, c)
	}
	// Every part must parse alone into as many items as it has lines
	// that start one, each on its line. And the format is detected
	// from the steps when the file has no other key: a part must show
	// the file is flow's (an item with a key agent_orchestrator has
	// not), else the whole file is read the ordinary way.
	flows := other
	k := 0
	for _, c := range l.parts {
		seq, err := parseChunk(data[c.start:c.end], c.line)
		if err != nil {
			return nil, nil, false
		}
		for _, item := range seq.Content {
			if k >= len(starts) || item.Line != starts[k]+1 {
				return nil, nil, false
			}
			k++
			if !flows {
				flows = notOrchestratorStep(item)
			}
		}
	}
	if k != len(starts) || !flows {
		return nil, nil, false
	}
	return root, l, true
}

// otherBreak reports whether data holds a line break of YAML's other
// than \n and \r\n (a lone \r, NEL, LS, PS): the parts are split at
// \n, and their lines counted so.
func otherBreak(data []byte) bool {
	for rest := data; ; {
		i := bytes.IndexByte(rest, '\r')
		if i < 0 {
			break
		}
		if i+1 == len(rest) || rest[i+1] != '\n' {
			return true
		}
		rest = rest[i+2:]
	}
	return bytes.Contains(data, []byte("\u0085")) || bytes.Contains(data, []byte("\u2028")) || bytes.Contains(data, []byte("\u2029"))
}

// notOrchestratorStep reports whether item is no step of
// agent_orchestrator's format: a file with one is flow's (detectRoot).
func notOrchestratorStep(item *yaml.Node) bool {
	item = resolve(item)
	if item.Kind != yaml.MappingNode {
		return true
	}
	for i := 0; i+1 < len(item.Content); i += 2 {
		if _, known := orchStepTable.yIndex[item.Content[i].Value]; !known {
			return true
		}
	}
	return false
}
