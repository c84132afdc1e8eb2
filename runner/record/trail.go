package record

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/runner/core"
)

// Trail is what run-summary.md tells of a run beyond its state: each
// step's rounds (its sessions and decisions, with their iteration,
// attempt and outcome — a gate's reason, an interruption, a retry),
// the run's restarts and interruptions, and why the run last stopped.
// It is a fold of the run's events (Add), kept by the runner beside
// the state: run_state.json holds only the latest of each.
//
// It is bounded: a step keeps its last maxRounds rounds and counts the
// others; the run keeps its last maxRunNotes restarts and
// interruptions; every text is cut to maxTrailText bytes.
type Trail struct {
	steps map[core.StepKey]*stepTrail
	// run are the run's own notes (restarts, interruptions), oldest
	// first; runDropped counts those dropped to keep the bound.
	run        []string
	runDropped int
	// stop says why the run last stopped, or "" while it has not.
	stop string
}

// stepTrail is one step's part of a Trail.
type stepTrail struct {
	rounds  []string
	dropped int
	// iteration and attempt are those of the step's last start.
	iteration, attempt int
	started            bool
	// notable is true once the step did more than run once and
	// complete: only such steps are told of beyond the summary's table.
	notable bool
}

// Bounds of a Trail.
const (
	maxRounds    = 20
	maxRunNotes  = 20
	maxTrailText = 300
)

// NewTrail returns an empty Trail.
func NewTrail() *Trail { return &Trail{steps: map[core.StepKey]*stepTrail{}} }

// ReadTrail folds the events of the run in runDir into a Trail. A log
// that cannot be read whole gives the Trail of what could be read, and
// the error.
func ReadTrail(fsys afero.Fs, runDir string) (*Trail, error) {
	t := NewTrail()
	err := eventlog.Each(fsys, filepath.Join(runDir, EventsFile), 0, func(e core.Event) error {
		t.Add(e)
		return nil
	})
	return t, err
}

func (t *Trail) step(id core.StepKey) *stepTrail {
	s := t.steps[id]
	if s == nil {
		s = &stepTrail{}
		t.steps[id] = s
	}
	return s
}

// round records one round of step id.
func (t *Trail) round(id core.StepKey, what string, notable bool) {
	s := t.step(id)
	where := ""
	if s.started {
		where = fmt.Sprintf("iteration %d, attempt %d: ", s.iteration, s.attempt)
	}
	s.rounds = append(s.rounds, cutText(where+what))
	if len(s.rounds) > maxRounds {
		s.rounds = s.rounds[1:]
		s.dropped++
	}
	s.notable = s.notable || notable
}

// note records a note of the run.
func (t *Trail) note(what string) {
	t.run = append(t.run, cutText(what))
	if len(t.run) > maxRunNotes {
		t.run = t.run[1:]
		t.runDropped++
	}
}

