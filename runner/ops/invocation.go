package ops

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/record"
)

// absInvocation makes the paths an invocation gives (the wrapper, the
// gate-state file) absolute against the Service's directory, since
// sessions run in the repository.
func (s *Service) absInvocation(v record.Invocation) record.Invocation {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(s.cwd(), p)
	}
	if strings.ContainsRune(v.Wrapper, filepath.Separator) || s.exists(abs(v.Wrapper)) {
		v.Wrapper = abs(v.Wrapper)
	}
	v.GateStateFile = abs(v.GateStateFile)
	return v
}

// exists reports whether path names a file.
func (s *Service) exists(path string) bool {
	if path == "" {
		return false
	}
	_, err := s.FS.Stat(path)
	return err == nil
}

// loadInvoked loads the workflow at path as the invocation says, and
// refuses a workflow in agent_orchestrator's format whose agents have
// nothing to run them, before anything is created.
func (s *Service) loadInvoked(path, repo string, v record.Invocation) (*config.Workflow, error) {
	return s.loadInvokedFrom(nil, path, repo, v)
}

// loadInvokedFrom is loadInvoked, taking the workflow from read when
// read was loaded from path with the same options (a large workflow
// is not parsed twice).
func (s *Service) loadInvokedFrom(read *loaded, path, repo string, v record.Invocation) (*config.Workflow, error) {
	if v.Wrapper != "" && v.CommandTemplate != "" {
		return nil, core.Usage("--wrapper and --command-template both say how an agent runs; give one")
	}
	if repo == "" {
		repo = s.cwd()
	}
	opts := v.LoadOptions(repo)
	wf, err := read.reuse(path, opts)
	if wf == nil && err == nil {
		wf, err = config.LoadWith(s.FS, path, opts)
	}
	if err != nil {
		return nil, &core.ExitError{Code: core.ExitUsage, Err: err}
	}
	if v.GateStateFile == "" {
		for _, st := range wf.AllSteps() {
			if len(st.Gates()) > 0 {
				return nil, core.Usage("step %s waits on gates (%s) but no --gate-state-file says whether they are open", st.ID, strings.Join(st.Gates(), ", "))
			}
		}
	}
	if wf.Dialect != config.DialectOrchestrator {
		return wf, nil
	}
	var missing []string
	for _, st := range wf.AllSteps() {
		if st.Kind == config.KindAgent && wf.Agents[st.Agent] == nil && !slices.Contains(missing, st.Agent) {
			missing = append(missing, st.Agent)
		}
	}
	if len(missing) > 0 {
		return nil, core.Usage("%s is in agent_orchestrator's format, whose agents (%s) are run by a wrapper: give --wrapper PATH or --command-template CMD", path, strings.Join(missing, ", "))
	}
	return wf, nil
}

// restartInvocation is the invocation of a restart at a step: the one
// kept by the run it restarts (named, or the newest of the workflow),
// with v's flags over it. Without such a run it is v.
//
// It returns, too, the workflow it read to find the run, with the
// options it read it with, for loadInvokedFrom.
func (s *Service) restartInvocation(path, repo, runID string, v record.Invocation) (record.Invocation, *loaded) {
	opts := v.LoadOptions(repo)
	wf, err := config.LoadWith(s.FS, path, opts)
	read := &loaded{path: path, opts: opts, wf: wf, err: err}
	if err != nil {
		return v, read
	}
	ref, err := record.FindRun(s.FS, repo, runID, wf.Name)
	if err != nil {
		return v, read
	}
	kept, err := record.ReadInvocation(s.FS, ref.Dir)
	if err != nil {
		return v, read
	}
	return kept.Merge(v), read
}

// loaded is a workflow file read with some options: the workflow, or
// the error that reading it gave.
type loaded struct {
	path string
	opts config.Options
	wf   *config.Workflow
	err  error
}

// reuse returns what reading path with opts gives, when l is that
// reading; otherwise nil and nil.
func (l *loaded) reuse(path string, opts config.Options) (*config.Workflow, error) {
	if l == nil || l.path != path || !reflect.DeepEqual(l.opts, opts) {
		return nil, nil
	}
	return l.wf, l.err
}

// orchestratorBudgets reads --max-iterations as agent_orchestrator does
// for a workflow in its format: N loop-backs, which flow counts as N+1.
func orchestratorBudgets(wf *config.Workflow, b local.Budgets) local.Budgets {
	if wf.Dialect == config.DialectOrchestrator && b.MaxIterations > 0 {
		b.MaxIterations++
	}
	return b
}

// InvocationNotice is the line that says a workflow was read in
// agent_orchestrator's format, and why, or "".
func InvocationNotice(wf *config.Workflow) string {
	if wf.Dialect != config.DialectOrchestrator {
		return ""
	}
	if wf.DialectReason == "" {
		return fmt.Sprintf("%s: read in agent_orchestrator's format", wf.File)
	}
	return fmt.Sprintf("%s: read in agent_orchestrator's format (%s); --format flow reads it as flow's", wf.File, wf.DialectReason)
}
