package main

import (
	"github.com/flow-run/flow/runner/ops"
	"github.com/spf13/cobra"
)

func (a *app) graphCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "graph WORKFLOW",
		Short: "Print a workflow's steps as a Mermaid or Graphviz graph",
		Long: `graph prints the workflow's steps and their order. Needs edges are solid,
loop-back edges dashed and labelled with their iteration budget; human
steps have their own shape, and gated steps show their gate.`,
		Example: "  flow graph workflows/sdlc.yaml\n  flow graph workflows/sdlc.hcl --format dot | dot -Tsvg > sdlc.svg",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "mermaid" && format != "dot" {
				return ops.Usage("unknown graph format %q (want mermaid or dot)\ntry: flow graph %s --format mermaid", format, args[0])
			}
			w, err := a.loadWorkflow(args[0])
			if err != nil {
				return err
			}
			if format == "dot" {
				return w.Dot(a.stdio.Out)
			}
			return w.Mermaid(a.stdio.Out)
		},
	}
	cmd.Flags().StringVar(&format, "format", "mermaid", "graph format: mermaid or dot")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"mermaid", "dot"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
