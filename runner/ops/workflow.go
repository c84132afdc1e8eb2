package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/suggest"
	"github.com/flow-run/flow/runner/core"
)

// LoadWorkflow loads and validates the workflow file at path. Its
// prompt files may lie in its own directory tree or in repo ("" means
// the repository of the Service's directory, see Repo). An invalid workflow is an ExitUsage error
// that wraps config.Diagnostics (errors.As finds them, to be shown with
// their source lines); a file that cannot be read is an ExitUsage error
// too.
func (s *Service) LoadWorkflow(path, repo string) (*config.Workflow, error) {
	if repo == "" {
		repo = s.root()
	}
	w, err := config.LoadWith(s.FS, path, config.Options{Repo: repo})
	if err != nil {
		return nil, core.Invalid("%w", err)
	}
	return w, nil
}

// ValidateResult is the result of Validate.
type ValidateResult struct {
	// Files has one entry per workflow file checked, in order.
	Files []FileResult `json:"files"`
	// Diagnostics are the problems found in every file, as
	// config.Diagnostics.JSON writes them: {"file", "line", "col",
	// "severity", "message", "suggestion"}.
	Diagnostics config.Diagnostics `json:"-"`
	// Valid is true when every file is a valid workflow.
	Valid bool `json:"valid"`
}

// FileResult is what Validate found of one file.
type FileResult struct {
	// File is the path as given (or found in a given directory).
	File string `json:"file"`
	// Valid is true when the file is a valid workflow.
	Valid bool `json:"valid"`
	// Steps is the number of steps of a valid workflow.
	Steps int `json:"steps"`
	// Tests is the number of tests of a valid workflow test file
	// (*.test.yaml), which Validate checks as a test file.
	Tests int `json:"tests,omitempty"`
	// Error is why the file could not be checked at all (it cannot be
	// read); its problems otherwise are in the Diagnostics.
	Error string `json:"error,omitempty"`
	// Format is "orchestrator" for a file read in agent_orchestrator's
	// format, "" for flow's.
	Format string `json:"format,omitempty"`
	// Notice says why a file was read in agent_orchestrator's format.
	Notice string `json:"-"`
	// Warnings are what was read and ignored, as file:line:col: warning:
	// message.
	Warnings []string `json:"warnings,omitempty"`
}

// MarshalJSON writes the result with its diagnostics under
// "diagnostics", in the form of config.Diagnostics.JSON.
func (r ValidateResult) MarshalJSON() ([]byte, error) {
	ds := r.Diagnostics
	if ds == nil {
		ds = config.Diagnostics{}
	}
	d, err := ds.JSON()
	if err != nil {
		return nil, err
	}
	files := r.Files
	if files == nil {
		files = []FileResult{}
	}
	return json.Marshal(struct {
		Files       []FileResult    `json:"files"`
		Diagnostics json.RawMessage `json:"diagnostics"`
		Valid       bool            `json:"valid"`
	}{files, d, r.Valid})
}

// Validate checks workflow files: each path is a file, or a directory
// standing for the .yaml, .yml and .hcl files in it. Prompt files may
// lie in the Service's directory. A directory that cannot be read is an
// ExitUsage error; invalid workflows are not errors: they are in the
// result.
func (s *Service) Validate(paths []string) (ValidateResult, error) {
	return s.ValidateAs(paths, "")
}

// ValidateAs is Validate with the workflows (and the workflows of test
// files) read in format: config.FormatFlow or config.FormatOrchestrator;
// "" detects it.
func (s *Service) ValidateAs(paths []string, format string) (ValidateResult, error) {
	files, err := s.workflowPaths(paths)
	if err != nil {
		return ValidateResult{}, err
	}
	res := ValidateResult{Files: []FileResult{}, Diagnostics: config.Diagnostics{}, Valid: true}
	for _, path := range files {
		f := FileResult{File: path}
		var err error
		if config.IsTestFile(path) {
			var tf *config.TestFile
			if tf, err = config.LoadTestsAs(s.FS, path, format); err == nil {
				f.Tests = len(tf.Tests)
			}
		} else {
			var w *config.Workflow
			if w, err = config.LoadWith(s.FS, path, config.Options{Repo: s.root(), Format: format}); err == nil {
				f.Steps = len(w.Steps)
				if w.Dialect == config.DialectOrchestrator {
					f.Format, f.Notice = config.FormatOrchestrator, InvocationNotice(w)
				}
				for _, d := range w.Warnings {
					f.Warnings = append(f.Warnings, d.String())
				}
			}
		}
		var ds config.Diagnostics
		switch {
		case err == nil:
			f.Valid = true
		case errors.As(err, &ds):
			res.Diagnostics = append(res.Diagnostics, ds...)
		default:
			f.Error = err.Error()
		}
		res.Valid = res.Valid && f.Valid
		res.Files = append(res.Files, f)
	}
	return res, nil
}

