package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// Runs start from a page: the start page lists the workflows of each
// repository — the files of its workflows/ directory, and those the
// server was given — and a workflow's form asks for its vars (their
// defaults filled in; a var named as a secret is not asked: it comes
// from the server's environment) and where to start. The run is
// checked as flow run --dry-run checks it, and its errors shown where
// they are, before anything starts; then flow run starts detached and
// the page opens the run.

// workflowsDir is the directory of a repository whose workflow files
// the start page offers.
const workflowsDir = "workflows"

// maxOffered bounds the workflows offered per repository.
const maxOffered = 200

// offered is a workflow the start page offers.
type offered struct {
	Repo    int
	RepoDir string
	// Rel is the file's path in the repository, as forms name it.
	Rel  string
	Path string
	Name string
	// Error is why the workflow does not load.
	Error string
	URL   string
}

// offeredWorkflows lists the workflow files a local source offers: its
// workflows/ directory's (.yaml, .yml, .hcl, .json), then the server's
// own that lie in the repository.
func (s *Server) offeredWorkflows(i int, src *source) []offered {
	var out []offered
	add := func(path string) {
		rel, err := filepath.Rel(src.dir, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || len(out) >= maxOffered {
			return
		}
		for _, o := range out {
			if o.Rel == rel {
				return
			}
		}
		out = append(out, offered{Repo: i, RepoDir: src.dir, Rel: rel, Path: path, URL: fmt.Sprintf("/start/%d?workflow=%s", i, url.QueryEscape(rel))})
	}
	entries, _ := afero.ReadDir(s.svc.FS, filepath.Join(src.dir, workflowsDir))
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".hcl", ".json":
			if e.Mode().IsRegular() {
				add(filepath.Join(src.dir, workflowsDir, e.Name()))
			}
		}
	}
	for _, f := range s.workflowFiles {
		add(f)
	}
	return out
}

// workflowsData is the data of the start page.
type workflowsData struct {
	page
	Workflows []offered
}

// workflowsPage lists the workflows a run can be started from.
func (s *Server) workflowsPage(w http.ResponseWriter, r *http.Request) {
	d := &workflowsData{page: s.page(r, "Start a run")}
	for i, src := range s.sources {
		if !src.local {
			continue
		}
		for _, o := range s.offeredWorkflows(i, src) {
			if wf, err := s.svc.LoadWorkflow(o.Path, src.dir); err != nil {
				o.Error = firstLine(err.Error())
			} else {
				o.Name = wf.Name
			}
			d.Workflows = append(d.Workflows, o)
		}
	}
	s.render(w, r, http.StatusOK, "workflows", d)
}

// startData is the data of a workflow's start form.
type startData struct {
	page
	offered
	Vars []varField
	// Secrets are the vars named as secrets: they come from the
	// server's environment.
	Secrets []string
	Steps   []string
	StartAt string
	// Errors are the errors that are not a var's, each with the line
	// of the workflow file it is about.
	Errors []startError
}

// varField is a var of the form, and the error of its value.
type varField struct {
	Name    string
	Value   string
	Default string
	Error   *startError
}

// startError is an error of a start, positioned in the workflow file
// when it names a place there: Line is that line of the file, Caret
// spaces up to its column.
type startError struct {
	Text  string `json:"text"`
	Where string `json:"where,omitempty"`
	Line  string `json:"line,omitempty"`
	Caret string `json:"caret,omitempty"`
	// Var is the var whose value it is about, when one is.
	Var string `json:"var,omitempty"`
}

// startPage shows a workflow's form: its vars and where to start.
func (s *Server) startPage(w http.ResponseWriter, r *http.Request) {
	o, wf, ok := s.offeredOf(w, r, r.URL.Query().Get("workflow"))
	if !ok {
		return
	}
	d := s.startForm(r, o, wf, nil, "")
	s.render(w, r, http.StatusOK, "start", d)
}

// offeredOf finds the workflow a request names among those its source
// offers, and loads it; it answers 404 for any other file, and the
// workflow's errors when it does not load.
func (s *Server) offeredOf(w http.ResponseWriter, r *http.Request, rel string) (offered, *config.Workflow, bool) {
	i, src, ok := s.source(w, r)
	if !ok {
		return offered{}, nil, false
	}
	if !src.local || s.launcher == nil || s.readOnly {
		s.fail(w, r, ops.Refused("This server does not start runs here."))
		return offered{}, nil, false
	}
	for _, o := range s.offeredWorkflows(i, src) {
		if o.Rel == rel {
			wf, err := s.svc.LoadWorkflow(o.Path, src.dir)
			if err != nil {
				d := s.startForm(r, o, nil, nil, "")
				d.Errors = s.startErrors(err)
				s.render(w, r, http.StatusBadRequest, "start", d)
				return offered{}, nil, false
			}
			o.Name = wf.Name
			return o, wf, true
		}
	}
	s.fail(w, r, notFound("This server offers no workflow %s in %s.", rel, src.name))
	return offered{}, nil, false
}

