package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// What a session of a workflow read in agent_orchestrator's format is
// given and must give back (docs/agent-orchestrator.md, "Its run-time
// rules" and "A session's environment"): its environment, a prompt found
// by path when it starts, and a run report with the fields that format
// requires, written to $REPORT_PATH or printed between markers.

// ArtifactsDir is the directory of a run, under its run directory, that
// sessions of agent_orchestrator's format are given as $ARTIFACTS_DIR.
const ArtifactsDir = "artifacts"

// The lines between which a session may print its run report when it
// writes no report file.
const (
	reportBegin = "<<<RUN_REPORT_JSON"
	reportEnd   = "RUN_REPORT_JSON>>>"
)

// requiredReportFields are the fields agent_orchestrator's format
// requires of a run report.
var requiredReportFields = []string{"schema", "run_id", "step_id", "agent", "status", "started_at", "ended_at"}

// orchestrated reports whether the run's sessions follow
// agent_orchestrator's contract: a workflow read in its format, or one
// with compat: agent_orchestrator.
func (x *run) orchestrated() bool { return x.wf.Compat == config.CompatOrchestrator }

// findPrompt finds the prompt file of a step given by path, when its
// session starts: an absolute path as it is; else, in turn,
// <repo>/.agents/prompts/<base name>, the path against the workflow's
// directory, the path against the repository — agent_orchestrator's
// order. A place inside the repository is read there (a workflow in
// workflows/ names ../prompts/x.md), one inside the workflow's
// directory there, and one outside both is passed over. Each is read as
// a regular file inside its root, following no link out of it, at most
// limit bytes. A prompt found nowhere is an error naming every place
// tried.
func (x *run) findPrompt(path string, limit int64) (found string, text []byte, err error) {
	repo := x.opts.Repo
	wfDir := filepath.Dir(absPath(x.wf.File))
	var places []string
	if filepath.IsAbs(path) {
		places = []string{filepath.Clean(path)}
	} else {
		places = []string{
			filepath.Join(repo, ".agents", "prompts", filepath.Base(path)),
			filepath.Join(wfDir, path),
			filepath.Join(repo, path),
		}
	}
	var tried, outside []string
	for _, p := range places {
		if slices.Contains(tried, p) || slices.Contains(outside, p) {
			// The workflow's directory is the repository.
			continue
		}
		root := ""
		switch {
		case inside(repo, p):
			root = repo
		case inside(wfDir, p):
			root = wfDir
		default:
			outside = append(outside, p)
			continue
		}
		tried = append(tried, p)
		r, err := confine.NewRoot(x.r.FS, root)
		if err != nil {
			continue
		}
		b, err := r.ReadFile(p, limit)
		switch {
		case err == nil:
			return p, b, nil
		case errors.Is(err, fs.ErrNotExist):
			continue
		default:
			return "", nil, fmt.Errorf("read prompt %s: %w", p, err)
		}
	}
	if len(tried) == 0 {
		return "", nil, fmt.Errorf("prompt %s is outside the repository and the workflow's directory", path)
	}
	msg := fmt.Sprintf("prompt %s not found; looked in %s", path, strings.Join(tried, ", "))
	if len(outside) > 0 {
		msg += " (not in " + strings.Join(outside, ", ") + ": outside the repository and the workflow's directory)"
	}
	return "", nil, errors.New(msg)
}

