// Package keytest reads the step keys tests write as text: "step", or
// "loop[item].step" for an instance of a loop's body step. Tests of
// every package that keys by step share it.
package keytest

import "github.com/flow-run/flow/internal/event"

// K reads a test's step key; "" is the zero key. A text that is not a
// key's form panics: it is a mistake in the test.
func K(s string) event.StepKey {
	if s == "" {
		return event.StepKey{}
	}
	k, err := event.ParseStepKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

// Keys reads a test's step keys, in order.
func Keys(ss ...string) []event.StepKey {
	out := make([]event.StepKey, len(ss))
	for i, s := range ss {
		out[i] = K(s)
	}
	return out
}
