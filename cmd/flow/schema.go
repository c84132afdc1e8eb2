package main

import (
	"fmt"

	"github.com/flow-run/flow/config"
	"github.com/spf13/cobra"
)

func (a *app) schemaCmd() *cobra.Command {
	var test bool
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the YAML workflow format, or of test files with --test",
		Long: `schema prints a JSON Schema of the YAML workflow format, for editors. Save it
and start a workflow file with
  # yaml-language-server: $schema=flow.schema.json
With --test it prints the schema of YAML workflow test files (*.test.yaml)
instead.`,
		Example: "  flow schema > flow.schema.json\n  flow schema --test > flow.test-schema.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			schema := config.Schema()
			if test {
				schema = config.TestSchema()
			}
			if _, err := a.stdio.Out.Write(schema); err != nil {
				return fmt.Errorf("write schema: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&test, "test", false, "print the schema of workflow test files (*.test.yaml)")
	return cmd
}
