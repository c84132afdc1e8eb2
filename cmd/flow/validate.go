package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/confine"
)

func (a *app) validateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate WORKFLOW...",
		Short: "Check workflow files and report every problem in them",
		Long: `validate loads each workflow file (YAML or HCL), compiles its expressions and
templates and checks its steps, references, dependencies and loop-backs.
It prints "FILE: ok (N steps)" for a valid file; otherwise every problem,
as file:line:col: message with the source line, on stderr, and exits 2.`,
		Example: "  flow validate workflows/*.yaml workflows/*.hcl\n  flow validate --json workflow.yaml",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			all := config.Diagnostics{}
			failed := false
			paths, err := a.workflowPaths(args)
			if err != nil {
				return err
			}
			for _, path := range paths {
				w, err := config.LoadWith(a.fs, path, config.Options{Repo: a.cwd()})
				var ds config.Diagnostics
				switch {
				case err == nil:
					if !asJSON {
						fmt.Fprintf(a.stdio.Out, "%s: ok (%d steps)\n", path, len(w.Steps))
					}
				case errors.As(err, &ds):
					failed = true
					all = append(all, ds...)
				default:
					failed = true
					fmt.Fprintf(a.stdio.Err, "flow: %v\n", err)
				}
			}
			if asJSON {
				b, err := all.JSON()
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdio.Out, "%s\n", b)
			} else if err := a.renderDiagnostics(all); err != nil {
				return err
			}
			if failed {
				return &exitError{code: ExitUsage, err: errors.New("invalid workflow"), quiet: true}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print the problems to stdout as a JSON array of {"file","line","col","severity","message","suggestion"}`)
	return cmd
}

// workflowPaths expands the arguments of validate: a directory stands for
// the workflow files in it (prompt directories have none).
func (a *app) workflowPaths(args []string) ([]string, error) {
	var paths []string
	for _, arg := range args {
		info, err := a.fs.Stat(arg)
		if err != nil || !info.IsDir() {
			paths = append(paths, arg)
			continue
		}
		entries, err := afero.ReadDir(a.fs, arg)
		if err != nil {
			return nil, &exitError{code: ExitUsage, err: fmt.Errorf("read workflow directory: %w", err)}
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

// loadWorkflow loads a workflow for a command; an invalid one has its
// diagnostics printed and ends the command with exit code 2. Its
// prompt files may lie in its own directory tree or in repo ("" means
// the current directory, flow run's default repository).
func (a *app) loadWorkflow(path, repo string) (*config.Workflow, error) {
	if repo == "" {
		repo = a.cwd()
	}
	w, err := config.LoadWith(a.fs, path, config.Options{Repo: repo})
	var ds config.Diagnostics
	switch {
	case err == nil:
		return w, nil
	case errors.As(err, &ds):
		if rerr := a.renderDiagnostics(ds); rerr != nil {
			return nil, rerr
		}
		return nil, &exitError{code: ExitUsage, err: err, quiet: true}
	default:
		return nil, &exitError{code: ExitUsage, err: err}
	}
}

// cwd returns the absolute current directory, or "" when it is unknown.
func (a *app) cwd() string {
	abs, err := filepath.Abs(".")
	if err != nil {
		return ""
	}
	return abs
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
		b, err := confine.ReadFile(a.fs, file, config.MaxWorkflowSize, "/")
		if err != nil {
			b = nil
		}
		cache[file] = b
		return b
	}
	if err := ds.Render(a.stdio.Err, sources); err != nil {
		return fmt.Errorf("print diagnostics: %w", err)
	}
	return nil
}