// inside reports whether path lies in dir or is dir.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// orchestratorEnv is the environment agent_orchestrator gives a
// session: RUN_ID, STEP_ID (a looped step's own id for each of its
// items), AGENT_ID, REPO_DIR, PROMPT_PATH, REPORT_PATH,
// MANUAL_RESULT_PATH (empty but for a step that waits for its manual
// input), STEP_ATTEMPT, ARTIFACTS_DIR, STEP_MODEL (unset without a
// model), for each step it needs DEP_<STEP>_ARTIFACTS (its artifacts,
// absolute, joined by ',': of a loop, its last item's) and
// DEP_<STEP>_ARTIFACT_<i> (each, from 0), in a loop LOOP_<INDEX_VAR>
// and LOOP_<ITEM_VAR> (the item as JSON, as Python's json.dumps writes
// it), and with an ISSUE_NUMBER the ISSUE_MARKDOWN_PATH, _DIR and
// _FILENAME of gh_issue_<n>.md in the artifacts directory, unless given.
func (x *run) orchestratorEnv(s *config.Step, e sessionRun, promptPath string) []string {
	id := s.ID
	if s.Loop != "" && s.ID == s.Loop+"_item" {
		id = s.Loop
	}
	artifacts := filepath.Join(x.dir, ArtifactsDir)
	_ = x.r.FS.MkdirAll(artifacts, 0o755)
	manual := ""
	if s.Human != nil {
		manual = x.names.ManualInput(e.Step)
	}
	vars := []string{
		"RUN_ID=" + x.st.RunID,
		"STEP_ID=" + id,
		"AGENT_ID=" + s.Agent,
		"REPO_DIR=" + x.workDir(e.Step),
		"PROMPT_PATH=" + promptPath,
		"REPORT_PATH=" + e.SessionReport,
		"MANUAL_RESULT_PATH=" + manual,
		"STEP_ATTEMPT=" + strconv.Itoa(e.Attempt),
		"ARTIFACTS_DIR=" + artifacts,
	}
	if s.Model != "" {
		vars = append(vars, "STEP_MODEL="+s.Model)
	}
	// A looped step's needs are its loop's (agent_orchestrator's step
	// needs them), after any of its own inside the loop.
	type need struct {
		dep string
		key core.StepKey
	}
	var needs []need
	for _, dep := range s.Needs {
		key := core.Key(dep)
		if l := x.wf.LoopOf(dep); s.Loop != "" && l != nil && l.ID == s.Loop {
			key = siblingKey(e.Step, dep)
		}
		needs = append(needs, need{dep, key})
	}
	if loop := x.wf.LoopOf(s.ID); loop != nil {
		for _, dep := range loop.Needs {
			if !slices.Contains(s.Needs, dep) {
				needs = append(needs, need{dep, core.Key(dep)})
			}
		}
	}
	for _, n := range needs {
		dep, key := n.dep, x.lastItemKey(n.key)
		ds := x.st.Steps[key]
		if ds == nil {
			continue
		}
		name := envWord(dep)
		paths := make([]string, len(ds.Artifacts))
		for i, a := range ds.Artifacts {
			if !filepath.IsAbs(a) {
				a = filepath.Join(x.opts.Repo, a)
			}
			paths[i] = a
			vars = append(vars, fmt.Sprintf("DEP_%s_ARTIFACT_%d=%s", name, i, a))
		}
		vars = append(vars, "DEP_"+name+"_ARTIFACTS="+strings.Join(paths, ","))
	}
	if k, i, raw, ok := x.itemOf(e.Step); ok {
		if loop := x.wf.Step(k.Loop); loop != nil && loop.ForEach != nil {
			vars = append(vars, "LOOP_"+envWord(loop.ForEach.IndexAs)+"="+strconv.Itoa(i),
				"LOOP_"+envWord(loop.ForEach.As)+"="+pyJSON(raw))
		}
	}
	return append(vars, x.issueEnv(artifacts)...)
}

// lastItemKey is the key whose artifacts a step that needs key sees:
// key itself, or for a loop the last body step of its last item, whose
// artifacts agent_orchestrator's looped step holds once it is done.
func (x *run) lastItemKey(key core.StepKey) core.StepKey {
	loop := x.wf.Step(key.Step)
	ls := x.st.Steps[key]
	if key.IsInstance() || loop == nil || loop.ForEach == nil || len(loop.ForEach.Body) == 0 || ls == nil || len(ls.Items) == 0 {
		return key
	}
	body := loop.ForEach.Body
	return core.Instance(key.Step, ls.Items[len(ls.Items)-1].Key, body[len(body)-1].ID)
}

