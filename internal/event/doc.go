// Package event defines a line of a run's event log, the key of the
// step (or loop instance) a line is about (StepKey, written
// "loop[item].step"), and the one form in which flow writes times. It
// does no I/O: the decision core builds and folds events with it, and
// internal/eventlog stores them. A key read from a record that is not
// of a key's form is kept whole as a plain step's id, so that a record
// reads and writes back unchanged.
package event
