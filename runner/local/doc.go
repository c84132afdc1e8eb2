// Package local is flow's local driver: it runs a workflow's sessions
// as processes on this machine and keeps the run's durable record under
// <repo>/.agents/runs/<run_id>/ through package record
// (docs/architecture.md).
//
// The decisions are not made here: package core, which does no I/O,
// decides what happens next from the run's state and what happened
// (a session ended, a human decided, a timer fired, control changed),
// records it as events, and asks for effects (start a session, prepare a
// human wait, start a timer, write control.json, finish). Runner.Run
// feeds the core those inputs and performs its effects: it starts
// sessions through a proc.Starter, evaluates the workflow's expressions
// (when, gates, retry_if — the core receives their values, so that a
// replay never evaluates anything again), appends the events to
// events.jsonl and snapshots run_state.json, all through an afero.Fs and
// an injected clock. The files of a run are named in one place,
// record.Layout. What a run is asked to run with and how it ended
// (spec.Options, spec.Result) and the plan a workflow resolves into are
// package spec's, shared with the Temporal driver, which uses this
// package only for its session performer (Remote, Mirrors).
//
// What can go wrong, and what the driver does about it:
//
//   - A crash at any instant: events.jsonl is the truth; the event that
//     finishes a session is synced before the next session starts; a
//     runner that takes the run over replays the log, rebuilds a
//     snapshot that disagrees with it, and runs the step that was in
//     flight again, killing what the dead runner's session left behind.
//   - Two runners: the lock file names the holder; the event log refuses
//     a second writer; the record's runner (pid, host, heartbeat) is
//     checked before a takeover.
//   - A runner that stops however it stops says so in control.json
//     (current_state pause, control_stop.go); its process's exit code
//     is recorded (runner_exited), and the snapshot is written within a
//     second of every change and at once when the run waits, pauses or
//     ends.
//   - An edit of the workflow while the run waits on a human is taken
//     when no session runs, or said when it cannot be
//     (reload_waiting.go).
//   - Hostile input: reports, control.json, decision files and the
//     expression file functions are read confined and bounded
//     (internal/confine); rendered templates and logs are capped; secret
//     values are hidden in everything the driver writes or prints.
//   - Sessions writing where flow writes: agent_orchestrator's
//     memory_updates go into AGENTS.md files of the repository through
//     the same link-refusing file system as the record
//     (orchestrator_memory.go), and the daily cost ledger under .agents/
//     is updated under a flock, so that concurrent runs share it
//     (ledger.go); a ledger that cannot be read is warned of and starts
//     again.
//
// A workflow read in agent_orchestrator's format, or with compat:
// agent_orchestrator, runs by that format's rules (orchestrator.go,
// docs/agent-orchestrator.md): its environment, report and gate rules,
// prompt lookup and memory.
package local
