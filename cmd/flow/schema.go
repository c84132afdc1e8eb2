package main

import (
	"fmt"

	"github.com/flow-run/flow/config"
	"github.com/spf13/cobra"
)

func (a *app) schemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the YAML workflow format",
		Long: `schema prints a JSON Schema of the YAML workflow format, for editors. Save it
and start a workflow file with
  # yaml-language-server: $schema=flow.schema.json`,
		Example: "  flow schema > flow.schema.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := a.stdio.Out.Write(config.Schema()); err != nil {
				return fmt.Errorf("write schema: %w", err)
			}
			return nil
		},
	}
}
