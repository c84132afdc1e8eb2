// Package junit encodes test results as JUnit XML, as CI test reporters
// (GitHub's and GitLab's among them) read it: the common subset of the
// Ant and Surefire formats.
package junit

import (
	"encoding/xml"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/atomicfile"
)

// Suites is the <testsuites> document.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr,omitempty"`
	Time     string   `xml:"time,attr"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one <testsuite>.
type Suite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr,omitempty"`
	Time     string `xml:"time,attr"`
	Cases    []Case `xml:"testcase"`
}

// Case is one <testcase>.
type Case struct {
	Classname  string     `xml:"classname,attr"`
	Name       string     `xml:"name,attr"`
	Time       string     `xml:"time,attr"`
	Properties []Property `xml:"properties>property,omitempty"`
	Failure    *Problem   `xml:"failure,omitempty"`
	Error      *Problem   `xml:"error,omitempty"`
	Skipped    *Skipped   `xml:"skipped,omitempty"`
}

// Property is one <property> of a case.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Problem is a <failure> or an <error>.
type Problem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	// Text is CDATA, so that its lines read as lines; Text makes it
	// valid XML.
	Text string `xml:",cdata"`
}

// Skipped is a <skipped/> case's marker.
type Skipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// NewProblem returns a problem of type typ whose message is the first
// line of text and whose text is all of it, made valid XML.
func NewProblem(typ, text string) *Problem {
	line, _, _ := strings.Cut(text, "\n")
	return &Problem{Message: Text(line), Type: typ, Text: Text(text)}
}

// Total sums the suites' counts into s's.
func (s *Suites) Total() {
	s.Tests, s.Failures, s.Errors, s.Skipped = 0, 0, 0, 0
	for _, x := range s.Suites {
		s.Tests += x.Tests
		s.Failures += x.Failures
		s.Errors += x.Errors
		s.Skipped += x.Skipped
	}
}

// Marshal encodes s as an XML document.
func Marshal(s Suites) ([]byte, error) {
	b, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode junit: %w", err)
	}
	return append(append([]byte(xml.Header), b...), '\n'), nil
}

// Write writes Marshal(s) to path through fs, atomically: a reader sees
// the old file or the whole new one.
func Write(fs afero.Fs, path string, s Suites) error {
	b, err := Marshal(s)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(fs, path, b, 0o644); err != nil {
		return fmt.Errorf("write junit %s: %w", path, err)
	}
	return nil
}

// Seconds formats a duration as JUnit's seconds with milliseconds.
func Seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// Text replaces what XML cannot hold (control characters other than
// tab, newline and carriage return; invalid UTF-8) with U+FFFD.
func Text(s string) string {
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
