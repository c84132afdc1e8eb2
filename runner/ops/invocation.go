package ops

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/atomicfile"
	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/internal/safefs"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// absInvocation makes the paths an invocation gives (the wrapper, the
// gate-state file, the report schema, the working and logs directories)
// absolute against the Service's directory, since sessions run in the
// repository. The state file stays as given: a relative one is the
// repository's, as agent_orchestrator takes it.
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
	v.Schema, v.Workdir, v.LogsDir = abs(v.Schema), abs(v.Workdir), abs(v.LogsDir)
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
		return nil, Usage("--wrapper and --command-template both say how an agent runs; give one")
	}
	if repo == "" {
		repo = s.root()
	}
	opts := v.LoadOptions(repo)
	wf, err := read.reuse(path, opts)
	if wf == nil && err == nil {
		wf, err = config.LoadWith(s.FS, path, opts)
	}
	if err != nil {
		return nil, core.Invalid("%w", err)
	}
	if err := s.checkRunFlags(repo, v); err != nil {
		return nil, err
	}
	if v.GateStateFile == "" {
		for _, st := range wf.AllSteps() {
			if len(st.Gates()) > 0 {
				return nil, Usage("step %s waits on gates (%s) but no --gate-state-file says whether they are open", st.ID, strings.Join(st.Gates(), ", "))
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
		return nil, Usage("%s is in agent_orchestrator's format, whose agents (%s) are run by a wrapper: give --wrapper PATH or --command-template CMD", path, strings.Join(missing, ", "))
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
// for a workflow in its format: N loop-backs, which flow counts as N+1;
// and takes the daily cost limit of the invocation.
func orchestratorBudgets(wf *config.Workflow, b spec.Budgets, v record.Invocation) spec.Budgets {
	if wf.Dialect == config.DialectOrchestrator && b.MaxIterations > 0 {
		b.MaxIterations++
	}
	if v.DailyCostLimit > 0 {
		b.DailyCostUSD = v.DailyCostLimit
	}
	return b
}

// MaxPollInterval is the longest --poll-interval flow takes.
const MaxPollInterval = time.Second

// PollEvery is how often a run of the invocation looks at what it
// waits for: --poll-interval, at most MaxPollInterval; 0 leaves the
// runner's own.
func PollEvery(v record.Invocation) time.Duration {
	if v.PollInterval <= 0 {
		return 0
	}
	return min(time.Duration(v.PollInterval*float64(time.Second)), MaxPollInterval)
}

// checkRunFlags checks agent_orchestrator's run flags of an invocation
// for a run in repo: --workdir lies in the repository, --schema is a
// JSON Schema, --daily-cost-limit and --poll-interval are positive.
func (s *Service) checkRunFlags(repo string, v record.Invocation) error {
	if v.Workdir != "" {
		if !inRepo(repo, v.Workdir) {
			return Usage("--workdir %s: sessions work in the repository %s: give a directory inside it", v.Workdir, repo)
		}
		if fi, err := s.FS.Stat(v.Workdir); err != nil || !fi.IsDir() {
			return Usage("--workdir %s: not a directory", v.Workdir)
		}
	}
	if v.Schema != "" {
		if _, err := local.CompileReportSchema(s.FS, v.Schema); err != nil {
			return Usage("--schema: %v", err)
		}
	}
	if v.DailyCostLimit < 0 {
		return Usage("--daily-cost-limit %v: want a positive number of USD", v.DailyCostLimit)
	}
	if v.PollInterval < 0 {
		return Usage("--poll-interval %v: want a positive number of seconds", v.PollInterval)
	}
	return nil
}

// inRepo reports whether path lies in repo or is repo.
func inRepo(repo, path string) bool {
	rel, err := filepath.Rel(repo, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// copyOut copies, when the runner of a run stops, its session logs to
// --logs-dir and its run_state.json to --state-file (relative to the
// repository), for scripts that read them where agent_orchestrator
// wrote them; the record stays in the run directory. What cannot be
// copied is said on w.
func (s *Service) copyOut(opts spec.Options, runDir string, w io.Writer) {
	v := opts.Invocation
	if runDir == "" || v.LogsDir == "" && v.StateFile == "" {
		return
	}
	warn := func(err error) { fmt.Fprintf(w, "warning: %v\n", err) }
	if v.StateFile != "" {
		dst := v.StateFile
		if !filepath.IsAbs(dst) {
			dst = filepath.Join(opts.Repo, dst)
		}
		if err := copyFile(s.outFS(opts.Repo, dst), filepath.Join(runDir, record.StateFile), dst, s.FS); err != nil {
			warn(fmt.Errorf("--state-file: %w", err))
		}
	}
	if v.LogsDir != "" {
		logs := filepath.Join(runDir, record.LogsDir)
		names, err := afero.ReadDir(s.FS, logs)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			warn(fmt.Errorf("--logs-dir: %w", err))
		}
		for _, fi := range names {
			if !fi.Mode().IsRegular() {
				continue
			}
			dst := filepath.Join(v.LogsDir, fi.Name())
			if err := copyFile(s.outFS(opts.Repo, dst), filepath.Join(logs, fi.Name()), dst, s.FS); err != nil {
				warn(fmt.Errorf("--logs-dir: %w", err))
			}
		}
	}
}

// outFS is the file system a copy to dst is written through: beneath
// the repository, one that follows no link (a session may have planted
// one there); elsewhere the Service's.
func (s *Service) outFS(repo, dst string) afero.Fs {
	if _, ok := s.FS.(*afero.OsFs); ok && inRepo(repo, dst) {
		return safefs.New(repo)
	}
	return s.FS
}

// copyFile copies src, read from from as a regular file inside its
// directory, to dst through to, creating dst's directory.
func copyFile(to afero.Fs, src, dst string, from afero.Fs) error {
	b, err := confine.ReadFile(from, src, maxCopy, filepath.Dir(src))
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	if err := to.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	if err := atomicfile.Replace(to, dst, b, 0o644); err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	return nil
}

// maxCopy bounds a file copied out of a run directory.
const maxCopy = 1 << 30

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
