package spec

import "github.com/flow-run/flow/runner/core"

// sk reads a test's step key ("step" or "loop[item].step"; "" is the
// zero key).
func sk(s string) core.StepKey {
	if s == "" {
		return core.StepKey{}
	}
	k, err := core.ParseStepKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

// sks reads a test's step keys.
func sks(ss ...string) []core.StepKey {
	out := make([]core.StepKey, len(ss))
	for i, s := range ss {
		out[i] = sk(s)
	}
	return out
}
