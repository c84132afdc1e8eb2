package main

import (
	"github.com/spf13/cobra"

	"github.com/flow-run/flow/runner/ops"
)

func (a *app) convertCmd() *cobra.Command {
	var f runFlags
	var to, as string
	cmd := &cobra.Command{
		Use:   "convert WORKFLOW",
		Short: "Print a workflow in flow's own format (from agent_orchestrator's, or YAML ⇄ HCL)",
		Long: `convert prints WORKFLOW in flow's own format on stdout, as YAML (the default) or
HCL (--to hcl). A file in agent_orchestrator's format becomes a flow workflow with
comments saying what each key became; its agents become commands that run the
wrapper given with --wrapper/--wrapper-arg or --command-template, as flow run
would, and --max-iterations N (N loop-backs there) is written as flow's N+1.
The output loads to the same workflow: keep it beside the original, whose
prompt files it names by the same relative paths.`,
		Example: "  flow convert review_loop.yaml --wrapper ./wrapper.py > review_loop.flow.yaml\n  flow convert workflows/sdlc.yaml --to hcl",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkAs(as); err != nil {
				return err
			}
			switch {
			case as == "":
			case f.inv.Format != "" && f.inv.Format != as:
				return ops.Usage("--as %s and --format %s say different formats: give one", as, f.inv.Format)
			default:
				f.inv.Format = as
			}
			if err := f.checkInvocation(); err != nil {
				return err
			}
			out, err := a.svc.Convert(ops.ConvertRequest{Workflow: args[0], To: to, Invocation: f.inv, MaxIterations: f.maxIterations})
			if err != nil {
				return err
			}
			_, err = a.stdio.Out.Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&to, "to", "yaml", "the format to print: yaml or hcl")
	f.addInvocation(cmd)
	addAs(cmd, &as)
	cmd.Flags().IntVar(&f.maxIterations, "max-iterations", 0, "agent_orchestrator's --max-iterations N (N loop-backs), written as max_iterations N+1")
	return cmd
}