// workflowPaths expands the arguments of Validate: a directory stands
// for the workflow files in it (prompt directories have none).
func (s *Service) workflowPaths(args []string) ([]string, error) {
	var paths []string
	for _, arg := range args {
		info, err := s.FS.Stat(arg)
		if err != nil || !info.IsDir() {
			paths = append(paths, arg)
			continue
		}
		entries, err := afero.ReadDir(s.FS, arg)
		if err != nil {
			return nil, Usage("read workflow directory: %w", err)
		}
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".yaml", ".yml", ".hcl":
				if !e.IsDir() {
					paths = append(paths, filepath.Join(arg, e.Name()))
				}
			}
		}
	}
	return paths, nil
}

// ParseVars reads var overrides given as key=value against wf: each key
// must be a var of wf, must not name a secret (config.IsSecretName:
// vars are recorded in the run, secrets never are), and must be valid
// UTF-8. Every refusal is an ExitUsage error with a did-you-mean.
func ParseVars(wf *config.Workflow, kvs []string) (map[string]string, error) {
	vars := map[string]string{}
	names := make([]string, 0, len(wf.Vars))
	for k := range wf.Vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, Usage("--var %q: want key=value\ntry: flow run %s --var key=value", kv, wf.File)
		}
		if !utf8.ValidString(kv) {
			return nil, Usage("--var %s: the value is not valid UTF-8", strings.ToValidUTF8(k, "?"))
		}
		if config.IsSecretName(k, wf.Secrets) {
			return nil, Usage("--var %s: %q names a secret, and vars are recorded in the run; pass it through the environment instead (export %s=...; flow reads it at every start, hides its value in everything it writes, and never records it)",
				k, k, strings.ToUpper(k))
		}
		if _, known := wf.Vars[k]; !known {
			msg := fmt.Sprintf("--var %s: the workflow has no var %q", k, k)
			if c, ok := suggest.Closest(k, names); ok {
				msg += fmt.Sprintf(" (did you mean %q?)", c)
			}
			if len(names) > 0 {
				msg += "; its vars: " + strings.Join(names, ", ")
			}
			return nil, Usage("%s", msg)
		}
		vars[k] = v
	}
	return vars, nil
}

// ParseInputs reads a human's inputs given as key=value; a pair without
// a key is an ExitUsage error.
func ParseInputs(kvs []string) (map[string]any, error) {
	in := map[string]any{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, Usage("--input %q: want key=value", kv)
		}
		in[k] = v
	}
	return in, nil
}

// checkStep rejects a step the workflow does not have, suggesting the
// closest one.
func checkStep(wf *config.Workflow, k core.StepKey) error {
	id := k.String()
	if k.IsInstance() {
		// An instance: its loop and body step must exist; the run's
		// record says whether the item does.
		if l := wf.Step(k.Loop); l == nil || l.ForEach == nil {
			return Usage("%s: --start-at-step %s: %q is not a for_each loop of the workflow", wf.File, id, k.Loop)
		}
		if b := wf.Step(k.Step); b == nil || b.Loop != k.Loop {
			return Usage("%s: --start-at-step %s: %q is not a step of the body of %q", wf.File, id, k.Step, k.Loop)
		}
		return nil
	}
	if s := wf.Step(id); s != nil && s.Loop == "" {
		return nil
	} else if s != nil {
		return Usage("%s: --start-at-step: %q is a step of the body of loop %q: start at %s to run all its items again, or at %s[KEY].%s for one item", wf.File, id, s.Loop, s.Loop, s.Loop, id)
	}
	ids := make([]string, len(wf.Steps))
	for i, s := range wf.Steps {
		ids[i] = s.ID
	}
	msg := fmt.Sprintf("%s: --start-at-step: unknown step %q", wf.File, id)
	if c, ok := suggest.Closest(id, ids); ok {
		msg += fmt.Sprintf(" (did you mean %q?)", c)
	}
	return Usage("%s\nsteps: %s", msg, strings.Join(ids, ", "))
}

// LocateWorkflow finds the workflow file of a run in repo: where the
// run recorded it, or — when the run directory was copied from another
// checkout (a CI artifact) — at the same place relative to repo. The
// file must lie in repo: a record names the file flow loads, and a
// tampered or imported record must not make flow load (and run) a file
// from anywhere else, nor from flow's own state under .agents/ (where an
// imported archive lands). A run whose file lies elsewhere is an ExitUsage
// error that says to name it (flow resume --workflow).
func LocateWorkflow(fsys afero.Fs, st *core.State, repo string) (string, error) {
	// in reports whether p lies in dir, outside flow's own state.
	in := func(dir, p string) (string, bool) {
		rel, err := filepath.Rel(dir, p)
		first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		return rel, err == nil && filepath.IsAbs(p) && filepath.IsLocal(rel) && first != ".agents"
	}
	if rel, ok := in(st.RepoDir, st.WorkflowFile); ok {
		p := filepath.Join(repo, rel)
		if ok, _ := afero.Exists(fsys, p); ok || p == st.WorkflowFile {
			return p, nil
		}
	}
	if _, ok := in(repo, st.WorkflowFile); ok {
		return st.WorkflowFile, nil
	}
	return "", Usage("run %s: its workflow file %s is not in the repository %s (outside .agents/); name the file to go on with: flow resume %s --workflow FILE",
		st.RunID, st.WorkflowFile, repo, st.RunID)
}
