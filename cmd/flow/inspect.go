package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/termsafe"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
)

func (a *app) statusCmd() *cobra.Command {
	var repo string
	var asJSON, watch, items, notifyDead bool
	cmd := &cobra.Command{
		Use:   "status [RUN_ID]",
		Short: "Show a run's steps and whether its runner is alive",
		Long: `status shows a run (the newest when RUN_ID is left out): each step with its status,
attempts, iteration and duration, what the run waits for, and the liveness of its
runner (spawning, working, stuck, stopped, done, stale or dead). A for_each loop is
one row with its progress; --items adds a row per instance (loop[key].step). It
reads run_state.json and applies any newer events, so it is exact while a run goes on.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if notifyDead && !watch {
				return ops.Usage("--notify-dead watches the run: flow status --watch --notify-dead")
			}
			a.svc.NotifyDead = notifyDead
			if watch {
				return a.watchStatus(cmd.Context(), repo, argOr(args), asJSON, items)
			}
			st, err := a.engine().Status(cmd.Context(), repo, argOr(args))
			if err != nil {
				return err
			}
			a.warnFault(st)
			if asJSON {
				return a.printJSON(st)
			}
			printStatus(a.stdio.Out, st, items)
			return nil
		},
	}
	cmd.Flags().BoolVar(&items, "items", false, "show each instance of a for_each loop's body, item by item")
	cmd.Flags().StringVar(&repo, "repo", "", "repository of the run "+repoDefault)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print run_state.json with the liveness added")
	cmd.Flags().BoolVar(&watch, "watch", false, "show the status again every second until the run ends")
	cmd.Flags().BoolVar(&notifyDead, "notify-dead", false, "with --watch: tell the notifiers of the run's workflow (notify.on: [dead]) if its runner dies; without it, reading a run never runs anything")
	return cmd
}

// warnFault says on stderr that a run is shown as recorded before a
// fault in its record.
func (a *app) warnFault(st ops.Status) {
	if st.Fault != "" {
		fmt.Fprintf(a.stdio.Err, "warning: run %s is shown as recorded before a fault in its record: %s\n", st.State.RunID, st.Fault)
	}
}

func (a *app) printJSON(v any) error {
	if s, ok := v.(interface{ WriteIndented(io.Writer) error }); ok {
		// A run's status, megabytes for a large run, is written as
		// it is encoded.
		w := bufio.NewWriterSize(a.stdio.Out, 64<<10)
		if err := s.WriteIndented(w); err != nil {
			return err
		}
		if err := w.WriteByte('\n'); err != nil {
			return err
		}
		return w.Flush()
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdio.Out, "%s\n", b)
	return nil
}

// watchStatus shows a run until it is over (done, stopped or dead). On
// a terminal it redraws in place, with the last lines of the running
// sessions' output; elsewhere (or in CI, see inCI) it prints the status
// once and then a line for each change; with --json, one JSON object
// per line, {"type":"status",...}, for each change.
func (a *app) watchStatus(ctx context.Context, repo, runID string, asJSON, items bool) error {
	term, show := a.statusWatcher(asJSON, items)
	return a.engine().Watch(ctx, repo, runID, watchOptions(term), show)
}

// watchOptions are a watch's: on a terminal, every look, with the last
// lines of the running sessions' output.
func watchOptions(term bool) ops.WatchOptions {
	opts := ops.WatchOptions{Every: term}
	if term {
		opts.Tails = 5
	}
	return opts
}

// statusWatcher returns how a watch shows its updates, and whether it
// redraws a terminal (and so wants every look, not only changes).
func (a *app) statusWatcher(asJSON, items bool) (bool, func(ops.Update) error) {
	out := a.stdio.Out
	term := !asJSON && isTerminal(out) && !a.inCI()
	return term, func(u ops.Update) error {
		a.warnFault(*u.Status)
		switch {
		case term:
			fmt.Fprint(out, "\x1b[H\x1b[2J")
			printStatus(out, *u.Status, items)
			printTails(out, u.Tails)
		case asJSON:
			b, err := json.Marshal(u)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%s\n", b)
		case u.First:
			printStatus(out, *u.Status, items)
		default:
			for _, c := range u.Changes {
				fmt.Fprintf(out, "%s %s: %s\n", u.Status.At.UTC().Format(time.TimeOnly), c.Key, termsafe.Escape(c.Value))
			}
		}
		return nil
	}
}

// printTails prints the last lines of the output of each running
// session.
func printTails(w io.Writer, tails []ops.Tail) {
	for _, t := range tails {
		fmt.Fprintf(w, "\n--- %s (last %d lines of %s)\n", t.Step, len(t.Lines), t.Log)
		for _, l := range t.Lines {
			fmt.Fprintf(w, "  %s\n", termsafe.Escape(l))
		}
	}
}

// printStatus prints a run for people. The table of a run of
// thousands of steps is written through one buffer, not a write per
// cell.
func printStatus(out io.Writer, v ops.Status, items bool) {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	st, live := v.State, v.Liveness
	fmt.Fprintf(w, "run %s  workflow %s  status %s", st.RunID, termsafe.Escape(st.WorkflowName), st.Status)
	if st.Status.Terminal() || st.Status == core.RunInterrupted || st.Status == core.RunBudgetExceeded {
		fmt.Fprintf(w, " (exit %d)", st.ExitCode)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "runner %s", live.State)
	if !live.Hook.IsZero() {
		fmt.Fprintf(w, " [%s]", live.Hook)
	}
	fmt.Fprintf(w, ": %s\n", termsafe.Escape(live.Reason))
	// Usage columns appear when the run's agents reported any.
	withUsage := st.Usage != nil
	if withUsage {
		fmt.Fprintf(w, "usage %s\n", usageText(st.Usage))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if withUsage {
		fmt.Fprintln(tw, "STEP\tSTATUS\tATTEMPTS\tITERATION\tDURATION\tTOKENS\tCOST\tNOTE")
	} else {
		fmt.Fprintln(tw, "STEP\tSTATUS\tATTEMPTS\tITERATION\tDURATION\tNOTE")
	}
	var row []byte
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		if s == nil || !items && id.IsInstance() {
			continue
		}
		indent := ""
		if items && id.IsInstance() {
			indent = "  "
		}
		dur := "-"
		if s.StartedAt != nil {
			end := v.At
			if s.EndedAt != nil {
				end = s.EndedAt.Time
			}
			dur = end.Sub(s.StartedAt.Time).Round(time.Millisecond).String()
		}
		n := note(s)
		if p, ok := ops.Progress(st, id.Step); ok && !id.IsInstance() {
			n = strings.TrimSuffix(p.String()+"; "+n, "; ")
		}
		// The row is built in one reused buffer: thousands of rows
		// through fmt cost more than reading the run.
		row, _ = id.AppendText(append(row[:0], indent...))
		row = append(append(row, '\t'), s.Status...)
		row = strconv.AppendInt(append(row, '\t'), int64(s.Attempts), 10)
		row = strconv.AppendInt(append(row, '\t'), int64(s.IterationCount), 10)
		row = append(append(row, '\t'), dur...)
		if withUsage {
			tokens, cost := "-", "-"
			if u := s.Usage; u != nil {
				tokens, cost = strconv.FormatInt(u.Tokens(), 10), costText(u)
			}
			row = append(append(append(append(row, '\t'), tokens...), '\t'), cost...)
		}
		row = append(append(append(row, '\t'), n...), '\n')
		_, _ = tw.Write(row)
	}
	tw.Flush()
	printWorkspaces(w, st)
}

// usageText says what a run's agents consumed: "3 sessions, 12 turns,
// 5200 tokens in (3100 cached), 900 out, $0.42".
func usageText(u *core.AgentUsage) string {
	return fmt.Sprintf("%d %s, %d turns, %d tokens in (%d cached), %d out, %s", u.Sessions, plural(u.Sessions, "session", "sessions"),
		u.Turns, u.TokensIn, u.TokensCached, u.TokensOut, costText(u))
}

// costText writes a cost in USD, "~" marking one estimated from the
// workflow's prices.
func costText(u *core.AgentUsage) string {
	c := fmt.Sprintf("$%.2f", u.CostUSD)
	if u.CostUSD > 0 && u.CostUSD < 0.01 {
		c = fmt.Sprintf("$%.4f", u.CostUSD)
	}
	if u.CostEstimated {
		c = "~" + c
	}
	return c
}

// note says why a step is where it is.
func note(s *core.StepState) string {
	switch {
	case s.Status == core.WaitingOnHuman && s.ManualInputPath != nil:
		return "waiting on a human: " + *s.ManualInputPath
	case s.WaitingFor != nil && s.Status == core.Pending:
		return "waiting for " + s.WaitingFor.String()
	case len(s.WaitingGates) > 0 && s.Status == core.Pending:
		return "waiting for gates to open: " + strings.Join(s.WaitingGates, ", ")
	case s.BlockedByLoop != nil:
		return "blocked by the loop-back of " + *s.BlockedByLoop
	case s.LastError != nil || s.Status == core.Skipped && s.SkipReason != "":
		msg := s.SkipReason
		if s.LastError != nil {
			msg = *s.LastError
		}
		// A failed session's error ends with its last lines of output.
		msg = strings.ReplaceAll(msg, "\n", " / ")
		if len(msg) > 100 {
			msg = msg[:100] + "…"
		}
		return termsafe.Escape(msg)
	}
	return ""
}

func (a *app) runsCmd() *cobra.Command {
	var repo string
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "runs [--all]",
		Short: "List the runs of a repository, newest first",
		Long: `runs lists the runs recorded in the repository (.agents/runs/), newest first.
--all adds the runs flow prune removed, from the history of finished runs
(.agents/history.jsonl), marked (pruned).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := a.svc.ListRuns(repo)
			if all {
				list, err = a.svc.ListAllRuns(repo)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(list.Runs)
			}
			if len(list.Runs) == 0 {
				fmt.Fprintf(a.stdio.Out, "no runs in %s\n", list.RunsDir)
				return nil
			}
			out := bufio.NewWriterSize(a.stdio.Out, 64<<10)
			if err := printRuns(out, list.Runs); err != nil {
				return err
			}
			return out.Flush()
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository "+repoDefault)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as a JSON array")
	cmd.Flags().BoolVar(&all, "all", false, "list the pruned runs too, from .agents/history.jsonl")
	return cmd
}

