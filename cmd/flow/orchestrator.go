package main

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/suggest"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// agent_orchestrator's command line on flow run (docs/agent-orchestrator.md):
// `python -m agent_orchestrator.cli run --repo R --workflow W …` becomes
// `flow run --repo R --workflow W …` with the same flags.

// orchFlags are the flags of agent_orchestrator's run that only flow
// run and flow resume take.
type orchFlags struct {
	issueNumber int
	worktree    bool
	wt          record.GitWorktree
}

// addOrchestratorRun adds agent_orchestrator's run flags to run or
// resume: what they ask is kept in the run's invocation.
func (f *runFlags) addOrchestratorRun(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&f.orch.issueNumber, "issue-number", 0, "agent_orchestrator: the GitHub issue the run works on: $ISSUE_NUMBER, and $ISSUE_MARKDOWN_PATH (_DIR, _FILENAME) naming gh_issue_N.md in $ARTIFACTS_DIR")
	fl.StringVar(&f.inv.Schema, "schema", "", "agent_orchestrator: a JSON Schema every run report is checked against")
	fl.Float64Var(&f.inv.PollInterval, "poll-interval", 0, "agent_orchestrator: seconds between looks at manual inputs, gates and control.json (at most 1)")
	fl.StringVar(&f.inv.LogsDir, "logs-dir", "", "agent_orchestrator: also copy the sessions' logs to this directory whenever the runner stops")
	fl.StringVar(&f.inv.StateFile, "state-file", "", "agent_orchestrator: also copy run_state.json to this file (relative to the repository) whenever the runner stops")
	fl.StringVar(&f.inv.Workdir, "workdir", "", "agent_orchestrator: the directory, inside the repository, sessions run in (default: the repository)")
	fl.BoolVar(&f.inv.SkipRetention, "skip-cleanup", false, "agent_orchestrator: remove no old runs when this run ends (the workflow's defaults.retention is not applied)")
	fl.Float64Var(&f.inv.DailyCostLimit, "daily-cost-limit", 0, "stop, as at a spent budget (exit 6), once the runs of the repository have spent this many USD today (UTC); a higher one lifts it")
	fl.BoolVar(&f.orch.worktree, "git-worktree", false, "give the run a git worktree of its own (the workflow's workspace: worktree, docs/workspaces.md)")
	fl.StringVar(&f.orch.wt.Ref, "git-worktree-ref", "", "with --git-worktree: the commit, branch or tag it starts from (default: HEAD when the first session starts)")
	fl.StringVar(&f.orch.wt.Branch, "git-worktree-branch", "", "with --git-worktree: its branch (default flow/RUN/_run)")
	fl.StringVar(&f.orch.wt.Root, "git-worktree-root", "", "with --git-worktree: the directory worktrees are made in, relative to the repository (default .agents/worktrees)")
	fl.BoolVar(&f.orch.wt.Keep, "git-worktree-keep", false, "with --git-worktree: keep the worktree when the run completes (its branch always stays)")
}

// orchInvocation puts into the invocation what agent_orchestrator's flags
// ask beyond it.
func (f *runFlags) orchInvocation() error {
	if n := f.orch.issueNumber; n != 0 {
		if n < 0 {
			return ops.Usage("--issue-number %d: want a positive number", n)
		}
		f.inv.Env = append(f.inv.Env, "ISSUE_NUMBER="+strconv.Itoa(n))
	}
	if f.orch.worktree {
		wt := f.orch.wt
		f.inv.GitWorktree = &wt
	} else if f.orch.wt != (record.GitWorktree{}) {
		return ops.Usage("--git-worktree-ref, -branch, -root and -keep say how the run's worktree is made: give --git-worktree with them")
	}
	return nil
}

// workflowArg is the workflow of flow run: the argument, or --workflow
// (agent_orchestrator's), not both unless they agree.
func workflowArg(args []string, flag string) (string, error) {
	switch {
	case len(args) == 0 && flag == "":
		return "", ops.Usage("give the workflow file: flow run WORKFLOW (or --workflow WORKFLOW)")
	case len(args) == 0:
		return flag, nil
	case flag != "" && flag != args[0]:
		return "", ops.Usage("the workflow is given twice, as %s and as --workflow %s: give one", args[0], flag)
	}
	return args[0], nil
}

// pollNotice warns of a --poll-interval above what flow takes.
func pollNotice(w io.Writer, seconds float64) {
	if max := ops.MaxPollInterval.Seconds(); seconds > max {
		fmt.Fprintf(w, "warning: --poll-interval %s is above %gs, the longest flow waits between looks: it looks every %gs\n", strconv.FormatFloat(seconds, 'f', -1, 64), max, max)
	}
}

// envValue is what an argument that follows --env must look like for
// --env to take it: NAME=value.
var envValue = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// expandEnvArgs reads --env as agent_orchestrator does, taking the
// arguments that follow it while they look like NAME=value:
// "--env A=1 B=2" becomes "--env A=1 --env B=2". Arguments after "--"
// are left as they are.
func expandEnvArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if a != "--env" || i+1 >= len(args) {
			continue
		}
		out = append(out, args[i+1])
		i++
		for i+1 < len(args) && envValue.MatchString(args[i+1]) {
			out = append(out, "--env", args[i+1])
			i++
		}
	}
	return out
}

// unknownFlag matches the error of a flag the command does not have.
var unknownFlag = regexp.MustCompile(`^unknown flag: --([^ =]+)`)

// flagHint is a did-you-mean for an unknown flag, or "".
func flagHint(c *cobra.Command, err error) string {
	m := unknownFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s, ok := suggest.Closest(m[1], names); ok {
		return fmt.Sprintf(" (did you mean --%s?)", s)
	}
	return ""
}

// addAs adds --as, which forces the format a workflow file is read in.
func addAs(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVar(dst, "as", "", "read workflow files in this format: flow or orchestrator (agent_orchestrator's); default: detected")
}

// checkAs checks the value of --as.
func checkAs(as string) error {
	switch as {
	case "", config.FormatFlow, config.FormatOrchestrator:
		return nil
	}
	return ops.Usage("--as %q: want flow or orchestrator", strings.TrimSpace(as))
}
