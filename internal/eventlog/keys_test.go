package eventlog

import "github.com/flow-run/flow/internal/event"

// sk reads a test's step key; "" is the zero key.
func sk(s string) event.StepKey {
	var k event.StepKey
	_ = k.UnmarshalText([]byte(s))
	return k
}