// runHead is the header of the table of runs, the cost column last.
var runHead = []string{"RUN", "WORKFLOW", "STATUS", "CREATED", "UPDATED", "COST"}

// runCells fills cells with the row of a run that could be read, and
// returns it: its cost when withCost. A workflow's name is the file's:
// it may hold what acts on a terminal.
func runCells(r ops.RunSummary, withCost bool, cells *[6]string) []string {
	status := r.Status
	if r.Pruned {
		status += " (pruned)"
	}
	*cells = [6]string{r.RunID, termsafe.Escape(r.Workflow), status, r.CreatedAt, r.UpdatedAt, "-"}
	if !withCost {
		return cells[:5]
	}
	if r.Usage != nil {
		cells[5] = costText(r.Usage)
	}
	return cells[:6]
}

// runRows returns the table of runs flow runs prints, a row per run
// under a header; a run that cannot be read is a row of its own shape.
// A cost column is there when some run's agents reported usage.
func runRows(runs []ops.RunSummary) [][]string {
	withCost := slices.ContainsFunc(runs, func(r ops.RunSummary) bool { return r.Usage != nil })
	head := runHead[:5]
	if withCost {
		head = runHead
	}
	rows := [][]string{head}
	for _, r := range runs {
		if r.Error != "" {
			rows = append(rows, []string{r.RunID, "?", "unreadable: " + termsafe.Escape(r.Error), "", ""})
			continue
		}
		var cells [6]string
		rows = append(rows, slices.Clone(runCells(r, withCost, &cells)))
	}
	return rows
}

