// Package core is flow's decision core: given a run's state and an
// input — what a driver observed — it decides what happens next,
// records it as events (applied to the state by Apply, the only code
// that changes a State), and returns the effects a driver must perform.
//
// The core does no I/O: it reads no file, clock or environment, starts
// no process or goroutine and draws no random number; TestCoreIsPure
// checks its imports and calls. Its inputs carry everything it needs —
// the time of the decision, a session's exit code, verdict and report
// facts, the values of the workflow's expressions evaluated by the
// driver, the paths the driver chose for a session's files — so that a
// driver replaying the same inputs (after a crash, or as a Temporal
// workflow replaying history) gets the same events and effects.
//
// The core speaks of step instances (StepKey: a step, or a step of a
// loop's body for one item), attempts and iterations, never of paths.
// Its policy — what a session's end means (Failure), what a gate says
// (GateVerdict), retries, loop-backs and their budgets, human
// decisions, control states — is pure functions of those facts.
//
// The run record's types (State, StepState, the events and their data)
// live here too, with the exit-code table of DESIGN §8 (ExitCode,
// ExitError, CodeOf): they are the core's vocabulary.
package core
