package record

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
)

// Liveness states of the agent liveness model (spawning, working, stuck,
// stopped, done, stale, dead; docs/operating-runs.md, "Reading status"), derived from a
// run's record by Live.
const (
	LiveSpawning = "spawning"
	LiveWorking  = "working"
	LiveStuck    = "stuck"
	LiveStopped  = "stopped"
	LiveDone     = "done"
	LiveStale    = "stale"
	LiveDead     = "dead"
)

// Heartbeat limits: a runner refreshes its heartbeat every
// HeartbeatInterval; older than three intervals it is stale, older than
// DeadAfter it is dead.
const (
	HeartbeatInterval = 5 * time.Second
	DeadAfter         = 60 * time.Second
)

// TemporalLaunchFile is the file a Temporal worker keeps in the run
// directory of a run the Temporal engine drives: the directory is the
// worker's mirror of the run, whose runner is the Temporal workflow.
const TemporalLaunchFile = "temporal.json"

// OnTemporal reports whether the run in runDir is driven by the
// Temporal engine (its directory is a worker's mirror).
func OnTemporal(fsys afero.Fs, runDir string) bool {
	_, err := fsys.Stat(filepath.Join(runDir, TemporalLaunchFile))
	return err == nil
}

// Liveness is what flow status says of a run's runner.
type Liveness struct {
	State string `json:"state"`
	// Hook is the step the runner works on (working, stuck).
	Hook core.StepKey `json:"hook,omitzero"`
	// Reason explains the state in a sentence.
	Reason string `json:"reason"`
	// Holder is the runner holding the run, if any.
	Holder *runlock.Holder `json:"holder,omitempty"`
}

// Live derives the liveness of a run from its state, its lock and the
// time its sessions last wrote output. wf may be nil; with it, a
// session quiet for longer than its idle_timeout is stuck.
//
// A paused run is stopped whether or not a runner waits in it; the
// reason says which: a foreground runner (flow run without --no-wait)
// that waits while paused goes on after flow continue alone, while a
// paused run that no live runner holds needs flow continue and then
// flow resume.
func Live(fsys afero.Fs, runDir string, st *core.State, wf *config.Workflow, now time.Time, alive func(runlock.Holder) bool) Liveness {
	switch st.Status {
	case core.RunCompleted, core.RunFailed:
		return Liveness{State: LiveDone, Reason: "the run " + string(st.Status)}
	case core.RunPaused:
		return pausedLiveness(fsys, runDir, st, now, alive)
	case core.RunInterrupted:
		return Liveness{State: LiveStopped, Reason: "interrupted; flow resume continues it"}
	case core.RunBudgetExceeded:
		return Liveness{State: LiveStopped, Reason: "a budget ran out; flow resume with a higher one (--budget-cost, --budget-tokens, --budget-sessions) continues it"}
	}
	if OnTemporal(fsys, runDir) {
		// No local runner holds it, and none should: the record is a
		// mirror, and only the server knows whether its workflow runs.
		return Liveness{State: LiveStale, Reason: "driven by a Temporal server; this is a worker's mirror of it: flow status " + st.RunID + " --engine temporal asks the server"}
	}
	var waiting []core.StepKey
	for _, id := range st.StepOrder {
		if s := st.Steps[id]; s != nil && s.Status == core.WaitingOnHuman {
			waiting = append(waiting, id)
		}
	}
	holder, err := runlock.Read(fsys, filepath.Join(runDir, LockFile))
	if errors.Is(err, fs.ErrNotExist) {
		if len(waiting) > 0 {
			return Liveness{State: LiveStuck, Hook: waiting[0], Reason: "waiting on a human (no runner; flow resume after approval)"}
		}
		return Liveness{State: LiveDead, Reason: "no runner holds the run and it did not finish; flow resume takes it over"}
	}
	if err != nil {
		return Liveness{State: LiveDead, Reason: "the run's lock is unreadable: " + err.Error()}
	}
	l := Liveness{Holder: &holder}
	if !alive(holder) {
		l.State, l.Reason = LiveDead, "the runner process is gone; flow resume takes the run over"
		return l
	}
	if st.Runner != nil && st.Runner.HeartbeatAt != nil {
		age := now.Sub(st.Runner.HeartbeatAt.Time)
		switch {
		case age > DeadAfter:
			// Frozen: stopped, or stuck in a hung write. It holds the
			// run's lock and log, so a plain resume is refused.
			l.State, l.Reason = LiveDead, fmt.Sprintf("no heartbeat for %s; pid %d on host %s still exists and holds the lock (frozen?): flow resume %s --takeover kills it and takes the run over",
				age.Round(time.Second), holder.PID, holder.Host, st.RunID)
			return l
		case age > 3*HeartbeatInterval:
			l.State, l.Reason = LiveStale, "heartbeat "+age.Round(time.Second).String()+" old"
			return l
		}
	}
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		if s == nil || s.Status != core.Running || s.LoopIndex != nil {
			continue // a running loop runs no session: its instances do
		}
		l.Hook = id
		if wf != nil && s.LogPath != "" {
			if step := wf.Step(id.Step); step != nil {
				if d := wf.StepIdleTimeout(step); d != nil && d.Expr == nil && d.D > 0 {
					// No log yet means no output since the session started.
					last := time.Time{}
					if fi, err := fsys.Stat(s.LogPath); err == nil {
						last = fi.ModTime()
					} else if s.StartedAt != nil {
						last = s.StartedAt.Time
					}
					if !last.IsZero() && now.Sub(last) > d.D {
						l.State, l.Reason = LiveStuck, "no session output for "+now.Sub(last).Round(time.Second).String()
						return l
					}
				}
			}
		}
		l.State, l.Reason = LiveWorking, "session of "+id.String()+" running"
		return l
	}
	if len(waiting) > 0 {
		l.State, l.Hook, l.Reason = LiveStuck, waiting[0], "waiting on a human: flow approve "+st.RunID+" "+waiting[0].String()
		return l
	}
	l.State, l.Reason = LiveSpawning, "the runner is between sessions"
	return l
}

