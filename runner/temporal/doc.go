// Package temporal is flow's Temporal driver (docs/temporal.md): a run as a
// Temporal workflow that drives the same decision core as the local
// driver, with sessions, evaluations and the run's record as
// activities on workers (flow worker), approvals and control as
// Updates, and status and progress as queries.
//
// The workflow (workflow.go) holds no decision logic and touches
// nothing outside Temporal's deterministic API: it parses the
// workflow's source from its input on an in-memory file system, builds
// the core's plan, feeds core.Decide the results of activities, timers
// and Updates, and turns each effect into an activity, a timer or a
// wait. Replaying its history gives the same decisions; an import test
// keeps I/O and the clock out of its files.
//
// The worker (activities.go) performs one effect at a time with the
// local driver's own session code (local.Remote): the session's process
// group, timeouts, log, report and gate are the local driver's. It
// mirrors the run's events.jsonl and run_state.json under its
// repository (local.Mirrors); Temporal's history stays the source of
// truth.
//
// What can go wrong, and what happens:
//
//   - A payload over Temporal's limit (about 2 MB): a run whose input
//     is larger is refused at start with that reason; a state that
//     grows past it at continue-as-new fails the run, saying so.
//   - A long run: past HistoryLimit events (or when the server
//     suggests it) the workflow stops starting effects, waits for those
//     in flight, and continues as new carrying the core's state, its
//     bookkeeping (core.Carry) and the inputs not yet decided.
//   - A worker lost mid-session: the session activity stops
//     heartbeating and is retried by Temporal; its step keeps its
//     attempt.
//   - A worker's host lost for good: the runs pinned to its host queue
//     wait for it (flow status says so after LostAfter); flow resume
//     --move ends such a run's workflow and starts it again, from the
//     state it ended with, on whichever worker of the task queue opens
//     it (Restart.Move), never silently.
//   - Cancelling the workflow interrupts the run as SIGINT does
//     locally: sessions are cancelled (their process groups killed) and
//     the run ends interrupted. The workflow sends each session's worker
//     a kill on its control queue (control.go), since a cancelled
//     activity learns of it only when it next reaches the server.
//   - A worker asked to stop (SIGTERM) drains (Serve): it takes no more
//     work, lets its sessions finish for its drain timeout, then hands
//     the rest back; the run records a warning and runs them again on
//     another worker. A worker started before its server waits for it
//     (DialWaiting).
//   - A follower of a session's output reads the log on its worker
//     through a workflow of its own (TailWorkflow): nothing of the
//     output goes through the run's history. A follower of a run's
//     events asks the executions it continued as new from for the
//     events its latest one does not hold.
//   - Secrets: what a worker returns to the workflow has the values of
//     the run's secrets hidden, as the local driver hides them in its
//     record; a secret passed with --env is refused, since the run's
//     input stays in its history.
//   - A change to the commands the workflow issues is gated with
//     workflow.GetVersion, so that a history recorded before replays
//     as it ran (testdata/temporal, TestReplayRecordedHistories).
package temporal
