package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/gitwork"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/sandbox"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/spf13/afero"
)

// Sandbox confines the processes a run starts for its workflow —
// sessions and gate checks — so that they cannot write flow's state
// under .agents/ but for their own session directory, and so cannot
// forge a decision or rewrite the record (internal/sandbox; docs/security.md,
// "The sandbox").
type Sandbox interface {
	// Probe reports whether processes can be sandboxed here: nil, or
	// why not. It is asked once per run.
	Probe() error
	// Wrap turns the start of a process into the start of the
	// sandbox's launcher (sandbox.Launcher.Wrap).
	Wrap(spec sandbox.Spec, path string, argv []string, sys *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error)
}

// confine makes sp, a process of step s (nil: the workflow's cleanup),
// start sandboxed as the step's sandbox mode says, writable only in
// the repository outside .agents/ and in the directories writable
// names. An error is a step whose mode is required where no sandbox
// works.
func (x *run) confine(sp *proc.Spec, s *config.Step, writable ...string) error {
	mode := x.wf.StepSandbox(s)
	if m := x.opts.Invocation.Sandbox; m != "" {
		mode = m // flow run --sandbox: a person's choice wins
	}
	if mode == config.SandboxOff {
		return nil
	}
	why := x.sandboxProbe()
	if why != nil {
		if mode == config.SandboxRequired {
			return fmt.Errorf("sandbox: required, but sessions cannot be sandboxed here: %v", why)
		}
		// A Runner given no Sandbox (a test's, flow test's simulated
		// sessions) has none to warn of.
		if !x.sandboxWarned && x.r.Sandbox != nil {
			x.sandboxWarned = true
			x.warn(core.StepKey{}, fmt.Sprintf("sessions run unsandboxed: %v; a session can then write the run's record under .agents/ and forge a decision (sandbox: required refuses to run so; docs/security.md, \"The sandbox\")", why))
		}
		return nil
	}
	spec := sandbox.Spec{Repo: x.realRepo, PIDNamespace: true}
	for _, w := range writable {
		spec.Writable = append(spec.Writable, x.realPath(w))
	}
	if sp.Dir != "" {
		spec.Dir = x.realPath(sp.Dir)
	}
	if err := spec.Validate(); err != nil {
		return err
	}
	sb := x.r.Sandbox
	sp.Wrap = func(path string, argv []string, sys *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error) {
		return sb.Wrap(spec, path, argv, sys)
	}
	return nil
}

// gitWrap returns how flow's own git commands start: through the
// sandbox, as the workflow's sessions do (its defaults' mode, or flow
// run --sandbox), writable in the repository and under
// .agents/worktrees/ but not in the record. A session that can write
// the repository can write its .git/config, which names the filters,
// diff and merge drivers git runs: git runs them sandboxed too. nil
// starts git directly; where the mode is required and no sandbox
// works, every git command fails with why.
func (x *run) gitWrap() gitwork.Wrap {
	mode := x.wf.StepSandbox(nil)
	if m := x.opts.Invocation.Sandbox; m != "" {
		mode = m
	}
	if mode == config.SandboxOff {
		return nil
	}
	if why := x.sandboxProbe(); why != nil {
		if mode != config.SandboxRequired {
			return nil
		}
		return func(gitwork.Cmd, string, []string, *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error) {
			return "", nil, nil, fmt.Errorf("sandbox: required, but git cannot be sandboxed here: %v", why)
		}
	}
	worktrees := filepath.Join(x.opts.Repo, ".agents", "worktrees")
	if err := x.rec.MkdirAll(worktrees, 0o755); err != nil {
		return func(gitwork.Cmd, string, []string, *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error) {
			return "", nil, nil, fmt.Errorf("create %s: %w", worktrees, err)
		}
	}
	// Everything the closure reads is fixed by now: merges call it from
	// their own goroutines.
	repo, writable, sb := x.realRepo, x.realPath(worktrees), x.r.Sandbox
	return func(c gitwork.Cmd, path string, argv []string, sys *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error) {
		spec := sandbox.Spec{Repo: repo, Writable: []string{writable}, PIDNamespace: true}
		if c.Dir != "" {
			spec.Dir = x.realPath(c.Dir)
		}
		if err := spec.Validate(); err != nil {
			return "", nil, nil, err
		}
		return sb.Wrap(spec, path, argv, sys)
	}
}

// sandboxProbe returns why this run's processes cannot be sandboxed,
// or nil; it asks the Runner's Sandbox once.
func (x *run) sandboxProbe() error {
	if !x.sandboxProbed {
		x.sandboxProbed = true
		switch {
		case x.r.Sandbox == nil:
			x.sandboxErr = fmt.Errorf("this program starts no sandbox")
		default:
			x.sandboxErr = x.r.Sandbox.Probe()
			if x.sandboxErr == nil {
				real, err := filepath.EvalSymlinks(x.opts.Repo)
				if err != nil {
					x.sandboxErr = fmt.Errorf("resolve the repository: %w", err)
				}
				x.realRepo = real
			}
		}
	}
	return x.sandboxErr
}

// realPath returns p with the repository's own path resolved, as the
// sandbox's specs want them: absolute and free of symbolic links.
func (x *run) realPath(p string) string {
	if rel, err := filepath.Rel(x.opts.Repo, p); err == nil && filepath.IsLocal(rel) {
		return filepath.Join(x.realRepo, rel)
	}
	if p == x.opts.Repo {
		return x.realRepo
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

// weakenings lists how the workflow as loaded now weakens the gates of
// the one the run recorded in its workflow.json (config.Weakenings);
// nil when the run recorded none or nothing is weakened.
func (x *run) weakenings(wf *config.Workflow) ([]string, error) {
	b, err := afero.ReadFile(x.rec, filepath.Join(x.dir, record.LoadedWorkflowFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the run's recorded workflow: %w", err)
	}
	var loaded struct {
		Workflow json.RawMessage `json:"workflow"`
	}
	if err := json.Unmarshal(b, &loaded); err != nil || len(loaded.Workflow) == 0 {
		return nil, nil // not a record of its workflow: nothing to compare
	}
	return config.Weakenings(loaded.Workflow, wf)
}

// refuseWeakening refuses to go on with an edit of the workflow file
// that weakens the run's gates, unless a person accepted it (flow
// resume --accept-edits).
func (x *run) refuseWeakening(runID string) error {
	if x.opts.AcceptEdits || x.st.WorkflowDigest == x.digest {
		return nil
	}
	weak, err := x.weakenings(x.wf)
	if err != nil || len(weak) == 0 {
		return err
	}
	return core.Refuse("run %s: the workflow file %s was edited since the run recorded it, and the edit weakens its gates:\n  - %s\nthe repository is writable by the run's sessions, so only a person applies such an edit: flow resume %s --accept-edits (or undo the edit)",
		runID, x.wf.File, strings.Join(weak, "\n  - "), runID)
}

// weakenedError is an edit of the workflow file that weakens the run's
// gates, which a live runner does not apply.
type weakenedError struct{ weak []string }

func (e *weakenedError) Error() string {
	return "it weakens the run's gates (" + strings.Join(e.weak, "; ") + ")"
}
