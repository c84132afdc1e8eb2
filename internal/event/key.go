package event

import (
	"fmt"
	"strings"
)

// StepKey names a step instance (docs/architecture.md, "Layers"): a step of the
// workflow, or a step of a loop's body run for one item of the loop.
// A plain step has no Loop and no Item, and its key is its id, so that
// plain workflows keep agent_orchestrator's run_state.json steps.<id>. The run's state,
// its events and the decision core's effects are keyed by it; it is
// written as its String form (in JSON too: it is a TextMarshaler) and
// read back by ParseStepKey.
type StepKey struct {
	// Loop is the for_each step the instance belongs to; "" for a plain
	// step.
	Loop string
	// Item is the key of the loop's item.
	Item string
	// Step is the step's id: a body step's id inside a loop.
	Step string
}

// String returns the key as the record, the events and the command line
// write it: "step", or "loop[item].step" for an instance.
func (k StepKey) String() string {
	if k.Loop == "" {
		return k.Step
	}
	return k.Loop + "[" + k.Item + "]." + k.Step
}

// IsInstance reports whether the key names an instance of a loop's
// body step.
func (k StepKey) IsInstance() bool { return k.Loop != "" }

// IsZero reports whether the key names no step.
func (k StepKey) IsZero() bool { return k == StepKey{} }

// AppendText appends the key's String form to b.
func (k StepKey) AppendText(b []byte) ([]byte, error) {
	if k.Loop == "" {
		return append(b, k.Step...), nil
	}
	b = append(append(append(b, k.Loop...), '['), k.Item...)
	return append(append(b, "]."...), k.Step...), nil
}

// MarshalText writes the key in its String form: the form of the
// record, the events and every JSON output.
func (k StepKey) MarshalText() ([]byte, error) { return k.AppendText(nil) }

// UnmarshalText reads a key in its String form; "" is the zero key.
// It reads what a record holds, which flow wrote: a text that is not a
// key's form (a record written before keys were checked, or edited by
// hand) is kept whole as a plain step's id, so that it reads and writes
// back unchanged.
func (k *StepKey) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*k = StepKey{}
		return nil
	}
	p, err := ParseStepKey(string(b))
	if err != nil {
		p = StepKey{Step: string(b)}
	}
	*k = p
	return nil
}

// FileName returns the key as file names carry it: "step", or
// "loop.item.step" for an instance (docs/architecture.md, "The record"). Step ids and item keys
// hold no dots, so the form is unambiguous.
func (k StepKey) FileName() string {
	if k.Loop == "" {
		return k.Step
	}
	return k.Loop + "." + k.Item + "." + k.Step
}

// MaxItemKey is the longest item key: with step ids of at most 48
// bytes, it keeps the file names made from a key under 255 bytes.
const MaxItemKey = 48

// ParseStepKey reads a key in its String form: "step", or
// "loop[item].step" where no part holds '[', ']' or '.'. It checks the
// form and the item key's characters and length, not that the step
// exists. It reads every key that comes from outside the core: a
// person's, and the record's (UnmarshalText).
func ParseStepKey(s string) (StepKey, error) {
	i := strings.IndexAny(s, "[].")
	if i < 0 && s != "" {
		return StepKey{Step: s}, nil
	}
	if i > 0 && s[i] == '[' {
		rest := s[i+1:]
		if j := strings.IndexAny(rest, "[]"); j >= 0 && rest[j] == ']' {
			item, tail := rest[:j], rest[j+1:]
			if len(tail) > 1 && tail[0] == '.' && !strings.ContainsAny(tail[1:], "[].") {
				k := StepKey{Loop: s[:i], Item: item, Step: tail[1:]}
				if !validItemKey(k.Item) {
					return StepKey{}, fmt.Errorf("item key %q of %s: an item key is 1 to %d characters of letters, digits, '_' and '-'", k.Item, s, MaxItemKey)
				}
				return k, nil
			}
		}
	}
	return StepKey{}, fmt.Errorf("%q is not a step or a step instance (step, or loop[item].step)", s)
}

// validItemKey reports whether s is an item key: 1 to MaxItemKey
// letters, digits, '_' and '-'.
func validItemKey(s string) bool {
	if s == "" || len(s) > MaxItemKey {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !itemByte(s[i]) {
			return false
		}
	}
	return true
}

// itemByte reports whether c may stand in an item key.
func itemByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
