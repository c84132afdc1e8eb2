package wftest

import (
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/junit"
)

// JUnit encodes the results of test files as JUnit XML for CI test
// reporters: one <testsuite> per file (its name the file's path), one
// <testcase> per test (classname the workflow's name, name the test's),
// and for a failed test a <failure> whose message is its first failure
// and whose text all of them, each at its file:line:col. A file that
// could not be loaded (Err set) is a suite with one <error> case holding
// the error.
func JUnit(files []*FileResult) ([]byte, error) {
	return junit.Marshal(suites(files))
}

// suites turns the results of test files into JUnit's suites.
func suites(files []*FileResult) junit.Suites {
	all := junit.Suites{}
	var total time.Duration
	for _, fr := range files {
		s := junit.Suite{Name: fr.File, Time: junit.Seconds(fr.Duration)}
		total += fr.Duration
		if fr.Err != nil {
			s.Tests, s.Errors = 1, 1
			s.Cases = []junit.Case{{Classname: fr.File, Name: "load " + fr.File, Time: junit.Seconds(0),
				Error: junit.NewProblem("invalid test file", fr.Err.Error())}}
		}
		class := fr.File
		if fr.Tests != nil && fr.Tests.Workflow != nil {
			class = fr.Tests.Workflow.Name
		}
		for _, r := range fr.Results {
			c := junit.Case{Classname: class, Name: r.Name, Time: junit.Seconds(r.Duration)}
			s.Tests++
			if !r.Passed {
				s.Failures++
				text := strings.Join(r.Failures, "\n")
				if len(r.Failures) == 0 {
					text = "failed"
				}
				c.Failure = junit.NewProblem("expectation", text)
			}
			s.Cases = append(s.Cases, c)
		}
		all.Suites = append(all.Suites, s)
	}
	all.Total()
	all.Time = junit.Seconds(total)
	return all
}

// WriteJUnit writes JUnit(files) to path through fs, atomically: a
// reader sees the old file or the whole new one.
func WriteJUnit(fs afero.Fs, path string, files []*FileResult) error {
	return junit.Write(fs, path, suites(files))
}