// printRuns prints the table of runs, its columns two spaces apart, as
// text/tabwriter aligns them. When every run could be read (the rows
// have the same cells) it aligns them itself, in two passes over the
// runs, holding no row: flow runs of 10,000 runs spent a third of its
// memory in tabwriter's copies of the cells.
func printRuns(w *bufio.Writer, runs []ops.RunSummary) error {
	if slices.ContainsFunc(runs, func(r ops.RunSummary) bool { return r.Error != "" }) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, row := range runRows(runs) {
			io.WriteString(tw, strings.Join(row, "\t")+"\n")
		}
		return tw.Flush()
	}
	withCost := slices.ContainsFunc(runs, func(r ops.RunSummary) bool { return r.Usage != nil })
	head := runHead[:5]
	if withCost {
		head = runHead
	}
	last := len(head) - 1
	width := make([]int, last)
	var cells [6]string
	measure := func(row []string) {
		for c := range last {
			width[c] = max(width[c], utf8.RuneCountInString(row[c]))
		}
	}
	measure(head)
	for _, r := range runs {
		measure(runCells(r, withCost, &cells))
	}
	const pad = "                                                                "
	write := func(row []string) {
		for c := range last {
			w.WriteString(row[c])
			for n := width[c] + 2 - utf8.RuneCountInString(row[c]); n > 0; n -= len(pad) {
				w.WriteString(pad[:min(n, len(pad))])
			}
		}
		w.WriteString(row[last])
		w.WriteByte('\n')
	}
	write(head)
	for _, r := range runs {
		write(runCells(r, withCost, &cells))
	}
	return nil
}

