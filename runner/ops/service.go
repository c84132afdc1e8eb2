package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/internal/suggest"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/record"
)

// Service performs flow's operations for a front end. Every side effect
// goes through its fields: a front end builds one from the real
// operating system once, and tests build one over afero.NewMemMapFs(),
// a fake clock and scripted sessions. A Service holds no state of its
// own between calls; its methods may be called from several goroutines
// as long as its fields are not changed meanwhile.
type Service struct {
	// FS is where workflows and runs are read and written.
	FS afero.Fs
	// DeadNotifier tells a dead run's notifiers (tests fake it); nil is
	// internal/notify's sender.
	DeadNotifier DeadNotifier
	// Clock tells the time and paces polling (status --watch, logs
	// --follow).
	Clock clock.Clock
	// Starter starts the sessions of runs run by the local engine.
	Starter proc.Starter
	// Engine runs runs; nil means the local engine (Local) built from
	// the fields of the Service.
	Engine Engine
	// Dir is the absolute working directory: it is the repository when
	// a request names none, and a relative repository resolves against
	// it. "" means the process's own working directory. Workflow files
	// are opened as named, through FS (a relative name, on the
	// operating system, is relative to the process's directory), so that
	// diagnostics name them as the user did.
	Dir string
	// Host and PID name the runner in the runs it runs.
	Host string
	PID  int
	// Environ is the environment (KEY=value) that sessions inherit and
	// secrets are read from; Getenv reads it.
	Environ []string
	// User is who approves, rejects and controls runs when the request
	// names nobody; when it is "", LookupUser, if set, names them
	// ($USER, else the OS user name, for the command line: looked up
	// only when a request needs it, since the lookup reads the system's
	// user database).
	User       string
	LookupUser func() string
	// Stdout receives the progress of runs and, when asked for, their
	// sessions' output; nil discards it. Attach.Output overrides it for
	// one run.
	Stdout io.Writer
	// Alive reports whether the holder of a run's lock still runs; nil
	// means runlock.ProcessAlive.
	Alive func(runlock.Holder) bool
	// KillOrphans and KillMarked clean up after the sessions of a dead
	// runner (proc.KillOrphans, proc.KillMarked); nil skips them.
	KillOrphans func(pgid int) bool
	KillMarked  func(marker string) int
	// Sandbox confines the sessions of runs run by the local engine
	// (local.Runner.Sandbox); nil runs them unconfined.
	Sandbox local.Sandbox
	// NotifyDead makes readers of a run that find it dead tell its
	// workflow's notifiers (notify.on: [dead]) — flow status --watch
	// --notify-dead, flow serve --notify-dead. Off, reading a run never
	// runs anything.
	NotifyDead bool
	// Signal sends a signal to a process of this host (flow cancel
	// stops a run's runner with it, flow resume --takeover kills a
	// frozen one); nil makes Cancel and takeovers unsupported.
	Signal func(pid int, sig syscall.Signal) error
	// Inspect says what this host's kernel knows of a process, for flow
	// resume --takeover to check that a lock's pid is its runner; nil
	// means runlock.InspectProcess. Self is the path of this flow's
	// executable (os.Executable), which tells a runner from another
	// process.
	Inspect func(pid int) (runlock.Process, error)
	Self    string
}

