package main

import "strings"

// isUsage reports whether a cobra error is about the command line.
func isUsage(err error) bool {
	msg := err.Error()
	for _, s := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "required flag", "invalid argument"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
