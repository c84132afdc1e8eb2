package local

import (
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/sandbox"
)

// Sandbox confines the processes a run starts for its workflow —
// sessions and gate checks — so that they cannot write flow's state
// under .agents/ but for their own session directory, and so cannot
// forge a decision or rewrite the record (internal/sandbox; README.md,
// "Limits and safety").
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
			x.warn("", fmt.Sprintf("sessions run unsandboxed: %v; a session can then write the run's record under .agents/ and forge a decision (sandbox: required refuses to run so; README.md, \"Limits and safety\")", why))
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
