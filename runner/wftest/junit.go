package wftest

import (
	"encoding/xml"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/atomicfile"
)

// The JUnit XML elements flow test writes, as CI test reporters read
// them (the common subset of the Ant and Surefire formats).
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Time     string      `xml:"time,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Classname string        `xml:"classname,attr"`
		Name      string        `xml:"name,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitProblem `xml:"failure,omitempty"`
		Error     *junitProblem `xml:"error,omitempty"`
	}
	junitProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		// Text is CDATA, so that its lines read as lines; xmlText makes
		// it valid XML.
		Text string `xml:",cdata"`
	}
)

// JUnit encodes the results of test files as JUnit XML for CI test
// reporters: one <testsuite> per file (its name the file's path), one
// <testcase> per test (classname the workflow's name, name the test's),
// and for a failed test a <failure> whose message is its first failure
// and whose text all of them, each at its file:line:col. A file that
// could not be loaded (Err set) is a suite with one <error> case holding
// the error.
func JUnit(files []*FileResult) ([]byte, error) {
	all := junitSuites{}
	var total time.Duration
	for _, fr := range files {
		s := junitSuite{Name: fr.File, Time: seconds(fr.Duration)}
		total += fr.Duration
		if fr.Err != nil {
			s.Tests, s.Errors = 1, 1
			s.Cases = []junitCase{{Classname: fr.File, Name: "load " + fr.File, Time: seconds(0),
				Error: &junitProblem{Message: firstLine(fr.Err.Error()), Type: "invalid test file", Text: xmlText(fr.Err.Error())}}}
		}
		class := fr.File
		if fr.Tests != nil && fr.Tests.Workflow != nil {
			class = fr.Tests.Workflow.Name
		}
		for _, r := range fr.Results {
			c := junitCase{Classname: class, Name: r.Name, Time: seconds(r.Duration)}
			s.Tests++
			if !r.Passed {
				s.Failures++
				text := strings.Join(r.Failures, "\n")
				if len(r.Failures) == 0 {
					text = "failed"
				}
				c.Failure = &junitProblem{Message: firstLine(text), Type: "expectation", Text: xmlText(text)}
			}
			s.Cases = append(s.Cases, c)
		}
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Errors += s.Errors
		all.Suites = append(all.Suites, s)
	}
	all.Time = seconds(total)
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode junit: %w", err)
	}
	return append(append([]byte(xml.Header), b...), '\n'), nil
}

// WriteJUnit writes JUnit(files) to path through fs, atomically: a
// reader sees the old file or the whole new one.
func WriteJUnit(fs afero.Fs, path string, files []*FileResult) error {
	b, err := JUnit(files)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(fs, path, b, 0o644); err != nil {
		return fmt.Errorf("write junit %s: %w", path, err)
	}
	return nil
}

// seconds formats a duration as JUnit's seconds with milliseconds.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// xmlText replaces what XML cannot hold (control characters other than
// tab, newline and carriage return; invalid UTF-8) with U+FFFD.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == utf8.RuneError, r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r <= 0xDFFF:
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
