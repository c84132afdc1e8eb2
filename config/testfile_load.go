package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/afero"
	"go.yaml.in/yaml/v3"

	"github.com/flow-run/flow/internal/event"
	"github.com/flow-run/flow/internal/suggest"
)

// The keys of a test file, level by level.
var (
	testFileKeys  = []string{"workflow", "defaults", "tests"}
	testKeys      = []string{"name", "vars", "files", "sessions", "checks", "human", "merges", "control", "expect"}
	mergeKeys     = []string{"status", "files", "reason"}
	outcomeKeys   = []string{"exit_code", "output", "report", "writes", "duration", "usage"}
	usageKeys     = []string{"tokens_in", "tokens_out", "tokens_cached", "cost_usd", "turns"}
	decisionKeys  = []string{"approved", "input", "reason"}
	expectKeys    = []string{"exit_code", "status", "path", "path_contains", "steps", "files", "prompt_contains"}
	stepWantKeys  = []string{"status", "attempts", "iteration", "verdict", "exit_code", "last_error"}
	runStatusKeys = []string{"pending", "running", "paused", "waiting_on_human", "completed", "failed", "interrupted", "budget_exceeded"}
)

// IsTestFile reports whether path names a workflow test file
// (*.test.yaml, *.test.yml or *.test.hcl).
func IsTestFile(path string) bool {
	base := strings.ToLower(filepath.Base(path))
	return strings.HasSuffix(base, ".test.yaml") || strings.HasSuffix(base, ".test.yml") || strings.HasSuffix(base, ".test.hcl")
}

// isHCLTestFile reports whether path names an HCL test file.
func isHCLTestFile(path string) bool {
	return strings.HasSuffix(strings.ToLower(path), ".hcl")
}

// LoadTests reads the workflow test file at path through fs, and the
// workflow it names (relative to the test file's directory). An invalid
// test file yields a Diagnostics holding every problem found, sorted by
// position — those of an invalid workflow included, in the workflow's
// file — with a did-you-mean for unknown keys and steps. A file that
// cannot be read yields an ordinary error wrapping the cause. A
// *.test.hcl file is HCL (test "name" { ... } blocks) and decodes to the
// same model as its YAML twin.
func LoadTests(fs afero.Fs, path string) (*TestFile, error) {
	return LoadTestsAs(fs, path, "")
}

// LoadTestsAs is LoadTests with the workflow read in format (FormatFlow
// or FormatOrchestrator; "" detects it).
func LoadTestsAs(fs afero.Fs, path, format string) (*TestFile, error) {
	if !IsTestFile(path) {
		return nil, fmt.Errorf("load tests %s: want a *.test.yaml or *.test.hcl file", path)
	}
	data, err := readWorkflow(fs, path)
	if err != nil {
		return nil, fmt.Errorf("load tests: %w", err)
	}
	return parseTests(fs, path, data, format)
}

// ParseTests decodes and checks a test file from its bytes, loading the
// workflow it names through fs; the format follows path's extension (see
// LoadTests).
func ParseTests(fs afero.Fs, path string, data []byte) (*TestFile, error) {
	return parseTests(fs, path, data, "")
}

// parseTests is ParseTests with the workflow read in format.
func parseTests(fs afero.Fs, path string, data []byte, format string) (*TestFile, error) {
	src := newSource(path, data)
	d := &diags{}
	t := &testDecoder{y: &yamlDecoder{src: src, d: d}, tf: &TestFile{File: path, Source: data}, format: format}
	if !invalidUTF8(src, d) {
		var root *yaml.Node
		if isHCLTestFile(path) {
			t.hcl = true
			root = t.hclRoot()
		} else {
			root = t.yamlRoot()
		}
		if root != nil {
			t.decode(fs, root)
		}
	}
	if len(d.list) > 0 {
		d.list.sort()
		return nil, d.list
	}
	return t.tf, nil
}

