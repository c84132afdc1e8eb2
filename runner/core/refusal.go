package core

import (
	"errors"
	"fmt"
)

// The core's two kinds of refusal. The lifecycle and the record refuse
// what they are asked with an error that wraps one of them (errors.Is
// tells which); the operations layer maps each to its exit code
// (docs/architecture.md, "Shared tables").
var (
	// ErrInvalid marks a request that is wrong in itself: an unknown
	// step, a malformed run id, a retry that cannot succeed as asked.
	ErrInvalid = errors.New("invalid request")
	// ErrRefused marks a request the run or step is not in a state to
	// allow: a finished run resumed, a decision on a step that is not
	// waiting or was already decided.
	ErrRefused = errors.New("refused")
)

// Invalid returns an error, formatted as fmt.Errorf does, that wraps
// ErrInvalid.
func Invalid(format string, args ...any) error {
	return &refusal{kind: ErrInvalid, err: fmt.Errorf(format, args...)}
}

// Refuse returns an error, formatted as fmt.Errorf does, that wraps
// ErrRefused.
func Refuse(format string, args ...any) error {
	return &refusal{kind: ErrRefused, err: fmt.Errorf(format, args...)}
}

// refusal is an error of one of the core's kinds. Its message is the
// formatted one alone; the kind is found with errors.Is.
type refusal struct {
	kind error
	err  error
}

func (r *refusal) Error() string { return r.err.Error() }

func (r *refusal) Unwrap() []error { return []error{r.err, r.kind} }