func (a *app) logsCmd() *cobra.Command {
	var repo string
	var follow, all, asJSON bool
	cmd := &cobra.Command{
		Use:   "logs [RUN_ID] [STEP]",
		Short: "Print the output of a step's latest session",
		Long: `logs prints the output of the latest session of STEP (logs/<step>.<iteration>.<attempt>.log);
--all prints every session of the step in order, --follow keeps printing while the
session runs. A RUN_ID left out means the most recently active run: flow logs STEP.
Given no STEP, it lists the run's steps. A run on Temporal keeps the tail of each
step's last session: without a STEP, every step's. --json prints JSON Lines:
{"run_id", "step", "log", "iteration", "attempt", "offset", "text"} for each piece
of a log, in order, then one line whose "end" says how the step stands ({"status",
"exit_code", "error"}).`,
		Example: "  flow logs 20250115-143000-f8c1a4 tests\n  flow logs tests --all\n  flow logs tests --follow",
		Args:    cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			step, err := stepAt(args, 1)
			if err != nil {
				return err
			}
			req := ops.LogsRequest{Repo: repo, RunID: argAt(args, 0), Step: step, All: all, Follow: follow, JSON: asJSON}
			if asJSON || !isTerminal(a.stdio.Out) {
				return a.engine().Logs(cmd.Context(), req, a.stdio.Out, a.stdio.Err)
			}
			// On a terminal, a session's output keeps its colours but
			// cannot move the cursor, set the title or the clipboard.
			tw := termsafe.NewWriter(a.stdio.Out)
			err = a.engine().Logs(cmd.Context(), req, tw, a.stdio.Err)
			if ferr := tw.Flush(); err == nil {
				err = ferr
			}
			return err
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository "+repoDefault)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing the output while the session runs")
	cmd.Flags().BoolVar(&all, "all", false, "print every session of the step, oldest first")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON Lines: the logs' pieces, then how the step stands")
	return cmd
}

func (a *app) approveCmd() *cobra.Command {
	var repo, by string
	var inputs []string
	cmd := &cobra.Command{
		Use:   "approve [RUN_ID] STEP",
		Short: "Approve a human step that waits",
		Long: `approve writes the step's manual input file ({"approved": true, ...}); the runner
waiting on it goes on within a second, or flow resume goes on after a --no-wait
run. --input k=v values are available to later expressions as steps.<id>.input.
Without RUN_ID it takes the one run of the repository that has not finished, when
there is exactly one; given no STEP, it lists the run's steps that wait.`,
		Example: "  flow approve 20250115-143000-f8c1a4 manual_approval --by alice --input ticket=OPS-12\n  flow approve manual_approval",
		Args:    cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := ops.ParseInputs(inputs)
			if err != nil {
				return err
			}
			step, err := stepAt(args, 1)
			if err != nil {
				return err
			}
			// One argument is the run or the step (ops.DecideRequest).
			return a.decide(cmd.Context(), ops.DecideRequest{Repo: repo, RunID: argAt(args, 0), Step: step, Approve: true, By: by, Input: in})
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository "+repoDefault)
	cmd.Flags().StringVar(&by, "by", "", "who approves (default: $USER, else the OS user name)")
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "input for later steps: --input key=value (repeatable)")
	return cmd
}

