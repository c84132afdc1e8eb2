package core

import (
	"fmt"
	"strings"
)

// StepKey names a step instance (docs/architecture.md, "Layers"): a step of the
// workflow, or a step of a loop's body run for one item of the loop.
// A plain step has no Loop and no Item, and its key is its id, so that
// plain workflows keep agent_orchestrator's run_state.json steps.<id>. The core keys its
// state, plan, events and effects by the key's String form.
type StepKey struct {
	// Loop is the for_each step the instance belongs to; "" for a plain
	// step.
	Loop string
	// Item is the key of the loop's item.
	Item string
	// Step is the step's id: a body step's id inside a loop.
	Step string
}

// Key returns the key of a plain step.
func Key(step string) StepKey { return StepKey{Step: step} }

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

// MarshalText writes the key in its String form: the form of the
// record, the events and every JSON output.
func (k StepKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a key in its String form; "" is the zero key.
func (k *StepKey) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*k = StepKey{}
		return nil
	}
	p, err := ParseStepKey(string(b))
	if err != nil {
		return err
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

// The limits of docs/architecture.md, "The record" that keep file names under 255 bytes.
const (
	// MaxStepID is the longest step id.
	MaxStepID = 48
	// MaxItemKey is the longest item key.
	MaxItemKey = 48
)

// ParseStepKey reads a key in its String form: "step", or
// "loop[item].step" where no part holds '[', ']' or '.'. It checks the
// form and the item key's characters and length, not that the step
// exists. It reads every key that comes from outside the core: a
// person's, and the record's (UnmarshalText).
func ParseStepKey(s string) (StepKey, error) {
	i := strings.IndexAny(s, "[].")
	if i < 0 && s != "" {
		return Key(s), nil
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

// SplitKey splits a key in its String form without checking it: an
// instance key "loop[item].step" gives its parts and true, any other
// string gives itself as the step and false. It is the fast path the
// core takes for every decision; ParseStepKey checks a key given by a
// person.
func SplitKey(s string) (StepKey, bool) {
	i := strings.IndexByte(s, '[')
	if i <= 0 {
		return StepKey{Step: s}, false
	}
	j := strings.LastIndex(s, "].")
	if j < i {
		return StepKey{Step: s}, false
	}
	return StepKey{Loop: s[:i], Item: s[i+1 : j], Step: s[j+2:]}, true
}

// Instance returns the key of body step step of loop for item.
func Instance(loop, item, step string) string { return loop + "[" + item + "]." + step }

// IsInstance reports whether a key names a loop's instance.
func IsInstance(key string) bool { return strings.IndexByte(key, '[') > 0 }

// SanitizeItemKey turns the value of a loop's key: into an item key
// (docs/architecture.md, "The record"): every run of characters other than letters, digits, '_'
// and '-' becomes one '_', and the result is cut to MaxItemKey bytes.
// "Login page!" becomes "Login_page_". It may return "".
func SanitizeItemKey(raw string) string {
	b := make([]byte, 0, min(len(raw), MaxItemKey))
	bad := false
	for i := 0; i < len(raw) && len(b) < MaxItemKey; i++ {
		c := raw[i]
		if itemByte(c) {
			b = append(b, c)
			bad = false
			continue
		}
		if !bad {
			b = append(b, '_')
			bad = true
		}
	}
	return string(b)
}
