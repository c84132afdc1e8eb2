package record

import (
	"encoding/json"
	"io"
	"strings"

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

// decodeHead decodes the head of a run_state.json read from r: every
// field before its steps. flow writes the steps last (core.State's
// fields are in that order), and most of a large run's snapshot is its
// steps, so reading a run's head reads only the start of its file. It
// returns nil when r does not hold the JSON of a State's head followed
// by its steps as an object: the caller then reads the run whole, as
// LoadState does. What follows the steps is not read: a field there (a
// hand edit; flow writes none) is not in the head.
func decodeHead(r io.Reader) *core.State {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	head := []byte{'{'}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil
		}
		if strings.EqualFold(key, "steps") {
			if t, err := dec.Token(); err != nil || t != json.Delim('{') {
				return nil
			}
			var st core.State
			if json.Unmarshal(append(head, '}'), &st) != nil {
				return nil
			}
			return &st
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if strings.EqualFold(key, "step_order") {
			continue // the steps' order goes with the steps
		}
		if len(head) > 1 {
			head = append(head, ',')
		}
		k, _ := json.Marshal(key)
		head = append(append(append(head, k...), ':'), v...)
	}
	return nil
}