// testDecoder walks the node tree of a test file.
type testDecoder struct {
	y  *yamlDecoder
	tf *TestFile
	// refs are the step names the tests use, checked once the workflow
	// is loaded.
	refs []stepRef
	vars []kv
	// hcl is set for an HCL test file, whose tree was built from HCL;
	// badWorkflow when its workflow attribute was not a literal.
	hcl, badWorkflow bool
	// badTests is set when HCL test blocks were written but none stood.
	badTests bool
	// format is the format the workflow is read in ("" detects it).
	format string
}

// stepRef is a step named in a test, and what kind of step it must be.
type stepRef struct {
	name string
	pos  Pos
	// want is "", "session" (not a human step), "check" (a step with
	// gate.check) or "human".
	want string
}

// yamlRoot parses a YAML test file into its root mapping; it returns nil
// when the file is not one.
func (t *testDecoder) yamlRoot() *yaml.Node {
	y := t.y
	dec := yaml.NewDecoder(bytes.NewReader(y.src.data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		y.syntaxError(err)
		return nil
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		y.d.errorf(y.pos(&next), "a second YAML document: a test file holds one document (remove this ---)")
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		y.d.errorf(Pos{File: y.src.name, Line: 1, Col: 1}, "empty test file")
		return nil
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		y.d.errorf(y.pos(root), "a test file must be a mapping of keys, got %s", kindName(root))
		return nil
	}
	return root
}

// decode reads the root mapping of a test file, YAML or built from HCL.
func (t *testDecoder) decode(fs afero.Fs, root *yaml.Node) {
	y := t.y
	start := Pos{File: y.src.name, Line: 1, Col: 1}
	var wfPath str
	var hasTests bool
	y.mapping(root, "test file", testFileKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "workflow":
			wfPath = y.str("workflow", v)
		case "defaults":
			if o, ok := t.outcome("defaults", resolve(v)); ok {
				t.tf.Default = o
			}
		case "tests":
			hasTests = true
			y.list(v, "tests", func(n *yaml.Node) bool {
				t.test(resolve(n))
				return true
			})
		}
	})
	switch {
	case t.badWorkflow:
	case !wfPath.set && t.hcl:
		y.d.errorf(start, "missing workflow = \"...\": the workflow file the tests run, relative to this file")
	case !wfPath.set:
		y.d.errorf(start, "missing key \"workflow\": the workflow file the tests run, relative to this file")
	}
	switch {
	case (hasTests && len(t.tf.Tests) > 0) || t.badTests:
	case t.hcl:
		y.d.errorf(start, "no tests: add a test \"name\" { ... } block")
	default:
		y.d.errorf(start, "no tests: add a list under \"tests\"")
	}
	if !wfPath.ok() {
		return
	}
	t.loadWorkflow(fs, wfPath)
}