// startForm is the form of a workflow, with the values given (nil: the
// defaults).
func (s *Server) startForm(r *http.Request, o offered, wf *config.Workflow, given map[string]string, startAt string) *startData {
	d := &startData{page: s.page(r, "Start "+o.Rel), offered: o, StartAt: startAt}
	if wf == nil {
		return d
	}
	for _, k := range varNames(wf) {
		if config.IsSecretName(k, wf.Secrets) {
			d.Secrets = append(d.Secrets, k)
			continue
		}
		f := varField{Name: k, Default: wf.Vars[k], Value: wf.Vars[k]}
		if v, ok := given[k]; ok {
			f.Value = v
		}
		d.Vars = append(d.Vars, f)
	}
	for _, st := range wf.Steps {
		d.Steps = append(d.Steps, st.ID)
	}
	return d
}

// varNames lists a workflow's vars in file order.
func varNames(wf *config.Workflow) []string {
	names := slices.Clone(wf.VarOrder)
	for _, k := range sortedKeys(wf.Vars) {
		if !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	return names
}

// startRequest is a start, from a form or the JSON API.
type startRequest struct {
	Workflow string            `json:"workflow"`
	Vars     map[string]string `json:"vars"`
	StartAt  string            `json:"start_at"`
}

// Started is what a start returns: the new run and where its page is.
type Started struct {
	RunID    string `json:"run_id"`
	Repo     int    `json:"repo"`
	Workflow string `json:"workflow"`
	URL      string `json:"url"`
	// Appeared is false when the run's record did not appear within
	// startWait: the runner started, and has not written it yet.
	Appeared bool `json:"appeared"`
}

// startFailed is a start refused before anything started: the errors
// of its vars by name, and the others positioned in the workflow.
type startFailed struct {
	Vars   map[string]string `json:"vars,omitempty"`
	Errors []startError      `json:"errors"`
}

func (e *startFailed) Error() string {
	var parts []string
	for _, k := range sortedKeys(e.Vars) {
		parts = append(parts, "var "+k+": "+e.Vars[k])
	}
	for _, x := range e.Errors {
		if varOf(nil, x) == "" {
			parts = append(parts, x.String())
		}
	}
	return strings.Join(parts, "; ")
}

// String writes the error with its place: "wf.yaml:8:19: message".
func (e startError) String() string {
	if e.Where == "" {
		return e.Text
	}
	return e.Where + ": " + e.Text
}

// startWait bounds how long a start waits for its run's record, so that
// the page it opens is there.
const startWait = 15 * time.Second

// doStart checks a start as flow run --dry-run does and starts flow run
// detached, then waits for the run's record to appear.
func (s *Server) doStart(ctx context.Context, i int, o offered, wf *config.Workflow, req startRequest, by string) (Started, error) {
	var kvs []string
	bad := map[string]string{}
	for _, k := range sortedKeys(req.Vars) {
		v := req.Vars[k]
		if _, known := wf.Vars[k]; !known {
			bad[k] = "the workflow has no such var"
			continue
		}
		if config.IsSecretName(k, wf.Secrets) {
			bad[k] = "names a secret: it comes from the server's environment, never from a form"
			continue
		}
		if v != wf.Vars[k] {
			kvs = append(kvs, k+"="+v)
		}
	}
	if req.StartAt != "" && wf.Step(req.StartAt) == nil {
		return Started{}, &startFailed{Errors: []startError{{Text: fmt.Sprintf("the workflow has no step %q to start at", req.StartAt)}}}
	}
	if len(bad) > 0 {
		f := &startFailed{Vars: bad}
		for _, k := range sortedKeys(bad) {
			f.Errors = append(f.Errors, startError{Text: "var " + k + ": " + bad[k], Var: k})
		}
		return Started{}, f
	}
	plan, err := s.svc.DryRun(ops.RunRequest{Workflow: o.Path, Repo: o.RepoDir, Vars: kvs})
	var errs []startError
	if err != nil {
		errs = append(errs, s.startErrors(placeLimit(wf, err))...)
	} else {
		for _, e := range plan.Errors {
			errs = append(errs, s.position(e))
		}
	}
	if len(errs) > 0 {
		f := &startFailed{Vars: map[string]string{}}
		for i, e := range errs {
			if k := varOf(wf, e); k != "" {
				errs[i].Var = k
				if f.Vars[k] == "" {
					f.Vars[k] = e.String()
				}
			}
		}
		f.Errors = errs
		return Started{}, f
	}
	id := spec.NewRunID(s.now())
	args := []string{"run", o.Path, "--repo", o.RepoDir, "--run-id", id, "--engine", "local", "--by", by}
	for _, kv := range kvs {
		args = append(args, "--var", kv)
	}
	if req.StartAt != "" {
		args = append(args, "--start-at-step", req.StartAt)
	}
	if err := s.launcher.Launch(args); err != nil {
		return Started{}, err
	}
	out := Started{RunID: id, Repo: i, Workflow: o.Rel, URL: runURL(i, id)}
	dir := record.RunDir(o.RepoDir, id)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(startWait)
	defer deadline.Stop()
	for !out.Appeared {
		if ok, _ := afero.Exists(s.svc.FS, filepath.Join(dir, record.EventsFile)); ok {
			out.Appeared = true
			break
		}
		select {
		case <-ctx.Done():
			return out, nil
		case <-deadline.C:
			return out, nil
		case <-tick.C:
		}
	}
	return out, nil
}

// startRun starts a run from a workflow's form, or shows the form again
// with its errors where they are.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	rel := r.PostFormValue("workflow")
	o, wf, ok := s.offeredOf(w, r, rel)
	if !ok {
		return
	}
	req := startRequest{Workflow: rel, Vars: map[string]string{}, StartAt: r.PostFormValue("start_at")}
	for k, vs := range r.PostForm {
		if name, ok := strings.CutPrefix(k, "var."); ok && len(vs) > 0 {
			req.Vars[name] = vs[0]
		}
	}
	started, err := s.doStart(r.Context(), o.Repo, o, wf, req, who(r))
	var f *startFailed
	if errors.As(err, &f) {
		d := s.startForm(r, o, wf, req.Vars, req.StartAt)
		shown := map[string]bool{}
		for i := range d.Vars {
			for j, e := range f.Errors {
				if e.Var == d.Vars[i].Name && d.Vars[i].Error == nil {
					d.Vars[i].Error = &f.Errors[j]
					shown[fmt.Sprint(j)] = true
				}
			}
		}
		for j, e := range f.Errors {
			if !shown[fmt.Sprint(j)] {
				d.Errors = append(d.Errors, e)
			}
		}
		s.render(w, r, http.StatusBadRequest, "start", d)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !started.Appeared {
		s.message(w, r, http.StatusAccepted, "Starting", "Run "+started.RunID+" was started; its record has not appeared yet. The list of runs shows it once it does.")
		return
	}
	http.Redirect(w, r, started.URL+"?done=started", http.StatusSeeOther)
}

// startErrors are the errors of a workflow that does not load, or of a
// start it refuses, positioned.
func (s *Server) startErrors(err error) []startError {
	var ds config.Diagnostics
	if errors.As(err, &ds) {
		var out []startError
		for _, d := range ds {
			if d.Severity == config.SeverityWarning {
				continue
			}
			out = append(out, s.position(d.String()))
		}
		if len(out) > 0 {
			return out
		}
	}
	var out []startError
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "try: ") {
			out = append(out, s.position(l))
		}
	}
	return out
}

