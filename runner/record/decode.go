package record

import (
	"encoding/json"

	"github.com/flow-run/flow/runner/core"
)

// decodeState decodes a run_state.json, or returns nil when b is not
// the JSON of a State.
func decodeState(b []byte) *core.State {
	var st core.State
	if json.Unmarshal(b, &st) != nil {
		return nil
	}
	return &st
}

// decodeHead decodes the fields of a run_state.json other than its
// steps and their order, which are most of a large run's snapshot:
// encoding/json checks them as JSON but builds nothing of them. It
// returns nil when b is not the JSON of a State's head, or when its
// steps are not an object (null, or another type), so that what it
// accepts is what decodeState accepts as far as the head goes.
func decodeHead(b []byte) *core.State {
	var h struct {
		stateFields
		StepOrder skipped    `json:"step_order"`
		Steps     objectSeen `json:"steps"`
	}
	if json.Unmarshal(b, &h) != nil || !h.Steps {
		return nil
	}
	st := core.State(h.stateFields)
	return &st
}

// stateFields is State without its methods, so that decodeHead's
// struct can embed its fields and set two of them aside.
type stateFields core.State

// skipped is a JSON value that decoding leaves aside.
type skipped struct{}

// UnmarshalJSON keeps nothing of b.
func (*skipped) UnmarshalJSON([]byte) error { return nil }

// objectSeen records whether a JSON value is an object, without
// decoding it.
type objectSeen bool

// UnmarshalJSON records whether b, a whole JSON value, is an object.
func (o *objectSeen) UnmarshalJSON(b []byte) error {
	*o = len(b) > 0 && b[0] == '{'
	return nil
}