func (a *app) rejectCmd() *cobra.Command {
	var repo, by, reason string
	cmd := &cobra.Command{
		Use:   "reject [RUN_ID] STEP --reason TEXT",
		Short: "Reject a human step that waits: it fails, or loops back",
		Long: `reject writes the step's manual input file ({"approved": false, "reason": ...}): the
step fails, or loops back when its gate says so. Without RUN_ID it takes the one run
of the repository that has not finished, when there is exactly one; given no STEP,
it lists the run's steps that wait.`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			step, err := stepAt(args, 1)
			if err != nil {
				return err
			}
			return a.decide(cmd.Context(), ops.DecideRequest{Repo: repo, RunID: argAt(args, 0), Step: step, By: by, Reason: reason})
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository "+repoDefault)
	cmd.Flags().StringVar(&by, "by", "", "who rejects (default: $USER, else the OS user name)")
	cmd.Flags().StringVar(&reason, "reason", "", "why (required)")
	return cmd
}

func (a *app) decide(ctx context.Context, req ops.DecideRequest) error {
	if err := a.outsideSession(req.Approve, "approve", "reject"); err != nil {
		return err
	}
	if req.By == "" {
		req.By = a.svc.Who("")
	}
	d, err := a.engine().Decide(ctx, req)
	if err != nil {
		return err
	}
	verb := "approved"
	if !d.Approved {
		verb = "rejected"
	}
	if d.Already {
		by := ""
		if d.By != "" {
			by = " by " + d.By
		}
		fmt.Fprintf(a.stdio.Out, "%s of run %s was already %s%s at %s; nothing changed\n", d.Step, d.RunID, verb, by, d.At)
		return nil
	}
	fmt.Fprintf(a.stdio.Out, "%s %s of run %s\n", verb, d.Step, d.RunID)
	return nil
}

func (a *app) controlCmd(name string, state core.ControlState, short string) *cobra.Command {
	var repo, note string
	cmd := &cobra.Command{
		Use:   name + " [RUN_ID]",
		Short: short,
		Long: short + `.
It writes desired_state in the run's control.json; the runner reads it between
sessions and never interrupts one.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.outsideSession(true, name, name); err != nil {
				return err
			}
			res, err := a.engine().Control(cmd.Context(), ops.ControlRequest{Repo: repo, RunID: argOr(args), State: state, Note: note})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdio.Out, "run %s: desired state %s\n", res.RunID, res.DesiredState)
			if c := res.Cleanup; c != nil {
				// A finished run's cleanup session ran here.
				if c.ExitCode != 0 {
					return exitQuietly(c.ExitCode)
				}
				return nil
			}
			if !res.RunnerLive && state != core.Pause {
				fmt.Fprintf(a.stdio.Out, "run %s has no live runner; it also needs: flow resume %s\n", res.RunID, res.RunID)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository "+repoDefault)
	cmd.Flags().StringVar(&note, "note", "", "a note kept in control.json")
	return cmd
}

func (a *app) cancelCmd() *cobra.Command {
	var repo, by string
	cmd := &cobra.Command{
		Use:   "cancel RUN_ID",
		Short: "Stop a run's sessions and record it interrupted (resumable)",
		Long: `cancel stops a run as an interrupt of its runner would: the runner signals its
sessions, gives them 10 s, records the run interrupted and exits 130. The run can
be resumed (flow resume RUN_ID). A run no runner holds has nothing to stop.`,
		Example: "  flow cancel 20250115-143000-f8c1a4",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.outsideSession(true, "cancel", "cancel"); err != nil {
				return err
			}
			res, err := a.engine().Cancel(cmd.Context(), ops.CancelRequest{Repo: repo, RunID: args[0], By: by})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdio.Out, "run %s: asked %s to stop; it records the run interrupted (flow resume %s goes on)\n", res.RunID, res.Runner, res.RunID)
			return nil
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository "+repoDefault)
	cmd.Flags().StringVar(&by, "by", "", "who cancels (default: $USER, else the OS user name)")
	return cmd
}

// outsideSession refuses a command that decides or steers a run when
// it runs inside a flow session (its environment carries the session
// marker, proc.MarkerVar): a session must not open its own gate. It is
// a courtesy that catches the honest mistake; what keeps a session
// from deciding is the sandbox (docs/security.md).
func (a *app) outsideSession(first bool, name, other string) error {
	if !first {
		name = other
	}
	if id := a.svc.Getenv(proc.MarkerVar); id != "" {
		return ops.Refused("flow %s refuses to run inside a flow session (%s is set): a session does not decide or steer the run it is part of; a person does, from outside", name, proc.MarkerVar)
	}
	return nil
}

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}
