package event

import "encoding/json"

// Event is one line of a run's event log: what happened, when, to which
// step, with its details as a JSON value.
type Event struct {
	// Seq numbers the event; it is greater than the Seq of every event
	// before it in the log.
	Seq int64 `json:"seq"`
	// At is when the event happened.
	At Time `json:"at"`
	// Type says what happened, such as "step_started".
	Type string `json:"type"`
	// Step is the step (or step instance) the event is about, if any.
	Step StepKey `json:"step,omitzero"`
	// Data holds the event's details as a JSON value.
	Data json.RawMessage `json:"data,omitempty"`
}
