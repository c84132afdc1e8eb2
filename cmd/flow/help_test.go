package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/flow-run/flow/runner/ops"
)

// TestHelpTexts: the help of the commands that run a run lists every
// exit code of the table, and says what --max-iterations counts: the
// runs of a loop, a default under the steps' own budgets for run and
// resume, and over them for retry.
func TestHelpTexts(t *testing.T) {
	help := func(t *testing.T, cmd string) string {
		t.Helper()
		var out, errb bytes.Buffer
		// Not Run: it would make the test binary the subreaper of the
		// scripts' orphans (proc.OS), which it never reaps.
		a := &app{stdio: Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, svc: &ops.Service{}}
		if code := a.exit(context.Background(), a.rootCmd(), []string{cmd, "--help"}); code != 0 {
			t.Fatalf("flow %s --help: exit %d: %s", cmd, code, errb.String())
		}
		return out.String()
	}
	for _, tc := range []struct {
		cmd  string
		want []string
		not  []string
	}{
		{cmd: "run", want: []string{`--max-iterations int +default runs of a loop: its gate's N-th failure ends the run, after N-1 loop-backs \(steps' and gates' own max_iterations win`}, not: []string{"default loop-backs"}},
		{cmd: "resume", want: []string{`--max-iterations int +default runs of a loop`}},
		{cmd: "retry", want: []string{
			`overrides the\nsteps' and gates' own budgets`,
			`--max-iterations int +for this retry, the runs of every loop, over the steps' and gates' own max_iterations`,
		}, not: []string{"max_iterations win"}},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			got := help(t, tc.cmd)
			for _, c := range ops.ExitCodes() {
				line := fmt.Sprintf("\n  %-4d %s\n", int(c), c.Meaning())
				if !strings.Contains(got, line) {
					t.Errorf("flow %s --help lacks exit code %d (%q)", tc.cmd, int(c), line)
				}
			}
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(got) {
					t.Errorf("flow %s --help does not match %q:\n%s", tc.cmd, w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("flow %s --help says %q", tc.cmd, n)
				}
			}
		})
	}
}
