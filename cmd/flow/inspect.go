package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/internal/suggest"
	"github.com/flow-run/flow/runner"
)

// statusView is what flow status --json prints: the exact run state
// (snapshot plus newer events), in run_state.json's form, with the
// derived liveness added as "liveness".
type statusView struct {
	State    *runner.State
	Liveness runner.Liveness
}

func (v statusView) MarshalJSON() ([]byte, error) {
	st, err := json.Marshal(v.State)
	if err != nil {
		return nil, err
	}
	live, err := json.Marshal(v.Liveness)
	if err != nil {
		return nil, err
	}
	out := append(st[:len(st)-1:len(st)-1], `,"liveness":`...)
	out = append(out, live...)
	return append(out, '}'), nil
}

func (a *app) statusCmd() *cobra.Command {
	var repo string
	var asJSON, watch bool
	cmd := &cobra.Command{
		Use:   "status [RUN_ID]",
		Short: "Show a run's steps and whether its runner is alive",
		Long: `status shows a run (the newest when RUN_ID is left out): each step with its status,
attempts, iteration and duration, what the run waits for, and the liveness of its
runner (spawning, working, stuck, stopped, done, stale or dead). It reads
run_state.json and applies any newer events, so it is exact while a run goes on.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := a.repoDir(repo)
			if err != nil {
				return err
			}
			if watch {
				return a.watchStatus(cmd.Context(), dir, args, asJSON)
			}
			ref, live, err := a.statusOf(dir, args)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(statusView{State: ref.State, Liveness: live})
			}
			printStatus(a.stdio.Out, ref, live)
			return nil
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository of the run (default: the current directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print run_state.json with the liveness added")
	cmd.Flags().BoolVar(&watch, "watch", false, "show the status again every second until the run ends")
	return cmd
}

// statusOf reads a run exactly and derives its liveness.
func (a *app) statusOf(dir string, args []string) (runner.RunRef, runner.Liveness, error) {
	ref, err := a.findRun(dir, args)
	if err != nil {
		return ref, runner.Liveness{}, err
	}
	if ref.Err != nil {
		fmt.Fprintf(a.stdio.Err, "warning: run %s is shown as recorded before a fault in its record: %v\n", ref.ID, ref.Err)
	}
	wf, _ := config.Load(a.fs, locateWorkflow(a.fs, ref.State, dir))
	return ref, runner.Live(a.fs, ref.Dir, ref.State, wf, time.Now(), runlock.ProcessAlive), nil
}

func (a *app) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdio.Out, "%s\n", b)
	return nil
}

// watchStatus shows a run until it is over (done, stopped or dead). On
// a terminal it redraws in place, with the last lines of the running
// sessions' output; elsewhere (or with CI=true) it prints the status
// once and then a line for each change; with --json, a JSON document
// for each change.
func (a *app) watchStatus(ctx context.Context, dir string, args []string, asJSON bool) error {
	out := a.stdio.Out
	term := !asJSON && isTerminal(out) && a.getenv("CI") != "true"
	var prev map[string]string
	for {
		ref, live, err := a.statusOf(dir, args)
		if err != nil {
			return err
		}
		cur := statusKeys(ref.State, live)
		switch {
		case term:
			fmt.Fprint(out, "\x1b[H\x1b[2J")
			printStatus(out, ref, live)
			printTails(out, a.fs, ref.State, 5)
		case asJSON:
			if !maps.Equal(prev, cur) {
				if err := a.printJSON(statusView{State: ref.State, Liveness: live}); err != nil {
					return err
				}
			}
		case prev == nil:
			printStatus(out, ref, live)
		default:
			for _, k := range slices.Sorted(maps.Keys(cur)) {
				if prev[k] != cur[k] {
					fmt.Fprintf(out, "%s %s: %s\n", time.Now().UTC().Format(time.TimeOnly), k, cur[k])
				}
			}
		}
		prev = cur
		switch live.State {
		case runner.LiveDone, runner.LiveDead, runner.LiveStopped:
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// statusKeys is what a line-by-line watch compares: each step's status,
// attempt and iteration, the run's status and the runner's liveness.
func statusKeys(st *runner.State, live runner.Liveness) map[string]string {
	m := map[string]string{"run": string(st.Status), "runner": live.State + " " + live.Hook}
	for id, s := range st.Steps {
		m["step "+id] = fmt.Sprintf("%s (attempt %d, iteration %d)", s.Status, s.Attempts, s.IterationCount)
	}
	return m
}

// printTails prints the last n lines of the output of each running
// session.
func printTails(w io.Writer, fsys afero.Fs, st *runner.State, n int) {
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		if s == nil || s.Status != runner.Running || s.LogPath == "" {
			continue
		}
		tail := runner.ReadTail(fsys, s.LogPath, 8<<10)
		if tail == "" {
			continue
		}
		lines := strings.Split(strings.TrimRight(tail, "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(w, "\n--- %s (last %d lines of %s)\n", id, len(lines), filepath.Base(s.LogPath))
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}

// printStatus prints a run for people.
func printStatus(w io.Writer, ref runner.RunRef, live runner.Liveness) {
	st := ref.State
	fmt.Fprintf(w, "run %s  workflow %s  status %s", st.RunID, st.WorkflowName, st.Status)
	if st.Status.Terminal() || st.Status == runner.RunInterrupted {
		fmt.Fprintf(w, " (exit %d)", st.ExitCode)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "runner %s", live.State)
	if live.Hook != "" {
		fmt.Fprintf(w, " [%s]", live.Hook)
	}
	fmt.Fprintf(w, ": %s\n\n", live.Reason)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tATTEMPTS\tITERATION\tDURATION\tNOTE")
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		if s == nil {
			continue
		}
		dur := "-"
		if s.StartedAt != nil {
			end := time.Now()
			if s.EndedAt != nil {
				end = s.EndedAt.Time
			}
			dur = end.Sub(s.StartedAt.Time).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", id, s.Status, s.Attempts, s.IterationCount, dur, note(s))
	}
	tw.Flush()
}

// note says why a step is where it is.
func note(s *runner.StepState) string {
	switch {
	case s.Status == runner.WaitingOnHuman && s.ManualInputPath != nil:
		return "waiting on a human: " + *s.ManualInputPath
	case s.BlockedByLoop != nil:
		return "blocked by the loop-back of " + *s.BlockedByLoop
	case s.LastError != nil:
		msg := *s.LastError
		if len(msg) > 100 {
			msg = msg[:100] + "…"
		}
		return msg
	}
	return ""
}

func (a *app) runsCmd() *cobra.Command {
	var repo string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the runs of a repository, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := a.repoDir(repo)
			if err != nil {
				return err
			}
			runs, err := runner.ListRuns(a.fs, dir)
			if err != nil {
				return err
			}
			type row struct {
				RunID     string `json:"run_id"`
				Workflow  string `json:"workflow_name"`
				Status    string `json:"status"`
				ExitCode  int    `json:"exit_code"`
				CreatedAt string `json:"created_at"`
				UpdatedAt string `json:"updated_at"`
				Dir       string `json:"dir"`
				Error     string `json:"error,omitempty"`
			}
			rows := []row{}
			for _, r := range runs {
				x := row{RunID: r.ID, Dir: r.Dir}
				if r.Err != nil {
					x.Error = r.Err.Error()
				} else {
					x.Workflow, x.Status, x.ExitCode = r.State.WorkflowName, string(r.State.Status), r.State.ExitCode
					if r.State.CreatedAt != nil {
						x.CreatedAt = r.State.CreatedAt.String()
					}
					if r.State.UpdatedAt != nil {
						x.UpdatedAt = r.State.UpdatedAt.String()
					}
				}
				rows = append(rows, x)
			}
			if asJSON {
				b, _ := json.MarshalIndent(rows, "", "  ")
				fmt.Fprintf(a.stdio.Out, "%s\n", b)
				return nil
			}
			if len(rows) == 0 {
				fmt.Fprintf(a.stdio.Out, "no runs in %s\n", runner.RunsDir(dir))
				return nil
			}
			tw := tabwriter.NewWriter(a.stdio.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tWORKFLOW\tSTATUS\tCREATED\tUPDATED")
			for _, r := range rows {
				if r.Error != "" {
					fmt.Fprintf(tw, "%s\t?\tunreadable: %s\t\t\n", r.RunID, r.Error)
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.RunID, r.Workflow, r.Status, r.CreatedAt, r.UpdatedAt)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository (default: the current directory)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as a JSON array")
	return cmd
}

func (a *app) logsCmd() *cobra.Command {
	var repo string
	var follow, all bool
	cmd := &cobra.Command{
		Use:   "logs RUN_ID STEP",
		Short: "Print the output of a step's latest session",
		Long: `logs prints the output of the latest session of STEP (logs/<step>.<iteration>.<attempt>.log);
--all prints every session of the step in order, --follow keeps printing while the
session runs.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, ref, err := a.openRun(repo, args[:1])
			if err != nil {
				return err
			}
			step := args[1]
			if ref.State.Steps[step] == nil && step != "cleanup" {
				return usageError("run %s has no step %q; its steps: %s", ref.ID, step, strings.Join(ref.State.StepOrder, ", "))
			}
			logs, err := stepLogs(a.fs, ref.Dir, step)
			if err != nil {
				return err
			}
			if len(logs) == 0 {
				if s := ref.State.Steps[step]; s != nil && s.StartedAt != nil {
					// A session that prints nothing leaves no log.
					fmt.Fprintf(a.stdio.Err, "step %s of run %s printed no output\n", step, ref.ID)
					return nil
				}
				return runner.Refused("step %s of run %s has not run yet", step, ref.ID)
			}
			if !all {
				logs = logs[len(logs)-1:]
			}
			for i, l := range logs {
				if all {
					fmt.Fprintf(a.stdio.Out, "==> %s <==\n", filepath.Base(l))
				}
				if follow && i == len(logs)-1 {
					return a.follow(cmd.Context(), ref, dir, step, l)
				}
				b, err := afero.ReadFile(a.fs, l)
				if err != nil {
					return err
				}
				a.stdio.Out.Write(b)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository (default: the current directory)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing the output while the session runs")
	cmd.Flags().BoolVar(&all, "all", false, "print every session of the step, oldest first")
	return cmd
}

// stepLogs returns the session logs of a step, oldest first.
func stepLogs(fsys afero.Fs, runDir, step string) ([]string, error) {
	matches, err := afero.Glob(fsys, filepath.Join(runDir, runner.LogsDir, step+".*.log"))
	if err != nil {
		return nil, err
	}
	type key struct{ it, at int }
	keys := map[string]key{}
	var logs []string
	for _, m := range matches {
		var k key
		rest := strings.TrimPrefix(filepath.Base(m), step+".")
		if n, _ := fmt.Sscanf(rest, "%d.%d.log", &k.it, &k.at); n != 2 && step != "cleanup" {
			continue
		}
		if strings.HasSuffix(m, ".check.log") {
			continue
		}
		keys[m] = k
		logs = append(logs, m)
	}
	sort.Slice(logs, func(i, j int) bool {
		a, b := keys[logs[i]], keys[logs[j]]
		if a.it != b.it {
			return a.it < b.it
		}
		return a.at < b.at
	})
	return logs, nil
}

// follow prints a log as it grows until its step stops running.
func (a *app) follow(ctx context.Context, ref runner.RunRef, repo, step, path string) error {
	var off int64
	for {
		f, err := a.fs.Open(path)
		if err == nil {
			if _, err := f.Seek(off, io.SeekStart); err == nil {
				n, _ := io.Copy(a.stdio.Out, f)
				off += n
			}
			f.Close()
		}
		st, _, err := runner.LoadState(a.fs, ref.Dir, false, time.Now())
		if err != nil {
			return err
		}
		s := st.Steps[step]
		if s == nil || s.Status != runner.Running || s.LogPath != path {
			// One last read for output written before the end.
			if f, err := a.fs.Open(path); err == nil {
				f.Seek(off, io.SeekStart)
				io.Copy(a.stdio.Out, f)
				f.Close()
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (a *app) approveCmd() *cobra.Command {
	var repo, by string
	var inputs []string
	cmd := &cobra.Command{
		Use:   "approve RUN_ID STEP",
		Short: "Approve a human step that waits",
		Long: `approve writes the step's manual input file ({"approved": true, ...}); the runner
waiting on it goes on within a second, or flow resume goes on after a --no-wait
run. --input k=v values are available to later expressions as steps.<id>.input.`,
		Example: "  flow approve 20250115-143000-f8c1a4 manual_approval --by alice --input ticket=OPS-12",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := runner.HumanInput{Approved: true, By: who(by), Input: map[string]any{}}
			for _, kv := range inputs {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageError("--input %q: want key=value", kv)
				}
				in.Input[k] = v
			}
			return a.decide(repo, args, in)
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository (default: the current directory)")
	cmd.Flags().StringVar(&by, "by", "", "who approves (default: $USER)")
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "input for later steps: --input key=value (repeatable)")
	return cmd
}

func (a *app) rejectCmd() *cobra.Command {
	var repo, by, reason string
	cmd := &cobra.Command{
		Use:   "reject RUN_ID STEP --reason TEXT",
		Short: "Reject a human step that waits: it fails, or loops back",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return usageError("reject needs --reason\ntry: flow reject %s %s --reason 'why'", args[0], args[1])
			}
			return a.decide(repo, args, runner.HumanInput{Approved: false, By: who(by), Reason: reason})
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository (default: the current directory)")
	cmd.Flags().StringVar(&by, "by", "", "who rejects (default: $USER)")
	cmd.Flags().StringVar(&reason, "reason", "", "why (required)")
	return cmd
}

func (a *app) decide(repo string, args []string, in runner.HumanInput) error {
	_, ref, err := a.openRun(repo, args[:1])
	if err != nil {
		return err
	}
	if ref.State.Steps[args[1]] == nil {
		msg := fmt.Sprintf("run %s has no step %q", ref.ID, args[1])
		if s, ok := suggest.Closest(args[1], ref.State.StepOrder); ok {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return usageError("%s; its steps: %s", msg, strings.Join(ref.State.StepOrder, ", "))
	}
	already, err := runner.Decide(a.fs, ref.Dir, args[1], in, time.Now())
	if err != nil {
		return &exitError{code: int(runner.CodeOf(err)), err: err}
	}
	verb := "approved"
	if !in.Approved {
		verb = "rejected"
	}
	if already != nil {
		by := ""
		if already.Already.By != "" {
			by = " by " + already.Already.By
		}
		fmt.Fprintf(a.stdio.Out, "%s of run %s was already %s%s at %s; nothing changed\n", args[1], ref.ID, verb, by, already.Already.At)
		return nil
	}
	fmt.Fprintf(a.stdio.Out, "%s %s of run %s\n", verb, args[1], ref.ID)
	return nil
}

func who(by string) string {
	if by != "" {
		return by
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

func (a *app) controlCmd(name string, state runner.ControlState, short string) *cobra.Command {
	var repo, note string
	cmd := &cobra.Command{
		Use:   name + " [RUN_ID]",
		Short: short,
		Long: short + `.
It writes desired_state in the run's control.json; the runner reads it between
sessions and never interrupts one.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, ref, err := a.openRun(repo, args)
			if err != nil {
				return err
			}
			if ref.State.Status.Terminal() {
				return runner.Refused("run %s has already %s (exit %d); %s applies to a run that has not ended; to run steps again: flow run %s --start-at-step STEP",
					ref.ID, ref.State.Status, ref.State.ExitCode, name, ref.State.WorkflowFile)
			}
			if err := runner.SetDesired(a.fs, ref.Dir, state, who(""), note, time.Now()); err != nil {
				return &exitError{code: int(runner.CodeOf(err)), err: err}
			}
			fmt.Fprintf(a.stdio.Out, "run %s: desired state %s\n", ref.ID, state)
			return nil
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "repository (default: the current directory)")
	cmd.Flags().StringVar(&note, "note", "", "a note kept in control.json")
	return cmd
}
