package runner

import (
	"fmt"
	"io"
	"strings"
)

// Summary renders run-summary.md: the run at a glance, for people.
func Summary(st *State) string {
	var b strings.Builder
	writeSummary(&b, st)
	return b.String()
}

// writeSummary writes what Summary returns to b.
func writeSummary(b io.Writer, st *State) {
	fmt.Fprintf(b, "# Run %s\n\n", st.RunID)
	fmt.Fprintf(b, "- workflow: %s (`%s`)\n", st.WorkflowName, st.WorkflowFile)
	fmt.Fprintf(b, "- status: **%s**", st.Status)
	if st.Status.Terminal() || st.Status == RunInterrupted || st.Status == RunBudgetExceeded {
		fmt.Fprintf(b, " (exit %d)", st.ExitCode)
	}
	io.WriteString(b, "\n")
	if st.CreatedAt != nil {
		fmt.Fprintf(b, "- created: %s\n", st.CreatedAt)
	}
	if st.UpdatedAt != nil {
		fmt.Fprintf(b, "- updated: %s\n", st.UpdatedAt)
	}
	fmt.Fprintf(b, "- repo: `%s`\n\n", st.RepoDir)
	io.WriteString(b, "| step | status | attempts | iteration | note |\n|---|---|---|---|---|\n")
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		if s == nil {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %s |\n", id, s.Status, s.Attempts, s.IterationCount, mdEscape(stepNote(s)))
	}
	io.WriteString(b, "\nDetails: `run_state.json` (snapshot), `events.jsonl` (every change), `logs/` (session output).\n")
}

// stepNote is the one-line explanation of a step's status.
func stepNote(s *StepState) string {
	switch {
	case s.Status == WaitingOnHuman:
		return "waiting on a human: " + deref(s.ManualInputPath)
	case s.WaitingFor != nil && s.Status == Pending:
		return "waiting for " + *s.WaitingFor
	case len(s.WaitingGates) > 0 && s.Status == Pending:
		return "waiting for gates to open: " + strings.Join(s.WaitingGates, ", ")
	case s.BlockedByLoop != nil:
		return "blocked by the loop-back of " + *s.BlockedByLoop
	case s.LastError != nil:
		return *s.LastError
	}
	return ""
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
