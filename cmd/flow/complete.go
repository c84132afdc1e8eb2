package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
)

// addCompletions teaches flow completion (cobra's shell completion) the
// arguments of flow's commands: workflow and test files, the run ids of
// the repository (--repo, else the current directory's), the step keys
// of a run, and for approve and reject the steps that wait. Completing
// only reads the record, as flow status does.
func (a *app) addCompletions(root *cobra.Command) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "validate", "graph", "convert", "test":
			c.ValidArgsFunction = workflowFiles
		case "run":
			_ = c.RegisterFlagCompletionFunc("start-at-step", a.completeWorkflowSteps)
		case "resume", "retry", "status", "cancel", "export", "pause", "continue", "run-once", "cleanup":
			c.ValidArgsFunction = a.completeRun
			_ = c.RegisterFlagCompletionFunc("start-at-step", a.completeRunSteps)
		case "logs":
			c.ValidArgsFunction = a.completeLogs
		case "approve", "reject":
			c.ValidArgsFunction = a.completeDecide
		}
	}
}

// workflowFiles completes the files flow reads workflows and tests
// from: YAML and HCL files, and directories.
func workflowFiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"yaml", "yml", "hcl"}, cobra.ShellCompDirectiveFilterFileExt
}

// repoFlag is the --repo a command was given, or "".
func repoFlag(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("repo"); f != nil {
		return f.Value.String()
	}
	return ""
}

// runIDs lists the runs of cmd's repository whose id starts with
// prefix, newest first, each with its workflow and status; keep, when
// set, picks the runs listed.
func (a *app) runIDs(cmd *cobra.Command, prefix string, keep func(ops.RunSummary) bool) []string {
	list, err := a.svc.ListRuns(repoFlag(cmd))
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range list.Runs {
		if strings.HasPrefix(r.RunID, prefix) && (keep == nil || keep(r)) {
			out = append(out, r.RunID+"\t"+r.Workflow+" "+r.Status)
		}
	}
	return out
}

// stepKeys lists the step keys of run id ("" for the newest) that start
// with prefix; waiting keeps only the steps that wait on a human.
func (a *app) stepKeys(cmd *cobra.Command, id, prefix string, waiting bool) []string {
	st, err := a.svc.Status(repoFlag(cmd), id)
	if err != nil || st.State == nil {
		return nil
	}
	var out []string
	for _, key := range st.State.StepOrder {
		s := st.State.Steps[key]
		if s == nil || !strings.HasPrefix(key.String(), prefix) || waiting && s.Status != core.WaitingOnHuman {
			continue
		}
		out = append(out, key.String()+"\t"+string(s.Status))
	}
	return out
}

// completeRun completes the one RUN_ID argument of a command.
func (a *app) completeRun(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.runIDs(cmd, toComplete, nil), cobra.ShellCompDirectiveNoFileComp
}

// completeRunSteps completes --start-at-step of resume with the steps
// of the run named (or the newest).
func (a *app) completeRunSteps(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return a.stepKeys(cmd, argAt(args, 0), toComplete, false), cobra.ShellCompDirectiveNoFileComp
}

// completeWorkflowSteps completes flow run's --start-at-step with the
// steps of the workflow file given.
func (a *app) completeWorkflowSteps(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	path := argAt(args, 0)
	if f := cmd.Flags().Lookup("workflow"); path == "" && f != nil {
		path = f.Value.String()
	}
	if path == "" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	wf, err := a.svc.LoadWorkflow(path, repoFlag(cmd))
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, s := range wf.Steps {
		if strings.HasPrefix(s.ID, toComplete) {
			out = append(out, s.ID)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeLogs completes flow logs [RUN_ID] [STEP]: first a run id, or a
// step of the newest run; then a step of the run named.
func (a *app) completeLogs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return append(a.runIDs(cmd, toComplete, nil), a.stepKeys(cmd, "", toComplete, false)...), cobra.ShellCompDirectiveNoFileComp
	case 1:
		return a.stepKeys(cmd, args[0], toComplete, false), cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeDecide completes flow approve and reject [RUN_ID] STEP: first
// a run that has not finished, or a step waiting in the one such run;
// then a step waiting in the run named.
func (a *app) completeDecide(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		runs := a.runIDs(cmd, "", func(r ops.RunSummary) bool { return !core.RunStatus(r.Status).Terminal() })
		var out []string
		for _, r := range runs {
			if strings.HasPrefix(r, toComplete) {
				out = append(out, r)
			}
		}
		if len(runs) == 1 {
			id, _, _ := strings.Cut(runs[0], "\t")
			out = append(out, a.stepKeys(cmd, id, toComplete, true)...)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	case 1:
		return a.stepKeys(cmd, args[0], toComplete, true), cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}