// issueEnv is ISSUE_MARKDOWN_FILENAME, _DIR and _PATH, naming
// gh_issue_<ISSUE_NUMBER>.md in the artifacts directory, for a session
// whose environment has an ISSUE_NUMBER (--issue-number, --env or
// flow's own); each one already there is left as it is.
func (x *run) issueEnv(artifacts string) []string {
	n, _ := x.baseEnv("ISSUE_NUMBER")
	if n == "" {
		return nil
	}
	file := "gh_issue_" + n + ".md"
	var out []string
	for _, kv := range [][2]string{
		{"ISSUE_MARKDOWN_FILENAME", file},
		{"ISSUE_MARKDOWN_DIR", artifacts},
		{"ISSUE_MARKDOWN_PATH", filepath.Join(artifacts, file)},
	} {
		if _, given := x.baseEnv(kv[0]); !given {
			out = append(out, kv[0]+"="+kv[1])
		}
	}
	return out
}

// baseEnv looks name up in what a session's environment starts from:
// --env's variables over flow's own.
func (x *run) baseEnv(name string) (string, bool) {
	inv := x.opts.Invocation.Env
	for i := len(inv) - 1; i >= 0; i-- {
		if k, v, _ := strings.Cut(inv[i], "="); k == name {
			return v, true
		}
	}
	v, ok := x.environ[name]
	return v, ok
}

// pyJSON writes a JSON value as Python's json.dumps does by default:
// ", " and ": " between items, non-ASCII escaped as \uXXXX. Objects
// come with their keys sorted (the record keeps no other order).
func pyJSON(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var b strings.Builder
	writePyJSON(&b, v)
	return b.String()
}

func writePyJSON(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		b.WriteString(v.String())
	case string:
		writePyString(b, v)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyJSON(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyString(b, k)
			b.WriteString(": ")
			writePyJSON(b, v[k])
		}
		b.WriteByte('}')
	}
}

// writePyString writes a JSON string as Python's json.dumps does.
func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
}

// siblingKey is the instance key of body step dep for the same item as
// the instance key, "loop[key].step" → "loop[key].dep".
func siblingKey(key core.StepKey, dep string) core.StepKey {
	if key.IsInstance() {
		return core.Instance(key.Loop, key.Item, dep)
	}
	return core.Key(dep)
}