// loadWorkflow loads the workflow of the tests and checks the steps and
// vars they name against it.
func (t *testDecoder) loadWorkflow(fs afero.Fs, p str) {
	y := t.y
	path := p.val
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(t.tf.File), path)
	}
	t.tf.WorkflowPath = path
	if IsTestFile(path) {
		y.d.errorf(p.pos(), "workflow: %s is a test file, not a workflow", p.val)
		return
	}
	wf, err := LoadWith(fs, path, Options{Format: t.format})
	var ds Diagnostics
	switch {
	case errors.As(err, &ds):
		y.d.errorf(p.pos(), "workflow: %s is not a valid workflow (%d %s, reported in it)", p.val, len(ds), plural(len(ds), "problem", "problems"))
		y.d.list = append(y.d.list, ds...)
		return
	case err != nil:
		y.d.errorf(p.pos(), "workflow: %v", err)
		return
	}
	t.tf.Workflow = wf
	all := wf.AllSteps()
	ids := make([]string, len(all))
	for i, s := range all {
		ids[i] = s.ID
	}
	for _, r := range t.refs {
		if r.want == "merge" {
			t.checkMergeRef(wf, r)
			continue
		}
		s := wf.Step(r.name)
		if strings.ContainsAny(r.name, "[].") {
			// An instance of a body step for one item: loop[item].step.
			k, err := event.ParseStepKey(r.name)
			if err != nil {
				y.d.errorf(r.pos, "%v", err)
				continue
			}
			s = wf.Step(k.Step)
			if l := wf.Step(k.Loop); l == nil || l.ForEach == nil || s == nil || s.Loop != k.Loop {
				y.d.errorf(r.pos, "%q is not an instance of a step of a for_each loop's body (loop[item].step)", r.name)
				continue
			}
		}
		switch {
		case s == nil:
			y.d.unknown(r.pos, "step", r.name, ids)
		case s.Kind == KindLoop && r.want != "":
			y.d.errorf(r.pos, "step %q is a for_each loop: script the steps of its body", r.name)
		case s.Loop != "" && r.want == "" && !strings.Contains(r.name, "["):
			y.d.errorf(r.pos, "step %q runs once per item of loop %q: name an instance, %s[KEY].%s", r.name, s.Loop, s.Loop, r.name)
		case r.want == "session" && s.Kind == KindHuman:
			y.d.errorf(r.pos, "sessions: step %q is a human step: script its decisions under human", r.name)
		case r.want == "human" && s.Kind != KindHuman:
			y.d.errorf(r.pos, "human: step %q is not a human step", r.name)
		case r.want == "check" && (s.Gate == nil || s.Gate.Check == nil):
			y.d.errorf(r.pos, "checks: step %q has no gate.check", r.name)
		}
	}
	for _, v := range t.vars {
		if _, ok := wf.Vars[v.key]; !ok {
			y.d.unknown(v.keyPos, "var", v.key, wf.VarOrder)
		}
	}
}

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}

// test decodes one entry of tests.
func (t *testDecoder) test(n *yaml.Node) {
	y := t.y
	if n.Kind != yaml.MappingNode {
		y.d.errorf(y.pos(n), "a test must be a mapping of keys, got %s", kindName(n))
		return
	}
	wt := &WorkflowTest{Pos: y.pos(n), Vars: map[string]string{}, Sessions: map[string][]Outcome{},
		Checks: map[string][]Outcome{}, Human: map[string][]Decision{}, Control: map[string][]TestControl{}, Merges: map[string][]MergeOutcome{}}
	y.mapping(n, "test", testKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "name":
			wt.Name = y.str("name", v).val
		case "vars":
			for _, e := range y.strMap("vars", v) {
				wt.Vars[e.key] = e.val.val
				t.vars = append(t.vars, e)
			}
		case "files":
			wt.Files = t.files("files", v)
		case "sessions":
			t.outcomes("sessions", "session", v, wt.Sessions)
		case "checks":
			t.outcomes("checks", "check", v, wt.Checks)
		case "human":
			t.decisions(v, wt.Human)
		case "merges":
			t.merges(v, wt.Merges)
		case "control":
			t.control(v, wt.Control)
		case "expect":
			t.expect(v, &wt.Expect)
		}
	})
	if wt.Name == "" {
		y.d.errorf(wt.Pos, "a test needs a name")
	}
	for _, o := range t.tf.Tests {
		if o.Name == wt.Name && wt.Name != "" {
			y.d.errorf(wt.Pos, "a second test named %q (the first is at line %d)", wt.Name, o.Pos.Line)
		}
	}
	t.tf.Tests = append(t.tf.Tests, wt)
}

// files reads a mapping of relative paths to contents.
func (t *testDecoder) files(what string, n *yaml.Node) []TestFileEntry {
	out := []TestFileEntry{}
	for _, e := range t.y.strMap(what, n) {
		clean := filepath.ToSlash(filepath.Clean(e.key))
		if filepath.IsAbs(e.key) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
			t.y.d.errorf(e.keyPos, "%s: %q is not a path inside the repository", what, e.key)
			continue
		}
		out = append(out, TestFileEntry{Path: clean, Content: e.val.val, Pos: e.keyPos})
	}
	return out
}

// steps reads a mapping of step ids to values, noting each step named.
func (t *testDecoder) steps(what, want string, n *yaml.Node, f func(id string, pos Pos, v *yaml.Node)) {
	t.y.mapping(n, what, nil, func(key string, k, v *yaml.Node) {
		pos := t.y.pos(k)
		t.refs = append(t.refs, stepRef{name: key, pos: pos, want: want})
		f(key, pos, v)
	})
}

