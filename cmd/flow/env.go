package main

import (
	"os/user"
	"strings"
)

// ciTruthy reports whether a value of the CI environment variable turns
// on plain CI output: true, 1, yes or on, in any case and with the
// surrounding space ignored. CI services set CI=true, others CI=1.
func ciTruthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes", "on":
		return true
	}
	return false
}

// inCI reports whether flow runs in CI, where the job's log is what
// people read: session output is shown live, and status --watch prints
// a line per change instead of redrawing the screen. Every CI mode
// (detectCI) but off counts.
func (a *app) inCI() bool {
	return a.ciMode() != ciOff
}

// userName names the person at the command line, who approves, rejects
// and controls runs unless --by says otherwise: $USER, else the
// operating system's name of the user (current), else "" (which the
// operations layer reports as "unknown").
func userName(getenv func(string) string, current func() (*user.User, error)) string {
	if u := getenv("USER"); u != "" {
		return u
	}
	if u, err := current(); err == nil && u != nil {
		return u.Username
	}
	return ""
}