// envWord makes a name a word of an environment variable's name:
// upper case, with every other character _.
func envWord(s string) string {
	b := []byte(strings.ToUpper(s))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// reportMarkers keeps, of a session's output, the last run report
// printed between a reportBegin and a reportEnd line, up to max bytes
// (a longer one is dropped, as if never printed).
type reportMarkers struct {
	max  int
	line []byte
	// cut is true when more than space was dropped from line: it is
	// then no marker, whatever it starts with.
	cut   bool
	in    bool
	over  bool
	cur   []byte
	found []byte
}

func (m *reportMarkers) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		// Outside a report only a line's start matters; inside, the
		// line up to the report's bound.
		room := len(reportEnd) + 8
		if m.in {
			room = m.max + len(reportEnd) + 8
		}
		k := min(max(room-len(m.line), 0), len(chunk))
		m.line = append(m.line, chunk[:k]...)
		if len(bytes.TrimSpace(chunk[k:])) > 0 {
			m.cut = true
		}
		if len(m.line) >= room && m.in {
			m.over = true
		}
		if i < 0 {
			break
		}
		m.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// endLine takes a whole line of output.
func (m *reportMarkers) endLine() {
	word := string(bytes.TrimSpace(m.line))
	if m.cut {
		word = ""
	}
	switch {
	case !m.in && word == reportBegin:
		m.in, m.over, m.cur = true, false, m.cur[:0]
	case m.in && word == reportEnd:
		m.in = false
		if !m.over {
			m.found = append(m.found[:0], m.cur...)
		}
	case m.in:
		if len(m.cur)+len(m.line) > m.max {
			m.over = true
		} else {
			m.cur = append(append(m.cur, m.line...), '\n')
		}
	}
	m.line, m.cut = m.line[:0], false
}

// report returns the last report printed whole, or nil, once the
// output has ended: a last line without a newline counts.
func (m *reportMarkers) report() []byte {
	if len(m.line) > 0 {
		m.endLine()
	}
	if len(bytes.TrimSpace(m.found)) == 0 {
		return nil
	}
	return m.found
}

// missingReportFields lists the fields agent_orchestrator's format
// requires that a report lacks.
func missingReportFields(raw map[string]any) []string {
	var out []string
	for _, f := range requiredReportFields {
		if v, ok := raw[f]; !ok || v == nil {
			out = append(out, f)
		}
	}
	return out
}

// orchestratorFacts applies, to a session of a workflow that follows
// agent_orchestrator's contract, the rules of its report: a report
// decides the session's outcome, the exit code only when there is none
// (its wrappers exit with the agent's code after writing a report that
// says COMPLETED); a report that does not match --schema is unreadable;
// and the cost a wrapper reports as the metric cost_usd is the
// session's, when flow measured none.
func (x *run) orchestratorFacts(f *core.SessionFacts, o *core.Outcome, report *record.Report) {
	if !x.orchestrated() || report == nil {
		return
	}
	if f.ReportErr == "" {
		f.ReportErr = x.schemaError(report)
	}
	if report.Status == "completed" && f.ReportErr == "" {
		f.ExitCode = 0
	}
	if o.Usage == nil {
		if c, err := strconv.ParseFloat(strings.TrimSpace(report.Metrics["cost_usd"]), 64); err == nil && c > 0 {
			o.Usage = &core.AgentUsage{CostUSD: c, Sessions: 1}
		}
	}
}

// sessionDir is the directory sessions run in: --workdir (checked to
// lie in the repository when the run was asked for), or the repository.
func (x *run) sessionDir() string {
	if w := x.opts.Invocation.Workdir; w != "" && inside(x.opts.Repo, w) {
		return w
	}
	return x.opts.Repo
}

// CompileReportSchema compiles the JSON Schema at path (--schema) that
// every run report is checked against. References to other documents
// are refused: the schema is read from its one file.
func CompileReportSchema(fsys afero.Fs, path string) (*jsonschema.Resolved, error) {
	b, err := confine.ReadFile(fsys, path, maxSchema, "/")
	if err != nil {
		return nil, fmt.Errorf("read report schema %s: %w", path, err)
	}
	var doc jsonschema.Schema
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("report schema %s: not a JSON Schema: %w", path, err)
	}
	// No loader: a reference to another document is refused.
	rs, err := doc.Resolve(&jsonschema.ResolveOptions{BaseURI: "file://" + filepath.ToSlash(path)})
	if err != nil {
		return nil, fmt.Errorf("report schema %s: %w", path, err)
	}
	return rs, nil
}

// maxSchema bounds a report schema file.
const maxSchema = 1 << 20

// schemaError checks a report against --schema, when the run has one:
// it says why the report does not match, or "".
func (x *run) schemaError(report *record.Report) string {
	path := x.opts.Invocation.Schema
	if path == "" || report == nil {
		return ""
	}
	s, err := CompileReportSchema(x.r.FS, path)
	if err != nil {
		return err.Error()
	}
	var inst any
	if err := json.Unmarshal(report.JSON, &inst); err != nil {
		return err.Error()
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Sprintf("does not match the report schema %s: %s", path, strings.Join(strings.Fields(err.Error()), " "))
	}
	return ""
}

// exprArtifacts are a step's artifacts as expressions see them: under
// agent_orchestrator's contract, one inside the repository is relative
// to it, so that read_json reads it (items_from_step reads a step's
// first artifact, which its wrappers write to $ARTIFACTS_DIR); flow's
// own as recorded.
func (x *run) exprArtifacts(paths []string) []string {
	if !x.orchestrated() {
		return paths
	}
	var out []string
	for i, p := range paths {
		if filepath.IsAbs(p) && inside(x.opts.Repo, p) {
			if rel, err := filepath.Rel(x.opts.Repo, p); err == nil {
				if out == nil {
					out = slices.Clone(paths)
				}
				out[i] = rel
			}
		}
	}
	if out == nil {
		return paths
	}
	return out
}
