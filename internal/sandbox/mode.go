package sandbox

import (
	"fmt"
	"strings"
)

// Mode says whether sessions run sandboxed: the value of a workflow's or
// the command line's sandbox setting.
type Mode int

const (
	// On sandboxes sessions where the kernel allows it and runs them
	// unsandboxed, saying why, where it does not. It is the default.
	On Mode = iota
	// Off never sandboxes.
	Off
	// Required sandboxes every session, and refuses to run where the
	// kernel does not allow it.
	Required
)

// String returns the mode's name as ParseMode reads it.
func (m Mode) String() string {
	switch m {
	case On:
		return "on"
	case Off:
		return "off"
	case Required:
		return "required"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads a mode: "on", "off" or "required", in any case, and
// the empty string as On.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "on":
		return On, nil
	case "off":
		return Off, nil
	case "required":
		return Required, nil
	}
	return 0, fmt.Errorf("sandbox: unknown mode %q (want on, off or required)", s)
}

// Decision is what a Mode makes of a probe.
type Decision struct {
	// Use says that sessions run sandboxed.
	Use bool
	// Reason is why sessions run unsandboxed in mode On: the probe's
	// error, for the caller to report. It is nil otherwise.
	Reason error
}

// Decide applies m to the kernel's answer. probe is called at most once
// (not at all for Off); the caller passes a function that calls
// Launcher.Probe, or returns an answer it has kept. Decide fails only
// for Required when the probe fails.
func (m Mode) Decide(probe func() error) (Decision, error) {
	switch m {
	case Off:
		return Decision{}, nil
	case On:
		if err := probe(); err != nil {
			return Decision{Reason: err}, nil
		}
		return Decision{Use: true}, nil
	case Required:
		if err := probe(); err != nil {
			return Decision{}, fmt.Errorf("sandbox required but unavailable: %w", err)
		}
		return Decision{Use: true}, nil
	}
	return Decision{}, fmt.Errorf("sandbox: unknown mode %v", m)
}
