// Package retention removes finished runs from a repository, so that
// runs do not pile up: flow prune --keep N --older-than D, and a
// workflow's defaults.retention applied by the local driver when one of
// its runs ends (docs/operating-runs.md, "Retention: removing finished runs").
//
// A Policy says which runs go: by default only completed runs (a
// failed, interrupted or budget-spent run can be resumed or retried, so
// it goes only when asked for by status); of those, the Keep newest of
// each workflow stay whatever their age, and runs that ended less than
// OlderThan ago stay whatever their number. Select applies a policy to
// what the runs' records say; it decides and touches nothing.
//
// A Pruner removes what Select chose, each run as one unit: its run
// directory, the git worktrees of its workspaces and its branches
// (flow/<run>/…). Before it removes a run it writes the run's line in
// .agents/history.jsonl, if the run has none yet, so that flow runs
// --all still lists it.
//
// What can go wrong, and what it does about it:
//
//   - A run that is live (a runner holds its lock, or its event log),
//     or waits on a human, is never removed: a Pruner takes the run's
//     lock (internal/runlock) and its event log's lock before it
//     removes anything, reads the run again under them, and leaves the
//     run when either is held or the run changed meanwhile. A runner
//     that tries to take the run while it is being removed is refused
//     as by any other holder.
//   - A worktree whose files were changed and not committed (a person
//     working in a worktree kept with keep: always) would lose that
//     work: its run is left, and the report says why.
//   - A branch of the run that holds work merged nowhere is deleted
//     with it; the report names each deleted branch with its commit,
//     which git keeps until it collects garbage (git branch NAME
//     COMMIT brings it back). A branch checked out somewhere cannot be
//     deleted: it is left, with a warning.
//   - A crash half way: the run directory is first renamed to a hidden
//     name in .agents/runs/ (never listed as a run) and then removed,
//     so a crash leaves either the whole run or nothing that looks like
//     one; the next prune removes what a crash left. The history is
//     synced before anything is removed: the run's line, whether this
//     prune wrote it or the run did as it ended (unsynced, while its
//     directory held the truth).
//   - A link planted in a run directory is removed, never followed:
//     the record is removed through a file system that follows no link
//     (internal/safefs).
package retention