// oneOrList calls f with n's items, or with n itself when it is a
// mapping: one outcome or decision, or a list of them.
func (t *testDecoder) oneOrList(what string, n *yaml.Node, f func(n *yaml.Node)) {
	if n = resolve(n); n.Kind == yaml.MappingNode {
		f(n)
		return
	}
	t.y.list(n, what, func(item *yaml.Node) bool {
		f(resolve(item))
		return true
	})
}

func (t *testDecoder) outcomes(what, want string, n *yaml.Node, dst map[string][]Outcome) {
	t.steps(what, want, n, func(id string, _ Pos, v *yaml.Node) {
		list := []Outcome{}
		t.oneOrList(what+"."+id, v, func(n *yaml.Node) {
			if o, ok := t.outcome(what+"."+id, n); ok {
				list = append(list, o)
			}
		})
		dst[id] = list
	})
}

func (t *testDecoder) outcome(what string, n *yaml.Node) (Outcome, bool) {
	y := t.y
	o := Outcome{Pos: y.pos(n)}
	if n.Kind != yaml.MappingNode {
		y.d.errorf(o.Pos, "%s: an outcome must be a mapping of keys, got %s", what, kindName(n))
		return o, false
	}
	y.mapping(n, what, outcomeKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "exit_code":
			o.ExitCode = t.int(what+".exit_code", v)
		case "output":
			o.Output = y.str(what+".output", v).val
		case "report":
			o.Report = t.object(what+".report", v)
		case "writes":
			o.Writes = t.files(what+".writes", v)
		case "usage":
			o.Usage = t.usage(what+".usage", v)
		case "duration":
			s := y.str(what+".duration", v)
			if !s.ok() {
				return
			}
			d, err := time.ParseDuration(s.val)
			if err != nil || d < 0 {
				y.d.errorf(s.pos(), "%s.duration: %q is not a duration (like 90s or 5m)", what, s.val)
			}
			o.Duration = d
		}
	})
	return o, true
}

// usage reads what a simulated preset session reports it used.
func (t *testDecoder) usage(what string, n *yaml.Node) *OutcomeUsage {
	u := &OutcomeUsage{}
	t.y.mapping(n, what, usageKeys, func(key string, _, v *yaml.Node) {
		if key == "cost_usd" {
			s := t.y.str(what+".cost_usd", v)
			if !s.ok() {
				return
			}
			f, err := strconv.ParseFloat(s.val, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
				t.y.d.errorf(s.pos(), "%s.cost_usd: want a number of at least 0, got %q", what, s.val)
			}
			u.CostUSD = f
			return
		}
		n := t.int(what+"."+key, v)
		if n < 0 {
			t.y.d.errorf(t.y.pos(v), "%s.%s: want at least 0, got %d", what, key, n)
		}
		switch key {
		case "tokens_in":
			u.TokensIn = int64(n)
		case "tokens_out":
			u.TokensOut = int64(n)
		case "tokens_cached":
			u.TokensCached = int64(n)
		case "turns":
			u.Turns = n
		}
	})
	return u
}

// controlStates are the states a test may script, as the commands
// that set them are named.
var controlStates = []string{"pause", "continue", "run_once", "cleanup"}

// control reads control: {step: state, or [state, ...]}.
func (t *testDecoder) control(n *yaml.Node, dst map[string][]TestControl) {
	y := t.y
	t.steps("control", "session", n, func(id string, _ Pos, v *yaml.Node) {
		var list []TestControl
		add := func(n *yaml.Node) {
			s := y.str("control."+id, n)
			if !slices.Contains(controlStates, s.val) {
				msg := fmt.Sprintf("control.%s: unknown state %q; want one of %s", id, s.val, strings.Join(controlStates, ", "))
				if c, ok := suggest.Closest(s.val, controlStates); ok {
					msg += fmt.Sprintf(" (did you mean %q?)", c)
				}
				y.d.errorf(s.pos(), "%s", msg)
				return
			}
			list = append(list, TestControl{State: s.val, Pos: s.pos()})
		}
		if v = resolve(v); v.Kind == yaml.SequenceNode {
			y.list(v, "control."+id, func(item *yaml.Node) bool { add(item); return true })
		} else {
			add(v)
		}
		dst[id] = list
	})
}

