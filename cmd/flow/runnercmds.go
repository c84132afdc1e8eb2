package main

import "github.com/spf13/cobra"

// addRunnerCmds adds the commands that run and inspect runs.
func (a *app) addRunnerCmds(root *cobra.Command) {}
