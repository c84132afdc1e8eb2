package config

import (
	"fmt"
	"slices"
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

// The attributes and blocks of each HCL body; the attribute and block
// names are the keys of the YAML form.
var (
	hclWorkflowAttrs = []string{"name", "description", "vars", "max_parallel", "secrets"}
	hclWorkflowBlock = []string{"defaults", "agent", "step", "cleanup", "signals"}
	hclDefaultsAttrs = []string{"max_attempts", "max_iterations", "timeout", "idle_timeout", "agent", "prompt_limit", "command_limit", "report_limit", "log_limit"}
	hclStepAttrs     = []string{"run", "prompt", "prompt_file", "agent", "needs", "when", "loop_back_to", "max_attempts", "max_iterations", "retry_if", "timeout", "idle_timeout", "artifacts", "env"}
	hclStepBlocks    = []string{"human", "gate", "retry"}
)

// decodeHCL decodes an HCL workflow; it returns nil when the file does
// not parse.
func decodeHCL(src *source, d *diags) *rawWorkflow {
	h := &hclDecoder{src: src, d: d}
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
	once, defOnce := map[string]bool{}, map[string]bool{}
	steps := 0
	h.body(body, hclWorkflowAttrs, hclWorkflowBlock, func(a *hclsyntax.Attribute) {
		switch a.Name {
		case "name":
			w.name = h.str(a.Name, a.Expr)
		case "description":
			w.description = h.str(a.Name, a.Expr)
		case "vars":
			w.vars = h.strMap(a.Name, a.Expr)
		case "max_parallel":
			w.maxParallel = h.str(a.Name, a.Expr)
		case "secrets":
			if _, ok := a.Expr.(*hclsyntax.TupleConsExpr); !ok {
				h.d.errorf(h.pos(a.Expr.Range()), "secrets: want a list [\"NAME\", ...]")
				return
			}
			w.secrets = h.list(a.Name, a.Expr)
		}
	}, func(b *hclsyntax.Block) {
		switch b.Type {
		case "defaults":
			if !h.labels(b, 0) || h.repeated(b, once) {
				return
			}
			h.body(b.Body, hclDefaultsAttrs, []string{"retry"}, func(a *hclsyntax.Attribute) {
				switch a.Name {
				case "max_attempts":
					w.defaults.maxAttempts = h.str(a.Name, a.Expr)
				case "max_iterations":
					w.defaults.maxIterations = h.str(a.Name, a.Expr)
				case "timeout":
					w.defaults.timeout = h.str(a.Name, a.Expr)
				case "idle_timeout":
					w.defaults.idleTimeout = h.str(a.Name, a.Expr)
				case "agent":
					w.defaults.agent = h.str(a.Name, a.Expr)
				case "prompt_limit":
					w.defaults.promptLimit = h.str(a.Name, a.Expr)
				case "command_limit":
					w.defaults.commandLimit = h.str(a.Name, a.Expr)
				case "report_limit":
					w.defaults.reportLimit = h.str(a.Name, a.Expr)
				case "log_limit":
					w.defaults.logLimit = h.str(a.Name, a.Expr)
				}
			}, func(b *hclsyntax.Block) {
				if h.labels(b, 0) && !h.repeated(b, defOnce) {
					w.defaults.retry = h.retry(b)
				}
			})
		case "agent":
			if !h.labels(b, 1) {
				return
			}
			a := &rawAgent{name: str{val: b.Labels[0], set: true, sp: span{src: src, off: b.LabelRanges[0].Start.Byte, style: styleOpaque}}}
			h.body(b.Body, agentKeys, nil, func(at *hclsyntax.Attribute) {
				switch at.Name {
				case "run":
					a.run = h.str(at.Name, at.Expr)
				case "env":
					a.env = h.strMap(at.Name, at.Expr)
				}
			}, nil)
			w.agents = append(w.agents, a)
		case "step":
			// Past the cap, the rest of the steps are left undecoded.
			if steps++; steps == MaxSteps+1 {
				h.d.errorf(h.pos(b.TypeRange), "too many steps: a workflow has at most %d", MaxSteps)
				w.tooManySteps = true
			}
			if steps <= MaxSteps && h.labels(b, 1) {
				w.steps = append(w.steps, h.step(b))
			}
		case "cleanup":
			if !h.labels(b, 0) || h.repeated(b, once) {
				return
			}
			c := &rawCleanup{pos: h.pos(b.TypeRange)}
			h.body(b.Body, cleanupKeys, nil, func(a *hclsyntax.Attribute) {
				switch a.Name {
				case "run":
					c.run = h.str(a.Name, a.Expr)
				case "prompt":
					c.prompt = h.str(a.Name, a.Expr)
				case "agent":
					c.agent = h.str(a.Name, a.Expr)
				}
			}, nil)
			w.cleanup = c
		case "signals":
			if !h.labels(b, 0) || h.repeated(b, once) {
				return
			}
			h.body(b.Body, signalsKeys, nil, func(a *hclsyntax.Attribute) {
				switch a.Name {
				case "done":
					w.signals.done = h.str(a.Name, a.Expr)
				case "pass":
					w.signals.pass = h.str(a.Name, a.Expr)
				case "fail":
					w.signals.fail = h.str(a.Name, a.Expr)
				}
			}, nil)
		}
	})
	return w
}

func (h *hclDecoder) step(b *hclsyntax.Block) *rawStep {
	id := str{val: b.Labels[0], set: true, sp: span{src: h.src, off: b.LabelRanges[0].Start.Byte, style: styleOpaque}}
	s := &rawStep{id: id, pos: id.pos()}
	once := map[string]bool{}
	h.body(b.Body, hclStepAttrs, hclStepBlocks, func(a *hclsyntax.Attribute) {
		switch a.Name {
		case "run":
			s.run = h.str(a.Name, a.Expr)
		case "prompt":
			s.prompt = h.str(a.Name, a.Expr)
		case "prompt_file":
			s.promptFile = h.str(a.Name, a.Expr)
		case "agent":
			s.agent = h.str(a.Name, a.Expr)
		case "needs":
			s.needsSet = true
			s.needsPos = h.pos(a.NameRange)
			s.needs = h.list(a.Name, a.Expr)
		case "when":
			s.when = h.str(a.Name, a.Expr)
		case "loop_back_to":
			s.loopBackTo = h.str(a.Name, a.Expr)
		case "max_attempts":
			s.maxAttempts = h.str(a.Name, a.Expr)
		case "max_iterations":
			s.maxIterations = h.str(a.Name, a.Expr)
		case "retry_if":
			s.retryIf = h.str(a.Name, a.Expr)
		case "timeout":
			s.timeout = h.str(a.Name, a.Expr)
		case "idle_timeout":
			s.idleTimeout = h.str(a.Name, a.Expr)
		case "artifacts":
			s.artifacts = h.list(a.Name, a.Expr)
		case "env":
			s.env = h.strMap(a.Name, a.Expr)
		}
	}, func(b *hclsyntax.Block) {
		if !h.labels(b, 0) {
			return
		}
		switch b.Type {
		case "human":
			if h.repeated(b, once) {
				return
			}
			hu := &rawHuman{pos: h.pos(b.TypeRange)}
			h.body(b.Body, humanKeys, nil, func(a *hclsyntax.Attribute) {
				switch a.Name {
				case "message":
					hu.message = h.str(a.Name, a.Expr)
				case "timeout":
					hu.timeout = h.str(a.Name, a.Expr)
				case "auto_approve":
					hu.autoApprove = h.str(a.Name, a.Expr)
				}
			}, nil)
			s.human = hu
		case "gate":
			if h.repeated(b, once) {
				return
			}
			g := &rawGate{pos: h.pos(b.TypeRange)}
			h.body(b.Body, gateKeys, nil, func(a *hclsyntax.Attribute) {
				switch a.Name {
				case "pass":
					g.pass = h.str(a.Name, a.Expr)
				case "fail":
					g.fail = h.str(a.Name, a.Expr)
				case "check":
					g.check = h.str(a.Name, a.Expr)
				case "loop_back_to":
					g.loopBackTo = h.str(a.Name, a.Expr)
				case "max_iterations":
					g.maxIterations = h.str(a.Name, a.Expr)
				}
			}, nil)
			s.gate = g
		case "retry":
			if !h.repeated(b, once) {
				s.retry = h.retry(b)
			}
		}
	})
	return s
}

func (h *hclDecoder) retry(b *hclsyntax.Block) *rawRetry {
	r := &rawRetry{pos: h.pos(b.TypeRange)}
	h.body(b.Body, retryKeys, nil, func(a *hclsyntax.Attribute) {
		switch a.Name {
		case "backoff":
			r.backoff = h.str(a.Name, a.Expr)
		case "max_backoff":
			r.maxBackoff = h.str(a.Name, a.Expr)
		case "jitter":
			r.jitter = h.str(a.Name, a.Expr)
		}
	}, nil)
	return r
}

// body calls fa for each attribute and fb for each block of b, in file
// order, reporting unknown names.
func (h *hclDecoder) body(b *hclsyntax.Body, attrs, blocks []string, fa func(*hclsyntax.Attribute), fb func(*hclsyntax.Block)) {
	known := slices.Concat(attrs, blocks)
	list := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		list = append(list, a)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].SrcRange.Start.Byte < list[j].SrcRange.Start.Byte })
	for _, a := range list {
		switch {
		case slices.Contains(attrs, a.Name):
			fa(a)
		case slices.Contains(blocks, a.Name):
			h.d.errorf(h.pos(a.NameRange), "%s is a block: write %s { ... }", a.Name, a.Name)
		default:
			h.d.unknown(h.pos(a.NameRange), "key", a.Name, known)
		}
	}
	for _, bl := range b.Blocks {
		switch {
		case slices.Contains(blocks, bl.Type):
			fb(bl)
		case slices.Contains(attrs, bl.Type):
			h.d.errorf(h.pos(bl.TypeRange), "%s is an argument: write %s = ...", bl.Type, bl.Type)
		default:
			h.d.unknown(h.pos(bl.TypeRange), "block", bl.Type, known)
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
		return str{val: v.AsBigFloat().Text('f', -1), set: true, sp: sp}
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
		h.d.addMessage(pos, "hcl: "+msg)
	}
}
