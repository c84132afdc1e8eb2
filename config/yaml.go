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

// decodeYAML decodes a YAML workflow; it returns nil when the file is
// not a YAML mapping at all.
func decodeYAML(src *source, d *diags) *rawWorkflow {
	y := &yamlDecoder{src: src, d: d}
	dec := yaml.NewDecoder(bytes.NewReader(src.data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		y.syntaxError(err)
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		y.syntaxError(err)
		return nil
	default:
		d.errorf(y.pos(&next), "a second YAML document: a workflow file holds one document (remove this ---)")
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		d.errorf(Pos{File: src.name, Line: 1, Col: 1}, "empty workflow file")
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		d.errorf(y.pos(root), "a workflow must be a mapping of keys, got %s", kindName(root))
		return nil
	}
	w := &rawWorkflow{src: src}
	y.mapping(root, "workflow", workflowKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "name":
			w.name = y.str(key, v)
		case "description":
			w.description = y.str(key, v)
		case "vars":
			w.vars = y.strMap(key, v)
		case "defaults":
			y.mapping(v, key, defaultsKeys, func(key string, k, v *yaml.Node) {
				switch key {
				case "max_attempts":
					w.defaults.maxAttempts = y.str(key, v)
				case "max_iterations":
					w.defaults.maxIterations = y.str(key, v)
				case "timeout":
					w.defaults.timeout = y.str(key, v)
				case "idle_timeout":
					w.defaults.idleTimeout = y.str(key, v)
				case "agent":
					w.defaults.agent = y.str(key, v)
				case "retry":
					w.defaults.retry = y.retry(v)
				case "prompt_limit":
					w.defaults.promptLimit = y.str(key, v)
				case "command_limit":
					w.defaults.commandLimit = y.str(key, v)
				case "report_limit":
					w.defaults.reportLimit = y.str(key, v)
				case "log_limit":
					w.defaults.logLimit = y.str(key, v)
				}
			})
		case "agents":
			y.mapping(v, key, nil, func(name string, k, v *yaml.Node) {
				a := &rawAgent{name: str{val: name, set: true, sp: y.span(k)}}
				y.mapping(v, "agent", agentKeys, func(key string, k, v *yaml.Node) {
					switch key {
					case "run":
						a.run = y.str(key, v)
					case "env":
						a.env = y.strMap(key, v)
					}
				})
				w.agents = append(w.agents, a)
			})
		case "steps":
			y.steps(w, v)
		case "secrets":
			w.secrets = []str{}
			y.list(v, key, func(n *yaml.Node) bool {
				if sv := y.str(key, n); sv.ok() {
					w.secrets = append(w.secrets, sv)
				}
				return true
			})
		case "max_parallel":
			w.maxParallel = y.str(key, v)
		case "cleanup":
			c := &rawCleanup{pos: y.pos(v)}
			y.mapping(v, key, cleanupKeys, func(key string, k, v *yaml.Node) {
				switch key {
				case "run":
					c.run = y.str(key, v)
				case "prompt":
					c.prompt = y.str(key, v)
				case "agent":
					c.agent = y.str(key, v)
				}
			})
			w.cleanup = c
		case "signals":
			y.mapping(v, key, signalsKeys, func(key string, k, v *yaml.Node) {
				switch key {
				case "done":
					w.signals.done = y.str(key, v)
				case "pass":
					w.signals.pass = y.str(key, v)
				case "fail":
					w.signals.fail = y.str(key, v)
				}
			})
		}
	})
	if !w.name.set {
		w.name.sp = y.span(root)
	}
	return w
}

// steps decodes the steps, stopping with an error at the first one over
// MaxSteps.
func (y *yamlDecoder) steps(w *rawWorkflow, v *yaml.Node) {
	count := 0
	y.list(v, "steps", func(n *yaml.Node) bool {
		if count++; count > MaxSteps {
			y.d.errorf(y.pos(resolve(n)), "too many steps: a workflow has at most %d", MaxSteps)
			w.tooManySteps = true
			return false
		}
		if s := y.step(n); s != nil {
			w.steps = append(w.steps, s)
		}
		return true
	})
}

func (y *yamlDecoder) step(n *yaml.Node) *rawStep {
	n = resolve(n)
	s := &rawStep{pos: y.pos(n)}
	if n.Kind != yaml.MappingNode {
		y.d.errorf(y.pos(n), "a step must be a mapping of keys, got %s", kindName(n))
		return nil
	}
	y.mapping(n, "step", stepKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "id":
			s.id = y.str(key, v)
			if s.id.set {
				s.pos = s.id.pos()
			}
		case "run":
			s.run = y.str(key, v)
		case "prompt":
			s.prompt = y.str(key, v)
		case "prompt_file":
			s.promptFile = y.str(key, v)
		case "agent":
			s.agent = y.str(key, v)
		case "human":
			h := &rawHuman{pos: y.pos(k)}
			y.mapping(v, key, humanKeys, func(key string, k, v *yaml.Node) {
				switch key {
				case "message":
					h.message = y.str(key, v)
				case "timeout":
					h.timeout = y.str(key, v)
				case "auto_approve":
					h.autoApprove = y.str(key, v)
				}
			})
			s.human = h
		case "needs":
			s.needsSet = true
			s.needsPos = y.pos(k)
			s.needs = []str{}
			if v = resolve(v); v.Kind == yaml.ScalarNode {
				if sv := y.str(key, v); sv.ok() {
					s.needs = append(s.needs, sv)
				}
				return
			}
			y.list(v, key, func(n *yaml.Node) bool {
				if sv := y.str(key, n); sv.ok() {
					s.needs = append(s.needs, sv)
				}
				return true
			})
		case "when":
			s.when = y.str(key, v)
		case "gate":
			g := &rawGate{pos: y.pos(k)}
			y.mapping(v, key, gateKeys, func(key string, k, v *yaml.Node) {
				switch key {
				case "pass":
					g.pass = y.str(key, v)
				case "fail":
					g.fail = y.str(key, v)
				case "check":
					g.check = y.str(key, v)
				case "loop_back_to":
					g.loopBackTo = y.str(key, v)
				case "max_iterations":
					g.maxIterations = y.str(key, v)
				}
			})
			s.gate = g
		case "loop_back_to":
			s.loopBackTo = y.str(key, v)
		case "max_attempts":
			s.maxAttempts = y.str(key, v)
		case "max_iterations":
			s.maxIterations = y.str(key, v)
		case "retry":
			s.retry = y.retry(v)
		case "retry_if":
			s.retryIf = y.str(key, v)
		case "timeout":
			s.timeout = y.str(key, v)
		case "idle_timeout":
			s.idleTimeout = y.str(key, v)
		case "artifacts":
			s.artifacts = []str{}
			y.list(v, key, func(n *yaml.Node) bool {
				if sv := y.str(key, n); sv.ok() {
					s.artifacts = append(s.artifacts, sv)
				}
				return true
			})
		case "env":
			s.env = y.strMap(key, v)
		}
	})
	return s
}

func (y *yamlDecoder) retry(v *yaml.Node) *rawRetry {
	r := &rawRetry{pos: y.pos(v)}
	y.mapping(v, "retry", retryKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "backoff":
			r.backoff = y.str(key, v)
		case "max_backoff":
			r.maxBackoff = y.str(key, v)
		case "jitter":
			r.jitter = y.str(key, v)
		}
	})
	return r
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