func (t *testDecoder) decisions(n *yaml.Node, dst map[string][]Decision) {
	y := t.y
	t.steps("human", "human", n, func(id string, _ Pos, v *yaml.Node) {
		list := []Decision{}
		what := "human." + id
		t.oneOrList(what, v, func(n *yaml.Node) {
			dc := Decision{Pos: y.pos(n)}
			if n.Kind != yaml.MappingNode {
				y.d.errorf(dc.Pos, "%s: a decision must be a mapping of keys, got %s", what, kindName(n))
				return
			}
			approved := false
			y.mapping(n, what, decisionKeys, func(key string, k, v *yaml.Node) {
				switch key {
				case "approved":
					approved = true
					dc.Approved = t.bool(what+".approved", v)
				case "input":
					if b := t.object(what+".input", v); b != nil {
						_ = json.Unmarshal(b, &dc.Input)
					}
				case "reason":
					dc.Reason = y.str(what+".reason", v).val
				}
			})
			if !approved {
				y.d.errorf(dc.Pos, "%s: a decision needs approved: true or false", what)
			}
			list = append(list, dc)
		})
		dst[id] = list
	})
}

func (t *testDecoder) expect(n *yaml.Node, e *Expect) {
	y := t.y
	y.mapping(n, "expect", expectKeys, func(key string, k, v *yaml.Node) {
		pos := y.pos(resolve(v))
		switch key {
		case "exit_code":
			e.ExitCode = &Want[int]{t.int("expect.exit_code", v), pos}
		case "status":
			s := y.str("expect.status", v)
			if s.ok() && !slices.Contains(runStatusKeys, s.val) {
				y.d.unknown(s.pos(), "run status", s.val, runStatusKeys)
			}
			e.Status = &Want[string]{s.val, pos}
		case "path", "path_contains":
			var ids []string
			y.list(v, "expect."+key, func(item *yaml.Node) bool {
				s := y.str("expect."+key, item)
				if s.ok() {
					ids = append(ids, s.val)
					t.refs = append(t.refs, stepRef{name: s.val, pos: s.pos()})
				}
				return true
			})
			if key == "path" {
				e.Path = &Want[[]string]{ids, pos}
			} else {
				e.PathContains = &Want[[]string]{ids, pos}
			}
		case "steps":
			t.steps("expect.steps", "", v, func(id string, pos Pos, v *yaml.Node) {
				e.Steps = append(e.Steps, t.stepExpect(id, pos, v))
			})
		case "files":
			e.Files = t.files("expect.files", v)
		case "prompt_contains":
			t.steps("expect.prompt_contains", "session", v, func(id string, pos Pos, v *yaml.Node) {
				s := y.str("expect.prompt_contains."+id, v)
				e.PromptContains = append(e.PromptContains, StepText{Step: id, Text: s.val, Pos: s.pos()})
			})
		}
	})
}

func (t *testDecoder) stepExpect(id string, pos Pos, n *yaml.Node) StepExpect {
	y := t.y
	se := StepExpect{Step: id, Pos: pos}
	what := "expect.steps." + id
	y.mapping(n, what, stepWantKeys, func(key string, k, v *yaml.Node) {
		p := y.pos(resolve(v))
		switch key {
		case "status":
			se.Status = &Want[string]{y.str(what+".status", v).val, p}
		case "verdict":
			se.Verdict = &Want[string]{y.str(what+".verdict", v).val, p}
		case "last_error":
			s := y.str(what+".last_error", v)
			if _, err := regexp.Compile(s.val); err != nil {
				y.d.errorf(s.pos(), "%s.last_error: not a regular expression: %v", what, err)
			}
			se.LastError = &Want[string]{s.val, p}
		case "attempts":
			se.Attempts = &Want[int]{t.int(what+".attempts", v), p}
		case "iteration":
			se.Iteration = &Want[int]{t.int(what+".iteration", v), p}
		case "exit_code":
			se.ExitCode = &Want[int]{t.int(what+".exit_code", v), p}
		}
	})
	return se
}

