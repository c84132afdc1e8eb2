package record

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/flow-run/flow/runner/core"
)

// Summary renders run-summary.md: the run at a glance, for people.
func Summary(st *core.State) string {
	var b strings.Builder
	WriteSummary(&b, st)
	return b.String()
}

// WriteSummary writes what Summary returns to b.
func WriteSummary(b io.Writer, st *core.State) { WriteSummaryTrail(b, st, nil) }

// WriteSummaryTrail writes run-summary.md to b: the run at a glance,
// then, with a Trail, why it last stopped, its restarts and
// interruptions, and the rounds of its steps.
func WriteSummaryTrail(b io.Writer, st *core.State, t *Trail) {
	fmt.Fprintf(b, "# Run %s\n\n", st.RunID)
	fmt.Fprintf(b, "- workflow: %s (`%s`)\n", st.WorkflowName, st.WorkflowFile)
	fmt.Fprintf(b, "- status: **%s**", st.Status)
	if st.Status.Terminal() || st.Status == core.RunInterrupted || st.Status == core.RunBudgetExceeded {
		fmt.Fprintf(b, " (exit %d)", st.ExitCode)
	}
	io.WriteString(b, "\n")
	if st.CreatedAt != nil {
		fmt.Fprintf(b, "- created: %s\n", st.CreatedAt)
	}
	if st.UpdatedAt != nil {
		fmt.Fprintf(b, "- updated: %s\n", st.UpdatedAt)
	}
	if t != nil && t.stop != "" {
		fmt.Fprintf(b, "- stopped: %s\n", cutText(t.stop))
	}
	fmt.Fprintf(b, "- repo: `%s`\n\n", st.RepoDir)
	io.WriteString(b, "| step | status | attempts | iteration | note |\n|---|---|---|---|---|\n")
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		if s == nil {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %d | %d | %s |\n", id, s.Status, s.Attempts, s.IterationCount, MarkdownCell(stepNote(s)))
	}
	t.write(b, st)
	io.WriteString(b, "\nDetails: `run_state.json` (snapshot), `events.jsonl` (every change), `logs/` (session output).\n")
}

// stepNote is the one-line explanation of a step's status: a loop's
// begins with how far its items got.
func stepNote(s *core.StepState) string {
	if p, ok := ItemsProgress(s); ok {
		note := p.String()
		if s.LastError != nil {
			note += ": " + *s.LastError
		} else if s.Status == core.Skipped && s.SkipReason != "" {
			note += ": " + s.SkipReason
		}
		return note
	}
	switch {
	case s.Status == core.WaitingOnHuman:
		return "waiting on a human: " + deref(s.ManualInputPath)
	case s.WaitingFor != nil && s.Status == core.Pending:
		return "waiting for " + s.WaitingFor.String()
	case len(s.WaitingGates) > 0 && s.Status == core.Pending:
		return "waiting for gates to open: " + strings.Join(s.WaitingGates, ", ")
	case s.BlockedByLoop != nil:
		return "blocked by the loop-back of " + *s.BlockedByLoop
	case s.LastError != nil:
		return *s.LastError
	case s.Status == core.Skipped:
		return s.SkipReason
	}
	return ""
}

// lineEnds makes each line end of a cell one space. One Replacer for
// all cells: run-summary.md is written with every snapshot, a cell a
// step, and a Replacer built per cell was most of a large run's garbage.
var lineEnds = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// MarkdownCell makes s one cell of a Markdown table, for run-summary.md
// and a CI job's summary: | escaped, line ends made spaces, cut after
// 200 bytes at a character's start (never inside one) with an ellipsis.
func MarkdownCell(s string) string {
	if strings.ContainsAny(s, "|\r\n") {
		s = strings.ReplaceAll(s, "|", `\|`)
		s = lineEnds.Replace(s)
	}
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// LoopProgress is how far a for_each step has got with its items.
type LoopProgress struct {
	Items     int `json:"items"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Running   int `json:"running"`
	Removed   int `json:"removed"`
	// Waiting counts the instances waiting on a human (ItemsProgress
	// leaves it 0: it reads the loop step alone).
	Waiting int `json:"waiting"`
}

// String says it as flow status does: "3/7 items, 1 failed, 2 running".
func (p LoopProgress) String() string {
	s := fmt.Sprintf("%d/%d items", p.Completed+p.Failed, p.Items)
	if p.Failed > 0 {
		s += fmt.Sprintf(", %d failed", p.Failed)
	}
	if p.Running > 0 {
		s += fmt.Sprintf(", %d running", p.Running)
	}
	if p.Waiting > 0 {
		s += fmt.Sprintf(", %d waiting on a human", p.Waiting)
	}
	if p.Removed > 0 {
		s += fmt.Sprintf(", %d removed", p.Removed)
	}
	return s
}

// ItemsProgress counts the items of loop step s by their status; ok is
// false for a step that is not a loop, or a loop whose items are not
// known yet.
func ItemsProgress(s *core.StepState) (p LoopProgress, ok bool) {
	if s == nil || s.LoopIndex == nil {
		return p, false
	}
	p.Items, p.Removed = len(s.Items), len(s.RemovedItems)
	for _, it := range s.Items {
		switch it.Status {
		case core.Completed:
			p.Completed++
		case core.Failed:
			p.Failed++
		case core.Running:
			p.Running++
		}
	}
	return p, true
}