// Add folds one event into the Trail.
func (t *Trail) Add(e core.Event) {
	at := e.At.UTC().Format("2006-01-02 15:04:05Z")
	switch e.Type {
	case core.EvStepStarted:
		var d core.StepStarted
		if decode(e, &d) {
			s := t.step(e.Step)
			if s.started {
				s.notable = true // a second session of the step
			}
			s.iteration, s.attempt, s.started = d.Iteration, d.Attempt, true
		}
	case core.EvStepCompleted:
		t.round(e.Step, "completed", false)
	case core.EvGateFailed:
		var d core.GateFailure
		if decode(e, &d) {
			what := "gate failed: " + d.Reason
			switch {
			case d.Budget:
				what += fmt.Sprintf("; iteration budget (%d) spent: FAILED", d.MaxIterations)
			case !d.Target.IsZero():
				what += "; loops back to " + d.Target.String()
			}
			t.round(e.Step, what, true)
			for _, id := range d.Reset {
				if s := t.steps[id]; s != nil {
					s.notable = true
				}
			}
		}
	case core.EvAttemptFailed:
		var d core.Outcome
		if decode(e, &d) {
			t.round(e.Step, "attempt failed: "+d.Error+"; retried", true)
		}
	case core.EvStepFailed:
		var d core.Outcome
		if decode(e, &d) {
			t.round(e.Step, "FAILED: "+d.Error, true)
		}
	case core.EvStepInterrupted:
		t.round(e.Step, "interrupted at "+at+" (the attempt is not counted)", true)
	case core.EvReconciled:
		t.round(e.Step, "its runner died during the session; it runs again", true)
	case core.EvStepSkipped:
		var d core.Skip
		if decode(e, &d) && d.Reason != "" {
			t.round(e.Step, "skipped: "+d.Reason, false)
		}
	case core.EvHumanInput:
		var d core.HumanInput
		if decode(e, &d) {
			who := d.By
			if who == "" {
				who = "a human"
			}
			what := "approved by " + who
			if !d.Approved {
				what = "rejected by " + who
				if d.Reason != "" {
					what += ": " + d.Reason
				}
			}
			t.round(e.Step, what, !d.Approved)
		}
	case core.EvStartAt:
		var d core.StartAt
		if decode(e, &d) {
			t.note(fmt.Sprintf("%s: restarted at %s (re-run: %s)", at, d.Step, strings.Join(core.KeyStrings(d.Reset), ", ")))
			for _, id := range d.Reset {
				t.step(id).notable = true
			}
		}
	case core.EvRetry:
		var d core.Retry
		if decode(e, &d) {
			t.note(fmt.Sprintf("%s: retried the failed steps %s (re-run: %s)", at, strings.Join(core.KeyStrings(d.Failed), ", "), strings.Join(core.KeyStrings(d.Reset), ", ")))
			for _, id := range d.Reset {
				t.step(id).notable = true
			}
		}
	case core.EvRunInterrupted:
		t.note(at + ": interrupted")
		t.stop = "interrupted (exit 130); flow resume continues it"
	case core.EvRunFinished:
		var d core.RunFinished
		if decode(e, &d) {
			t.stop = fmt.Sprintf("%s (exit %d)", d.Status, d.ExitCode)
			if d.Reason != "" {
				t.stop += ": " + d.Reason
			}
		}
	case core.EvRunWaiting, core.EvRunPaused:
		var d core.Note
		if decode(e, &d) {
			t.stop = d.Message
		}
	case core.EvRunnerExited:
		var d core.RunnerExited
		if decode(e, &d) {
			t.stop = fmt.Sprintf("the runner exited %d", d.ExitCode)
			if d.Reason != "" {
				t.stop += ": " + d.Reason
			}
		}
	case core.EvRunnerStarted:
		t.stop = ""
	case core.EvCleanupFinished:
		var d core.CleanupFinished
		if decode(e, &d) {
			what := fmt.Sprintf("%s: cleanup session %d finished", at, d.N)
			if d.Failed {
				what = fmt.Sprintf("%s: cleanup session %d failed", at, d.N)
				if d.Error != "" {
					what += ": " + d.Error
				}
			}
			t.note(what)
		}
	}
}

// decode decodes an event's data into v; it reports whether it could.
func decode(e core.Event, v any) bool {
	return len(e.Data) > 0 && json.Unmarshal(e.Data, v) == nil
}

// cutText makes s one line of at most maxTrailText bytes.
func cutText(s string) string {
	s = lineEnds.Replace(s)
	if len(s) <= maxTrailText {
		return s
	}
	cut := maxTrailText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// writeTrail writes the Trail's part of run-summary.md: why the run
// stopped, its restarts and interruptions, and the rounds of each step
// that did more than run once and complete, in the run's order.
func (t *Trail) write(w io.Writer, st *core.State) {
	if t == nil {
		return
	}
	if len(t.run) > 0 {
		io.WriteString(w, "\n## Restarts and interruptions\n\n")
		if t.runDropped > 0 {
			fmt.Fprintf(w, "- … %d earlier\n", t.runDropped)
		}
		for _, n := range t.run {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
	header := false
	for _, id := range st.StepOrder {
		s := t.steps[id]
		if s == nil || !s.notable || len(s.rounds) == 0 {
			continue
		}
		if !header {
			io.WriteString(w, "\n## Rounds\n\nEach session of a step that ran more than once, failed, looped back or was interrupted, oldest first.\n")
			header = true
		}
		fmt.Fprintf(w, "\n### %s\n\n", id)
		if s.dropped > 0 {
			fmt.Fprintf(w, "- … %d earlier\n", s.dropped)
		}
		for _, r := range s.rounds {
			fmt.Fprintf(w, "- %s\n", r)
		}
	}
}
