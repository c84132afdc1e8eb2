package core

import (
	"fmt"
	"regexp"
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

var (
	keyPattern  = regexp.MustCompile(`^([^\[\].]+)(?:\[([^\[\]]*)\]\.([^\[\].]+))?$`)
	itemPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// ParseStepKey reads a key in its String form. It checks the form and
// the item key's characters and length, not that the step exists.
func ParseStepKey(s string) (StepKey, error) {
	m := keyPattern.FindStringSubmatch(s)
	if m == nil {
		return StepKey{}, fmt.Errorf("%q is not a step or a step instance (step, or loop[item].step)", s)
	}
	if m[3] == "" && !strings.Contains(s, "[") {
		return Key(m[1]), nil
	}
	k := StepKey{Loop: m[1], Item: m[2], Step: m[3]}
	if len(k.Item) > MaxItemKey || !itemPattern.MatchString(k.Item) {
		return StepKey{}, fmt.Errorf("item key %q of %s: an item key is 1 to %d characters of letters, digits, '_' and '-'", k.Item, s, MaxItemKey)
	}
	return k, nil
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
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
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
