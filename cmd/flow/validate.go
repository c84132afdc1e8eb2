package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/ops"
)

func (a *app) validateCmd() *cobra.Command {
	var asJSON bool
	var format, as string
	cmd := &cobra.Command{
		Use:   "validate WORKFLOW...",
		Short: "Check workflow files and report every problem in them",
		Long: `validate loads each workflow file (YAML or HCL), compiles its expressions and
templates and checks its steps, references, dependencies and loop-backs.
It prints "FILE: ok (N steps)" for a valid file; otherwise every problem,
as file:line:col: message with the source line, on stderr, and exits 2.
In GitHub Actions each problem is also an ::error annotation on its line (its
file relative to $GITHUB_WORKSPACE). --format gitlab prints the problems as a
GitLab Code Quality report on stdout (paths relative to $CI_PROJECT_DIR).
A YAML file in agent_orchestrator's format is detected (--as flow or --as
orchestrator reads every file in one format).`,
		Example: "  flow validate workflows/*.yaml workflows/*.hcl\n  flow validate --json workflow.yaml\n  flow validate --format gitlab workflows/*.yaml > gl-code-quality-report.json",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "text":
			case "json":
				asJSON = true
			case "gitlab":
			default:
				return ops.Usage("--format %s: want text, json or gitlab", format)
			}
			gitlab := format == "gitlab"
			if err := checkAs(as); err != nil {
				return err
			}
			res, err := a.svc.ValidateAs(args, as)
			if err != nil {
				return err
			}
			for _, f := range res.Files {
				if !asJSON && !gitlab {
					if f.Notice != "" {
						fmt.Fprintln(a.stdio.Err, f.Notice)
					}
					for _, w := range f.Warnings {
						fmt.Fprintln(a.stdio.Err, w)
					}
				}
				count := fmt.Sprintf("%d %s", f.Steps, plural(f.Steps, "step", "steps"))
				if f.Tests > 0 {
					count = fmt.Sprintf("%d %s", f.Tests, plural(f.Tests, "test", "tests"))
				}
				switch {
				case f.Valid && gitlab:
					fmt.Fprintf(a.stdio.Err, "%s: ok (%s)\n", f.File, count)
				case f.Valid && !asJSON:
					fmt.Fprintf(a.stdio.Out, "%s: ok (%s)\n", f.File, count)
				case f.Error != "":
					fmt.Fprintf(a.stdio.Err, "flow: %s\n", f.Error)
				}
			}
			if gitlab {
				b, err := gitlabCodeQuality(res.Diagnostics, func(f string) string { return a.ciPath(f, "CI_PROJECT_DIR") })
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdio.Out, "%s\n", b)
				// The problems are also shown in the job's log.
				if err := a.renderDiagnostics(res.Diagnostics); err != nil {
					return err
				}
			} else if asJSON {
				b, err := res.Diagnostics.JSON()
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdio.Out, "%s\n", b)
			} else if err := a.renderDiagnostics(res.Diagnostics); err != nil {
				return err
			}
			if !res.Valid {
				return exitQuietly(ExitUsage)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json (as --json) or gitlab (a GitLab Code Quality report on stdout)")
	addAs(cmd, &as)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print the problems to stdout as a JSON array of {"file","line","col","severity","message","suggestion"}`)
	return cmd
}

// loadWorkflow loads a workflow for a command; an invalid one ends the
// command with exit code 2, its diagnostics shown.
func (a *app) loadWorkflow(path string) (*config.Workflow, error) {
	return a.svc.LoadWorkflow(path, "")
}
