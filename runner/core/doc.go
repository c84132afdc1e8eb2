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
// live here too, with the exit codes a run ends with and the two kinds
// of refusal (ErrInvalid, ErrRefused): they are the core's vocabulary,
// which the operations layer maps to a command's exit code. run_state.json is a State as
// encoding/json writes it, its steps in workflow order; events.jsonl
// holds each event's data as encoding/json writes it.
//
// What can go wrong is a live state that differs from the one replayed
// from events.jsonl, or two states that change together. Apply is the
// only code that changes a State, and applies an event from its data
// decoded once; the core applies the events it emits from their typed
// data only when decoding their JSON would give that data back
// (roundTrips), and appliers keep copies of what the data holds. No
// two parts of a State share memory, and Clone copies every part.
package core
