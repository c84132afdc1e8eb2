package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/wftest"
)

func (a *app) testCmd() *cobra.Command {
	var run, junit, as string
	var cover, asJSON bool
	var coverMin float64
	cmd := &cobra.Command{
		Use:   "test [FILE|DIR]...",
		Short: "Run workflow tests (*.test.yaml, *.test.hcl) in process, with scripted sessions",
		Long: `test runs the tests of each workflow test file (a DIR stands for the
*.test.yaml and *.test.hcl files in it; no argument means the current directory). Each test
runs its workflow through the real core and driver on a memory file system
with a fake clock: sessions, gate checks and human decisions follow the
test's script, and nothing touches the disk or starts a process. It prints
"ok" or "FAIL" per file, with each failure at its expectation's
file:line:col, and exits 1 when a test fails, 2 when a test file is invalid.
Its flags may also be spelled with one dash, as go test's are: -run REGEX.`,
		Example: "  flow test workflows/\n  flow test workflows/sdlc.test.yaml -run 'review' --cover\n  flow test workflows/ --junit test-report.xml",
		// -run, as go test spells it, is --run (goStyleFlags).
		Annotations: map[string]string{goFlags: "yes"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkAs(as); err != nil {
				return err
			}
			var filter *regexp.Regexp
			if run != "" {
				re, err := regexp.Compile(run)
				if err != nil {
					return ops.Usage("-run %q: %v", run, err)
				}
				filter = re
			}
			files, err := wftest.Expand(a.svc.FS, args)
			if err != nil {
				return ops.Usage("%v", err)
			}
			if len(files) == 0 {
				return ops.Usage("no *.test.yaml or *.test.hcl files in %s", strings.Join(args, " "))
			}
			code := ExitOK
			var reports []*wftest.FileResult
			for _, file := range files {
				c, fr := a.testFile(cmd, file, filter, as, cover || coverMin > 0, coverMin, asJSON)
				code = max(code, c)
				reports = append(reports, fr)
			}
			if junit != "" {
				// A report that cannot be written is a mistake in the
				// invocation: it exits 2, at least as high as any test.
				if err := wftest.WriteJUnit(a.svc.FS, junit, reports); err != nil {
					return ops.Usage("--junit: %v", err)
				}
			}
			if code != ExitOK {
				return exitQuietly(code)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "run only the tests whose name matches this regular expression")
	cmd.Flags().BoolVar(&cover, "cover", false, "print what the tests exercised of each workflow, and what they did not")
	cmd.Flags().Float64Var(&coverMin, "cover-min", 0, "fail when a workflow's coverage is below this percentage")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print only JSON on stdout, an object per line: one per test ({\"type\":\"test\",...}), then one per file ({\"type\":\"file\",...}: totals, coverage with --cover, an invalid file's diagnostics)")
	addAs(cmd, &as)
	cmd.Flags().StringVar(&junit, "junit", "", "also write the results as JUnit XML to `FILE`, for CI test reporters")
	return cmd
}

// testFile runs one test file and prints its results; it returns the
// exit code it calls for and the file's results (with Err set when it
// could not be loaded). With --json stdout has only JSON: a line per
// test and one for the file (wftest.FileLine), an invalid file's
// diagnostics in it; they are shown on stderr too.
func (a *app) testFile(cmd *cobra.Command, file string, filter *regexp.Regexp, as string, cover bool, coverMin float64, asJSON bool) (int, *wftest.FileResult) {
	out := a.stdio.Out
	fr, err := wftest.RunFile(cmd.Context(), a.svc.FS, file, wftest.Options{Filter: filter, Format: as})
	if err != nil {
		var ds config.Diagnostics
		if errors.As(err, &ds) {
			_ = a.renderDiagnostics(ds)
		} else {
			fmt.Fprintf(a.stdio.Err, "flow: %v\n", err)
		}
		fr = &wftest.FileResult{File: file, Err: err}
		if asJSON {
			_, fl := fr.Lines(nil, coverMin)
			if err := a.jsonLine(fl); err != nil {
				fmt.Fprintf(a.stdio.Err, "flow: %v\n", err)
			}
		} else {
			fmt.Fprintf(out, "FAIL  %s  [invalid test file]\n", file)
		}
		return ExitUsage, fr
	}
	tf, results, took := fr.Tests, fr.Results, fr.Duration
	var cov *wftest.Coverage
	if cover {
		c := wftest.Cover(tf.Workflow, results)
		cov = &c
	}
	tests, fl := fr.Lines(cov, coverMin)
	code := ExitOK
	if !fl.Passed {
		code = 1
	}
	if asJSON {
		for _, t := range tests {
			if err := a.jsonLine(t); err != nil {
				return ExitUsage, fr
			}
		}
		if err := a.jsonLine(fl); err != nil {
			return ExitUsage, fr
		}
		return code, fr
	}
	for _, r := range results {
		if r.Passed {
			continue
		}
		fmt.Fprintf(out, "--- FAIL: %s (%s:%d)\n", r.Name, file, r.Pos.Line)
		for _, f := range r.Failures {
			fmt.Fprintf(out, "    %s\n", strings.ReplaceAll(f, "\n", "\n    "))
		}
	}
	word := "ok"
	if code != ExitOK {
		word = "FAIL"
	}
	fmt.Fprintf(out, "%s  %s  %d %s  %dms\n", word, file, len(results), plural(len(results), "test", "tests"), took.Milliseconds())
	if cov != nil {
		fmt.Fprintf(out, "    coverage: %.1f%% of %d items of %s\n", cov.Percent, cov.Total, tf.WorkflowPath)
		for _, m := range cov.Missing() {
			fmt.Fprintf(out, "    not exercised: %s\n", m)
		}
		steps := make([]string, 0, len(cov.Retries))
		for s := range cov.Retries {
			steps = append(steps, s)
		}
		sort.Strings(steps)
		for _, s := range steps {
			fmt.Fprintf(out, "    retried: %s (%d)\n", s, cov.Retries[s])
		}
		if coverMin > 0 && cov.Percent < coverMin {
			fmt.Fprintf(out, "    coverage %.1f%% is below --cover-min %g%%\n", cov.Percent, coverMin)
		}
	}
	return code, fr
}

// jsonLine prints v on stdout as one line of JSON.
func (a *app) jsonLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdio.Out, "%s\n", b)
	return err
}