// int reads an integer.
func (t *testDecoder) int(what string, n *yaml.Node) int {
	s := t.y.str(what, n)
	if !s.ok() {
		return 0
	}
	v, err := strconv.Atoi(s.val)
	if err != nil {
		t.y.d.errorf(s.pos(), "%s: want a whole number, got %q", what, s.val)
	}
	return v
}

// bool reads true or false.
func (t *testDecoder) bool(what string, n *yaml.Node) bool {
	s := t.y.str(what, n)
	if !s.ok() {
		return false
	}
	v, err := strconv.ParseBool(s.val)
	if err != nil {
		t.y.d.errorf(s.pos(), "%s: want true or false, got %q", what, s.val)
	}
	return v
}

// object reads a mapping as a JSON object.
func (t *testDecoder) object(what string, n *yaml.Node) []byte {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		t.y.d.errorf(t.y.pos(n), "%s: want a mapping, got %s", what, kindName(n))
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		t.y.d.errorf(t.y.pos(n), "%s: %v", what, err)
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.y.d.errorf(t.y.pos(n), "%s: not a JSON object: %v", what, err)
		return nil
	}
	return b
}

// merges reads the scripted merges of items: loop[key] to one outcome
// or a list of them.
func (t *testDecoder) merges(n *yaml.Node, dst map[string][]MergeOutcome) {
	t.steps("merges", "merge", n, func(id string, _ Pos, v *yaml.Node) {
		list := []MergeOutcome{}
		t.oneOrList("merges."+id, v, func(n *yaml.Node) {
			y := t.y
			what := "merges." + id
			o := MergeOutcome{Pos: y.pos(n)}
			if n.Kind != yaml.MappingNode {
				y.d.errorf(o.Pos, "%s: a merge outcome must be a mapping of keys, got %s", what, kindName(n))
				return
			}
			y.mapping(n, what, mergeKeys, func(key string, _, v *yaml.Node) {
				switch key {
				case "status":
					s := y.str(what+".status", v)
					if s.ok() && !slices.Contains(MergeOutcomes, s.val) {
						y.d.unknown(s.pos(), "merge outcome", s.val, MergeOutcomes)
					}
					o.Status = s.val
				case "files":
					y.list(v, what+".files", func(n *yaml.Node) bool {
						if f := y.str(what+".files", n); f.ok() {
							o.Files = append(o.Files, f.val)
						}
						return true
					})
				case "reason":
					o.Reason = y.str(what+".reason", v).val
				}
			})
			if o.Status == "" {
				y.d.errorf(o.Pos, "%s: a merge outcome needs a status: one of %s", what, strings.Join(MergeOutcomes, ", "))
				return
			}
			list = append(list, o)
		})
		dst[id] = list
	})
}

// checkMergeRef checks that a scripted merge names an item, loop[key],
// of a loop whose items have worktrees and are merged.
func (t *testDecoder) checkMergeRef(wf *Workflow, r stepRef) {
	y := t.y
	i := strings.IndexByte(r.name, '[')
	if i <= 0 || !strings.HasSuffix(r.name, "]") || i == len(r.name)-2 {
		y.d.errorf(r.pos, "merges: %q is not an item of a loop (loop[key])", r.name)
		return
	}
	loop := wf.Step(r.name[:i])
	switch {
	case loop == nil || loop.ForEach == nil:
		var loops []string
		for _, s := range wf.Steps {
			if s.ForEach != nil {
				loops = append(loops, s.ID)
			}
		}
		y.d.unknown(r.pos, "loop", r.name[:i], loops)
	case loop.ItemMerge() == nil || loop.ItemMerge().Mode != MergeAuto:
		y.d.errorf(r.pos, "merges: the items of loop %q are not merged (it needs workspace: worktree, and merge mode auto)", loop.ID)
	}
}
