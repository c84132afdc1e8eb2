package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/confine"
)

// What a session of a workflow read in agent_orchestrator's format is
// given and must give back (README.md, "agent_orchestrator workflows"): its environment, a prompt found
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
// <repo>/.agents/prompts/<base name>, the path under the workflow's
// directory, the path under the repository. Each is read as a regular
// file inside its root (the repository or the workflow's directory),
// at most limit bytes. A prompt found nowhere is an error naming every
// place tried.
func (x *run) findPrompt(path string, limit int64) (found string, text []byte, err error) {
	repo := x.opts.Repo
	wfDir := filepath.Dir(absPath(x.wf.File))
	type place struct{ root, path string }
	var places []place
	if filepath.IsAbs(path) {
		root := repo
		if !inside(repo, path) {
			root = wfDir
		}
		places = []place{{root, filepath.Clean(path)}}
	} else {
		places = []place{
			{repo, filepath.Join(repo, ".agents", "prompts", filepath.Base(path))},
			{wfDir, filepath.Join(wfDir, path)},
			{repo, filepath.Join(repo, path)},
		}
	}
	var tried []string
	for _, p := range places {
		if slices.Contains(tried, p.path) {
			// The workflow's directory is the repository.
			continue
		}
		tried = append(tried, p.path)
		if !inside(p.root, p.path) {
			return "", nil, fmt.Errorf("prompt %s is outside the repository and the workflow's directory", path)
		}
		root, err := confine.NewRoot(x.r.FS, p.root)
		if err != nil {
			continue
		}
		b, err := root.ReadFile(p.path, limit)
		switch {
		case err == nil:
			return p.path, b, nil
		case errors.Is(err, fs.ErrNotExist):
			continue
		default:
			return "", nil, fmt.Errorf("read prompt %s: %w", p.path, err)
		}
	}
	return "", nil, fmt.Errorf("prompt %s not found; looked in %s", path, strings.Join(tried, ", "))
}

// inside reports whether path lies in dir or is dir.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// orchestratorEnv is the environment agent_orchestrator gives a
// session: RUN_ID, STEP_ID (a looped step's own id for each of its
// items), AGENT_ID, REPO_DIR, PROMPT_PATH, REPORT_PATH,
// MANUAL_RESULT_PATH, STEP_ATTEMPT, ARTIFACTS_DIR, STEP_MODEL, for each
// step it needs DEP_<STEP>_ARTIFACTS (its artifacts, absolute, joined
// by ':') and DEP_<STEP>_ARTIFACT_<i> (each, from 0), and in a loop
// LOOP_<INDEX_VAR> and LOOP_<ITEM_VAR> (a string item as it is, any
// other as JSON).
func (x *run) orchestratorEnv(s *config.Step, e sessionRun, promptPath string) []string {
	id := s.ID
	if s.Loop != "" && s.ID == s.Loop+"_item" {
		id = s.Loop
	}
	artifacts := filepath.Join(x.dir, ArtifactsDir)
	_ = x.r.FS.MkdirAll(artifacts, 0o755)
	vars := []string{
		"RUN_ID=" + x.st.RunID,
		"STEP_ID=" + id,
		"AGENT_ID=" + s.Agent,
		"REPO_DIR=" + x.opts.Repo,
		"PROMPT_PATH=" + promptPath,
		"REPORT_PATH=" + e.SessionReport,
		"MANUAL_RESULT_PATH=" + x.names.ManualInput(e.Step),
		"STEP_ATTEMPT=" + strconv.Itoa(e.Attempt),
		"ARTIFACTS_DIR=" + artifacts,
		"STEP_MODEL=" + s.Model,
	}
	// A looped step's needs are its loop's (agent_orchestrator's step
	// needs them), after any of its own inside the loop.
	type need struct{ dep, key string }
	var needs []need
	for _, dep := range s.Needs {
		key := dep
		if l := x.wf.LoopOf(dep); s.Loop != "" && l != nil && l.ID == s.Loop {
			key = siblingKey(e.Step, dep)
		}
		needs = append(needs, need{dep, key})
	}
	if loop := x.wf.LoopOf(s.ID); loop != nil {
		for _, dep := range loop.Needs {
			if !slices.Contains(s.Needs, dep) {
				needs = append(needs, need{dep, dep})
			}
		}
	}
	for _, n := range needs {
		dep, key := n.dep, n.key
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
		vars = append(vars, "DEP_"+name+"_ARTIFACTS="+strings.Join(paths, ":"))
	}
	if k, i, raw, ok := x.itemOf(e.Step); ok {
		if loop := x.wf.Step(k.Loop); loop != nil && loop.ForEach != nil {
			item := string(raw)
			var str string
			if json.Unmarshal(raw, &str) == nil {
				item = str
			}
			vars = append(vars, "LOOP_"+envWord(loop.ForEach.IndexAs)+"="+strconv.Itoa(i),
				"LOOP_"+envWord(loop.ForEach.As)+"="+item)
		}
	}
	return vars
}

// siblingKey is the instance key of body step dep for the same item as
// the instance key, "loop[key].step" → "loop[key].dep".
func siblingKey(key, dep string) string {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[:i+1] + dep
	}
	return dep
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
