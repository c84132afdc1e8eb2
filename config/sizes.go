package config

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/flow-run/flow/internal/confine"
)

// The default sizes (docs/reference/limits.md), which defaults: may change.
const (
	DefaultPromptLimit  int64 = 1 << 20
	DefaultCommandLimit int64 = 100 << 10
	DefaultReportLimit  int64 = 1 << 20
	DefaultLogLimit     int64 = 64 << 20
)

// The largest sizes defaults: may set: more is a mistake, not a limit.
const (
	maxTextLimit int64 = 1 << 30 // prompts, commands and reports
	maxLogLimit  int64 = 64 << 30
)

// Limits are the sizes, in bytes, of what a run produces and reads:
// a rendered prompt, a rendered command, a session's report and a
// session's log (head and tail kept).
type Limits struct {
	Prompt  int64
	Command int64
	Report  int64
	Log     int64
	// MaxItems is the most items a loop may have (not a size in bytes;
	// DefaultMaxItems unless defaults.max_items sets it).
	MaxItems int
}

// Limits returns the workflow's effective sizes: those its defaults set,
// and the Default*Limit constants for the others.
func (w *Workflow) Limits() Limits {
	l := w.Defaults.Limits
	for _, f := range []struct {
		v   *int64
		def int64
	}{{&l.Prompt, DefaultPromptLimit}, {&l.Command, DefaultCommandLimit}, {&l.Report, DefaultReportLimit}, {&l.Log, DefaultLogLimit}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	if l.MaxItems <= 0 {
		l.MaxItems = DefaultMaxItems
	}
	return l
}

// sizeUnits are the units a size may be written in.
var sizeUnits = map[string]int64{
	"B":   1,
	"KB":  1000,
	"MB":  1000 * 1000,
	"GB":  1000 * 1000 * 1000,
	"KiB": 1 << 10,
	"MiB": 1 << 20,
	"GiB": 1 << 30,
}

// ParseSize parses a size: a whole number of bytes ("1048576"), or a
// whole number and a unit, with or without a space between ("64MiB",
// "100 KiB", "1MB"). KB, MB and GB are powers of 1000, KiB, MiB and GiB
// powers of 1024, and B is bytes. The size must be positive.
func ParseSize(s string) (int64, error) {
	bad := fmt.Errorf("invalid size %q (want a number of bytes, or e.g. 64MiB, 100 KiB, 1MB)", s)
	v := strings.TrimSpace(s)
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || i == 0 && (v[i] == '-' || v[i] == '+')) {
		i++
	}
	digits, unit := v[:i], strings.TrimSpace(v[i:])
	mult := int64(1)
	if unit != "" {
		m, ok := sizeUnits[unit]
		if !ok {
			return 0, bad
		}
		mult = m
	}
	if len(digits) > 40 {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return 0, bad
	}
	if n.Sign() <= 0 {
		return 0, fmt.Errorf("size %q: must be more than 0", s)
	}
	n.Mul(n, big.NewInt(mult))
	if !n.IsInt64() {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n.Int64(), nil
}

// size reads a size of defaults: a positive number of bytes of at most
// most.
func (b *builder) size(field string, s str, most int64) int64 {
	if !s.ok() {
		return 0
	}
	n, err := ParseSize(s.val)
	switch {
	case err != nil:
		b.d.errorf(s.pos(), "%s: %v", field, err)
		return 0
	case n > most:
		b.d.errorf(s.pos(), "%s: %s is more than %s, the largest %s allowed", field, s.val, confine.Size(most), field)
		return 0
	}
	return n
}
