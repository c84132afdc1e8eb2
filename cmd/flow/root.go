package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/flow-run/flow/runner"
)

// Exit codes of the flow command: the table of DESIGN §8, defined
// once in runner.
const (
	ExitOK          = int(runner.ExitOK)
	ExitFailed      = int(runner.ExitFailed)
	ExitUsage       = int(runner.ExitUsage)
	ExitHuman       = int(runner.ExitHuman)
	ExitPaused      = int(runner.ExitPaused)
	ExitBudget      = int(runner.ExitBudget)
	ExitHeld        = int(runner.ExitHeld)
	ExitRefused     = int(runner.ExitRefused)
	ExitInterrupted = int(runner.ExitInterrupted)
)

// Stdio holds the streams a command reads and writes.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// app is what every subcommand shares: its streams, the file system and
// the process environment.
type app struct {
	stdio Stdio
	fs    afero.Fs
	// getenv reads the environment; tests replace it.
	getenv func(string) string
}

// exitError carries the exit code a command ends with. An error that
// is not an exitError exits 1.
type exitError struct {
	code int
	err  error
	// quiet is true when the message was already printed.
	quiet bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is a bad-usage error (exit 2) with a hint.
func usageError(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// Run runs the flow command line args and returns its exit code.
func Run(ctx context.Context, args []string, stdio Stdio) int {
	a := &app{stdio: stdio, fs: afero.NewOsFs(), getenv: os.Getenv}
	root := a.rootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !ee.quiet && ee.err != nil {
			fmt.Fprintf(stdio.Err, "flow: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stdio.Err, "flow: %v\n", err)
	if isUsage(err) {
		return ExitUsage
	}
	return int(runner.CodeOf(err))
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
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: fmt.Errorf("%w\ntry: %s --help", err, c.CommandPath())}
	})
	root.AddCommand(
		a.validateCmd(),
		a.graphCmd(),
		a.schemaCmd(),
		a.versionCmd(),
	)
	a.addRunnerCmds(root)
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
