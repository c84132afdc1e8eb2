package main

import (
	"strings"

	"github.com/spf13/cobra"
)

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

// goFlags is the annotation of a command that also takes its long flags
// with one dash, as go test does: flow test -run REGEX.
const goFlags = "flow.go-style-flags"

// goStyleFlags rewrites the arguments of a command annotated goFlags so
// that each long flag it has, given with one dash (-run, -cover=true),
// has two (--run, --cover=true): pflag would otherwise read -run as the
// shorthands -r -u -n. The value of a flag that takes one, arguments
// after "--" and anything that names no flag of the command are left as
// they are. Other commands' arguments are returned unchanged.
func goStyleFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd.Annotations[goFlags] == "" {
		return args
	}
	out := make([]string, 0, len(args))
	value := false // the argument is the value of the flag before it
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if value {
			out, value = append(out, a), false
			continue
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 2 {
			name, _, _ := strings.Cut(a[1:], "=")
			if cmd.Flags().Lookup(name) != nil {
				a = "-" + a
			}
		}
		if name, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(name, "=") {
			if f := cmd.Flags().Lookup(name); f != nil && f.NoOptDefVal == "" {
				value = true
			}
		}
		out = append(out, a)
	}
	return out
}

// repoDefault ends the help of --repo: which repository a command takes
// without it (ops.Service.Repo).
const repoDefault = "(default: the repository of the current directory — the first of it and its parents that holds .agents/runs/ or .git — else the current directory)"