// limitRE finds the step and budget of an error resolving a budget.
var limitRE = regexp.MustCompile(`step ([^\s:]+): (max_attempts|max_iterations): `)

// placeLimit puts the place of the budget an error is about, when it
// names one, in front of it: "wf.yaml:8:19: resolve budgets: …".
func placeLimit(wf *config.Workflow, err error) error {
	m := limitRE.FindStringSubmatch(err.Error())
	if m == nil || posRE.MatchString(err.Error()) {
		return err
	}
	st := wf.Step(m[1])
	if st == nil || st.StepOptions == nil {
		return err
	}
	l := st.MaxAttempts
	if m[2] == "max_iterations" {
		l = st.MaxIterations
	}
	if l == nil {
		return err
	}
	pos := l.Pos
	if pos.Line == 0 && l.Expr != nil {
		pos = l.Expr.Pos
	}
	if pos.Line == 0 {
		return err
	}
	return fmt.Errorf("%s: %w", pos, err)
}

// posRE finds file:line:col in an error.
var posRE = regexp.MustCompile(`(/[^\s:]+):(\d+):(\d+): `)

// position reads the place an error names in a workflow file, and
// that line of the file.
func (s *Server) position(text string) startError {
	e := startError{Text: text}
	m := posRE.FindStringSubmatchIndex(text)
	if m == nil {
		return e
	}
	file := text[m[2]:m[3]]
	line, _ := strconv.Atoi(text[m[4]:m[5]])
	col, _ := strconv.Atoi(text[m[6]:m[7]])
	e.Where = fmt.Sprintf("%s:%d:%d", filepath.Base(file), line, col)
	e.Text = strings.TrimSpace(text[:m[0]] + text[m[1]:])
	b, err := confine.ReadFile(s.svc.FS, file, config.MaxWorkflowSize, "/")
	if err != nil {
		return e
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, len(b)+1)
	for n := 1; sc.Scan(); n++ {
		if n == line {
			e.Line = sc.Text()
			e.Caret = strings.Repeat(" ", max(col-1, 0)) + "^"
			break
		}
	}
	return e
}

// varOf returns the var an error is about — its line of the workflow,
// or its text, reads vars.NAME — or "".
func varOf(wf *config.Workflow, e startError) string {
	if wf == nil {
		return e.Var
	}
	for _, k := range varNames(wf) {
		re := regexp.MustCompile(`\bvars\.` + regexp.QuoteMeta(k) + `\b`)
		if re.MatchString(e.Line) || re.MatchString(e.Text) || strings.Contains(e.Text, "--var "+k+":") {
			return k
		}
	}
	return ""
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
