package retention

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flow-run/flow/internal/suggest"
	"github.com/flow-run/flow/runner/core"
)

// Policy says which finished runs go.
type Policy struct {
	// Keep is how many of the newest runs (by creation) of each
	// workflow, among those of Statuses, stay whatever their age; 0 or
	// less keeps none for being new.
	Keep int
	// OlderThan, when above 0, keeps the runs that ended less than
	// OlderThan ago, whatever their number.
	OlderThan time.Duration
	// Statuses are the statuses of the runs that may go; none means
	// completed only.
	Statuses []core.RunStatus
	// Workflow, when set, limits the policy to the runs of one
	// workflow.
	Workflow string
}

// Prunable are the statuses a run may be removed in: finished, or
// stopped with no runner. Any other run has not finished (pending,
// running, paused) or waits on a human.
var Prunable = []core.RunStatus{core.RunCompleted, core.RunFailed, core.RunInterrupted, core.RunBudgetExceeded}

// ParseStatuses reads the statuses of a --status flag: names of
// Prunable, each given once, in any order, and returns them in the
// order of Prunable. A status that is never pruned, or unknown, is an
// ExitUsage error that says why.
func ParseStatuses(names []string) ([]core.RunStatus, error) {
	seen := map[core.RunStatus]bool{}
	for _, n := range names {
		s := core.RunStatus(strings.TrimSpace(n))
		switch {
		case slices.Contains(Prunable, s):
			seen[s] = true
		case s == core.RunWaitingOnHuman:
			return nil, core.Invalid("--status %s: a run that waits on a human is never pruned; decide it first (flow approve or flow reject)", s)
		case s == core.RunPending || s == core.RunRunning || s == core.RunPaused:
			return nil, core.Invalid("--status %s: a run that has not finished is never pruned; flow cancel stops it", s)
		default:
			msg := fmt.Sprintf("--status %q: not a status of a run", n)
			var names []string
			for _, p := range Prunable {
				names = append(names, string(p))
			}
			if c, ok := suggest.Closest(string(s), names); ok {
				msg += fmt.Sprintf(" (did you mean %q?)", c)
			}
			return nil, core.Invalid("%s; want %s", msg, strings.Join(names, ", "))
		}
	}
	var out []core.RunStatus
	for _, p := range Prunable {
		if seen[p] {
			out = append(out, p)
		}
	}
	return out, nil
}

func (p Policy) statuses() []core.RunStatus {
	if len(p.Statuses) == 0 {
		return []core.RunStatus{core.RunCompleted}
	}
	return p.Statuses
}

// statusText names the statuses of the policy in a sentence:
// "completed", "completed or failed".
func (p Policy) statusText() string {
	var s []string
	for _, st := range p.statuses() {
		s = append(s, string(st))
	}
	if len(s) > 1 {
		return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
	}
	return s[0]
}

// Run is what Select knows of a run: what its record's head says.
type Run struct {
	ID       string
	Workflow string
	Status   core.RunStatus
	// Created is when the run was created; Ended when it last changed
	// (its end, for a finished run). Either may be zero when the record
	// does not say.
	Created time.Time
	Ended   time.Time
}

// Decision is what Select decided of a run the policy covers.
type Decision struct {
	Run
	// Go is true for a run that goes.
	Go bool
	// Why says why the run goes or stays, in a phrase.
	Why string
}

// Select applies the policy p at now to runs: it returns a decision
// for each run the policy covers (of its workflow and its statuses),
// newest first. The others are not its business and are left out.
func Select(p Policy, runs []Run, now time.Time) []Decision {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b Run) int {
		return cmp.Or(b.Created.Compare(a.Created), strings.Compare(b.ID, a.ID))
	})
	statuses := p.statuses()
	rank := map[string]int{}
	var out []Decision
	for _, r := range sorted {
		if p.Workflow != "" && r.Workflow != p.Workflow || !slices.Contains(statuses, r.Status) {
			continue
		}
		n := rank[r.Workflow]
		rank[r.Workflow]++
		d := Decision{Run: r}
		ended := r.Ended
		if ended.IsZero() {
			ended = r.Created
		}
		age := now.Sub(ended)
		var why []string
		if p.Keep > 0 {
			if n < p.Keep {
				d.Why = fmt.Sprintf("one of the %d newest %s runs of %s", p.Keep, p.statusText(), r.Workflow)
				out = append(out, d)
				continue
			}
			why = append(why, fmt.Sprintf("not one of the %d newest %s runs of %s", p.Keep, p.statusText(), r.Workflow))
		}
		if p.OlderThan > 0 {
			if ended.IsZero() {
				d.Why = "its record says not when it ended"
				out = append(out, d)
				continue
			}
			if age < p.OlderThan {
				d.Why = fmt.Sprintf("ended %s ago, less than %s", Age(age), Age(p.OlderThan))
				out = append(out, d)
				continue
			}
			why = append(why, fmt.Sprintf("ended %s ago", Age(age)))
		}
		if len(why) == 0 {
			why = append(why, "every "+p.statusText()+" run goes")
		}
		d.Go, d.Why = true, strings.Join(why, "; ")
		out = append(out, d)
	}
	return out
}

// Age writes a duration for people: whole days from two days on
// ("9d"), else hours and minutes ("5h3m0s" is "5h3m"), else seconds.
func Age(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	case d >= time.Minute:
		return strings.TrimSuffix(d.Truncate(time.Minute).String(), "0s")
	case d < 0:
		return "0s"
	}
	return d.Truncate(time.Second).String()
}
