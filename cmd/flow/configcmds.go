package main

// Placeholder until the config commands land; replaced by validate.go,
// graph.go and schema.go.

import "github.com/spf13/cobra"

func (a *app) validateCmd() *cobra.Command { return &cobra.Command{Use: "validate"} }
func (a *app) graphCmd() *cobra.Command    { return &cobra.Command{Use: "graph"} }
func (a *app) schemaCmd() *cobra.Command   { return &cobra.Command{Use: "schema"} }