// Getenv returns the value of key in the Service's environment, or ""
// when it is not set.
func (s *Service) Getenv(key string) string {
	for i := len(s.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(s.Environ[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Who names the person behind a request: by, else the Service's user,
// else "unknown".
func (s *Service) Who(by string) string {
	switch {
	case by != "":
		return by
	case s.User != "":
		return s.User
	case s.LookupUser != nil:
		if u := s.LookupUser(); u != "" {
			return u
		}
	}
	return "unknown"
}

// starter names who starts a runner, for its runner_started event: by,
// else $USER. Unlike Who it does not ask the operating system (a
// lookup every run would pay), and says nothing rather than "unknown".
func (s *Service) starter(by string) string {
	if by != "" {
		return by
	}
	return s.Getenv("USER")
}

func (s *Service) clock() clock.Clock {
	if s.Clock == nil {
		return clock.Real()
	}
	return s.Clock
}

func (s *Service) alive() func(runlock.Holder) bool {
	if s.Alive == nil {
		return runlock.ProcessAlive
	}
	return s.Alive
}

func (s *Service) stdout() io.Writer {
	if s.Stdout == nil {
		return io.Discard
	}
	return s.Stdout
}

// abs makes path absolute against the Service's directory.
func (s *Service) abs(path string) (string, error) {
	if filepath.IsAbs(path) {
		return filepath.Clean(path), nil
	}
	if s.Dir == "" {
		return filepath.Abs(path)
	}
	return filepath.Join(s.Dir, path), nil
}

// cwd is the Service's directory, absolute, or "" when it is unknown.
func (s *Service) cwd() string {
	d, err := s.abs(".")
	if err != nil {
		return ""
	}
	return d
}

// Repo resolves a repository as a front end names it to an absolute
// directory. "" is the repository of the Service's directory: the
// first of it and its parents that holds .agents/runs/ or .git
// (findRepo), else the directory itself. A repository that is not a
// directory is an ExitUsage error.
func (s *Service) Repo(repo string) (string, error) {
	dir := repo
	if dir == "" {
		dir = "."
	}
	abs, err := s.abs(dir)
	if err != nil {
		return "", Usage("--repo %s: %v", repo, err)
	}
	if fi, err := s.FS.Stat(abs); err != nil || !fi.IsDir() {
		return "", Usage("--repo %s: not a directory", dir)
	}
	if repo == "" {
		if root, ok := findRepo(s.FS, abs); ok {
			return root, nil
		}
	}
	return abs, nil
}

// root is the repository of the Service's directory (Repo("")), or the
// directory itself when it cannot be resolved.
func (s *Service) root() string {
	if dir, err := s.Repo(""); err == nil {
		return dir
	}
	return s.cwd()
}

// lookedIn says, for a message about repo, where flow looked for it
// when it took the Service's directory for want of a repository above
// it (Repo), or "".
func (s *Service) lookedIn(repo string) string {
	cwd := s.cwd()
	if repo != cwd {
		return ""
	}
	if _, ok := findRepo(s.FS, cwd); ok {
		return ""
	}
	return fmt.Sprintf("\nneither %s nor a directory above it holds .agents/runs/ or .git, so flow took it for the repository; run flow in the repository, or name it with --repo", cwd)
}

// findRun returns the run id in repo, or its newest run when id is "".
// An unknown run is an ExitUsage error with a did-you-mean; a bad id
// too.
func (s *Service) findRun(repo, id string) (record.RunRef, error) {
	if id != "" {
		if err := record.CheckRunID(id); err != nil {
			return record.RunRef{}, err
		}
	}
	ref, err := record.FindRun(s.FS, repo, id, "")
	switch {
	case err == nil:
		return ref, nil
	case errors.Is(err, record.ErrNoRun) && id != "":
		ids, _ := record.RunIDs(s.FS, repo)
		msg := err.Error()
		if c, ok := suggest.Closest(id, ids); ok {
			msg += fmt.Sprintf(" (did you mean %q?)", c)
		}
		return ref, Usage("%s%s\ntry: flow runs", msg, s.lookedIn(repo))
	case errors.Is(err, record.ErrNoRun):
		return ref, Usage("%v%s\ntry: flow run WORKFLOW", err, s.lookedIn(repo))
	}
	return ref, err
}

// openRun resolves repo and finds the run id in it (the newest when id
// is "").
func (s *Service) openRun(repo, id string) (string, record.RunRef, error) {
	dir, err := s.Repo(repo)
	if err != nil {
		return "", record.RunRef{}, err
	}
	ref, err := s.findRun(dir, id)
	return dir, ref, err
}

// sleep waits d on the Service's clock; it returns false when ctx ends
// first.
func (s *Service) sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-s.clock().After(d):
		return true
	}
}
