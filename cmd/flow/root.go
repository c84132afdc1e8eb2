package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"sync"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/internal/sandbox"
	"github.com/flow-run/flow/runner/ops"
)

// Exit codes of the flow command: the table in docs/architecture.md, "Shared tables", defined
// once in runner.
const (
	ExitOK          = int(ops.ExitOK)
	ExitUsage       = int(ops.ExitUsage)
	ExitHuman       = int(ops.ExitHuman)
	ExitPaused      = int(ops.ExitPaused)
	ExitInterrupted = int(ops.ExitInterrupted)
)

// Stdio holds the streams a command reads and writes.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// app is what every subcommand shares: its streams and the operations
// layer, which holds every other side effect.
type app struct {
	stdio Stdio
	svc   *ops.Service
	// ciFlag is the --ci flag's value: "" detects the CI service from
	// the environment (detectCI).
	ciFlag string
	// move is --move: a restart moves a Temporal run off its lost
	// worker.
	move bool
}

// engine returns the engine the command acts through: the one --engine
// chose (withEngine), else the local one.
func (a *app) engine() ops.Engine {
	if a.svc.Engine != nil {
		return a.svc.Engine
	}
	return a.svc.Local()
}

// quietError is an error whose message was already shown (or that has
// none to show): the command exits with its code and prints nothing
// more.
type quietError struct{ err error }

func (e *quietError) Error() string { return e.err.Error() }

func (e *quietError) Unwrap() error { return e.err }

// exitQuietly ends a command with code and no message.
func exitQuietly(code int) error {
	return &quietError{&ops.ExitError{Code: ops.ExitCode(code), Err: fmt.Errorf("exit %d", code)}}
}

// Run runs the flow command line args and returns its exit code. It is
// the one place where flow meets the operating system: the file
// system, the clock, processes, the environment, the host and the
// user all enter the operations layer here.
func Run(ctx context.Context, args []string, stdio Stdio) int {
	// Sessions run as the same user: they must not read a runner's
	// memory or environment (its secrets), nor attach to it. An
	// unprivileged runner stays dumpable: it must write the user
	// namespace maps of the sandbox's launchers, and its sandboxed
	// sessions cannot see it from their own PID namespace.
	if os.Geteuid() == 0 {
		_ = proc.Private()
	}
	host, _ := os.Hostname()
	dir, _ := os.Getwd()
	environ := os.Environ()
	svc := &ops.Service{
		FS:      afero.NewOsFs(),
		Clock:   clock.Real(),
		Starter: proc.OS(),
		Dir:     dir,
		Host:    host,
		PID:     os.Getpid(),
		Environ: environ,
		LookupUser: sync.OnceValue(func() string {
			return userName(os.Getenv, user.Current)
		}),
		Stdout: stdio.Out,
		Alive:  runlock.ProcessAlive,
		// Sessions of a dead runner may have left processes behind.
		KillOrphans: proc.KillOrphans,
		KillMarked:  proc.KillMarked,
		Signal:      proc.Signal,
		Inspect:     runlock.InspectProcess,
		// Sessions run sandboxed through this very program, re-executed
		// as the launcher; it is started by the name it was started by,
		// so that a wrapper that dispatches on it (a test's) finds it.
		Sandbox: &sandbox.Probed{Launcher: sandbox.Launcher{Self: selfOr(sandbox.DefaultSelf)}},
	}
	svc.Self, _ = os.Executable()
	a := &app{stdio: stdio, svc: svc}
	return a.exit(ctx, a.rootCmd(), args)
}

// exit runs the command line and maps its end to an exit code: the
// code of the error (ops.CodeOf), 2 for cobra's own usage errors.
// Diagnostics are shown with their source lines; other errors as
// "flow: message".
func (a *app) exit(ctx context.Context, root *cobra.Command, args []string) int {
	root.SetArgs(goStyleFlags(root, expandEnvArgs(args)))
	err := root.ExecuteContext(ctx)
	return a.code(err)
}

// code prints err as it should be seen and returns its exit code.
func (a *app) code(err error) int {
	if err == nil {
		return ExitOK
	}
	var q *quietError
	var ds config.Diagnostics
	switch {
	case errors.As(err, &q):
	case errors.As(err, &ds) && len(ds) > 0:
		if rerr := a.renderDiagnostics(ds); rerr != nil {
			fmt.Fprintf(a.stdio.Err, "flow: %v\n", rerr)
		}
	default:
		fmt.Fprintf(a.stdio.Err, "flow: %v\n", err)
	}
	var ee *ops.ExitError
	if !errors.As(err, &ee) && isUsage(err) {
		return ExitUsage
	}
	return int(ops.CodeOf(err))
}

// renderDiagnostics prints diagnostics on stderr with their source lines.
func (a *app) renderDiagnostics(ds config.Diagnostics) error {
	if len(ds) == 0 {
		return nil
	}
	cache := map[string][]byte{}
	sources := func(file string) []byte {
		if b, ok := cache[file]; ok {
			return b
		}
		// The same bounds as the loader's: a file too large to load is
		// not read to show its first line.
		b, err := confine.ReadFile(a.svc.FS, file, config.MaxWorkflowSize, "/")
		if err != nil {
			b = nil
		}
		cache[file] = b
		return b
	}
	if err := ds.Render(a.stdio.Err, sources); err != nil {
		return fmt.Errorf("print diagnostics: %w", err)
	}
	if a.ciMode() == ciGitHub {
		// An annotation for each, on the file and line of the problem.
		for _, d := range ds {
			fmt.Fprint(a.stdio.Err, ghCommand("error", d.Message,
				"file", a.ciPath(d.Pos.File, "GITHUB_WORKSPACE"), "line", strconv.Itoa(d.Pos.Line), "col", strconv.Itoa(d.Pos.Col)))
		}
	}
	return nil
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "flow",
		Short:         "Run declarative workflows of agent and command sessions",
		Long:          "flow runs workflows of agent and command sessions declared in YAML or HCL files,\nwith quality gates, loop-backs, human approvals and a durable run record.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetIn(a.stdio.In)
	root.SetOut(a.stdio.Out)
	root.SetErr(a.stdio.Err)
	root.PersistentFlags().StringVar(&a.ciFlag, "ci", "", "CI output: github, gitlab, plain or off (default: detected from GITHUB_ACTIONS, GITLAB_CI, CI)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		_, err := detectCI(a.ciFlag, a.svc.Getenv)
		return err
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return ops.Usage("%w%s\ntry: %s --help", err, flagHint(c, err), c.CommandPath())
	})
	root.AddCommand(
		a.validateCmd(),
		a.convertCmd(),
		a.testCmd(),
		a.graphCmd(),
		a.schemaCmd(),
		a.versionCmd(),
		a.serveCmd(),
		a.pruneCmd(),
	)
	a.addRunnerCmds(root)
	a.addTemporal(root)
	root.AddCommand(a.exportCmds()...)
	a.addCompletions(root)
	return root
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print flow's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(a.stdio.Out, "flow %s\n", version)
			return nil
		},
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	// A character device is not always a terminal: /dev/null is one.
	return ttyFd(f.Fd())
}

// selfOr returns the path of this program's executable as it was
// started (selfPath), or def when it cannot be found.
func selfOr(def string) string {
	if p, err := selfPath(); err == nil {
		return p
	}
	return def
}
