// Package record is a run's durable record on disk: the files under
// <repo>/.agents/runs/<run_id>/ (docs/architecture.md, "The record").
//
// It names the files of a run (Layout: the one place where a step
// instance, its iteration and attempt become a path), reads and writes
// the snapshot run_state.json and the event log events.jsonl, lists runs
// and their heads, reads and updates control.json, the invocation, the
// decision files of human steps and the reports sessions leave, derives
// a run's liveness from its runner's heartbeat, and writes
// run-summary.md (with a Trail: the rounds of the steps, the restarts
// and interruptions, and why the run stopped, folded from its events).
// It writes workflow.json, the workflow a run was given, and reads the
// files flow reads about a run: the tail of a session's log, and the
// gate-state file that opens and closes the run's gates.
// Beside the runs it keeps the history of finished runs
// (.agents/history.jsonl, which outlives their directories) and the
// runs index (.agents/runs/.index), from which a list of runs takes
// the runs that did not change.
// It decides nothing (package core does) and runs
// nothing (the drivers do): every driver and every reader of a run —
// the local driver, the Temporal worker's mirror, the operations layer —
// goes through it, and it imports none of them.
//
// What can go wrong, and what it does about it:
//
//   - A torn or damaged snapshot: snapshots are replaced atomically
//     (temporary file, sync, rename); a snapshot whose seq or digest
//     disagrees with the event log is set aside as
//     run_state.json.corrupt-<time> and rebuilt from the log.
//   - A hostile run directory (a session planted links, FIFOs or huge
//     files): reports, decision files, control.json and the
//     gate-state file are read confined, regular files only,
//     size-capped.
//   - Two writers: the event log holds the run's lock and checks before
//     every append that nobody else wrote.
//   - Two writers of control.json: people write desired_state and the
//     runner current_state, each read-modify-write under the file's
//     lock, so that neither side's update is lost.
//   - A report value of any size: excerpted around a marker, never
//     copied whole into the record, never a failure.
//   - A runs index that no longer tells the truth: an entry is used only
//     while its run's run_state.json has the size and modification time
//     it records, and only runs that no runner holds are indexed; every
//     writer changes run_state.json (TouchState) before its log can get
//     ahead of the snapshot. An index that cannot be read is an empty
//     one, and a list rewrites it.
//   - Runs ending together: each appends its history line with one
//     write to a file opened for appending, through a file system that
//     follows no link; a torn line (a writer that died) is skipped by
//     readers and ended by the next writer.
package record
