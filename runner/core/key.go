package core

import (
	"strings"

	"github.com/flow-run/flow/internal/event"
)

// StepKey names a step instance: a step of the workflow, or a step of a
// loop's body run for one item of the loop (event.StepKey). The core
// keys its state, events, effects and bookkeeping by it.
type StepKey = event.StepKey

// MaxItemKey is the longest item key (event.MaxItemKey): with step ids
// of at most config.MaxStepIDLen bytes, it keeps the file names made
// from a key under 255 bytes (docs/architecture.md, "The record").
const MaxItemKey = event.MaxItemKey

// Key returns the key of a plain step.
func Key(step string) StepKey { return StepKey{Step: step} }

// ParseStepKey reads a key in its String form, checking it
// (event.ParseStepKey): every key given by a person goes through it.
func ParseStepKey(s string) (StepKey, error) { return event.ParseStepKey(s) }

// CompareKeys orders keys as their String forms sort: the order of
// the record's JSON maps.
func CompareKeys(a, b StepKey) int { return strings.Compare(a.String(), b.String()) }

// KeyStrings returns the String forms of keys, in order.
func KeyStrings(keys []StepKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return out
}

// Instance returns the key of body step step of loop for item.
func Instance(loop, item, step string) StepKey { return StepKey{Loop: loop, Item: item, Step: step} }

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