// pausedLiveness says of a paused run whether a live runner waits in it,
// and which commands make it go on.
func pausedLiveness(fsys afero.Fs, runDir string, st *core.State, now time.Time, alive func(runlock.Holder) bool) Liveness {
	holder, live := LiveRunner(fsys, runDir, st, now, alive)
	l := Liveness{State: LiveStopped, Holder: holder}
	switch {
	case live:
		l.Reason = fmt.Sprintf("paused; the runner (pid %d) waits: flow continue %s lets it go on", holder.PID, st.RunID)
	case holder != nil:
		l.Reason = fmt.Sprintf("paused; its runner (pid %d) is gone: flow continue %s, then flow resume %s", holder.PID, st.RunID, st.RunID)
	default:
		l.Reason = fmt.Sprintf("paused; no runner holds the run: flow continue %s, then flow resume %s", st.RunID, st.RunID)
	}
	return l
}

// LiveRunner returns the runner named by a run's lock, if the lock can
// be read, and whether it holds the run alive: its process runs and its
// heartbeat (when the state records one) is not older than DeadAfter.
// A run that no live runner holds goes on only through flow resume.
func LiveRunner(fsys afero.Fs, runDir string, st *core.State, now time.Time, alive func(runlock.Holder) bool) (*runlock.Holder, bool) {
	holder, err := runlock.Read(fsys, filepath.Join(runDir, LockFile))
	if err != nil {
		return nil, false
	}
	if !alive(holder) {
		return &holder, false
	}
	if st.Runner != nil && st.Runner.HeartbeatAt != nil && now.Sub(st.Runner.HeartbeatAt.Time) > DeadAfter {
		return &holder, false
	}
	return &holder, true
}
