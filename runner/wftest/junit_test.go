package wftest_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"github.com/flow-run/flow/internal/junit"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/wftest"
)

// junitDoc is what a CI reporter reads of a JUnit file.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Errors   int    `xml:"errors,attr"`
		Time     string `xml:"time,attr"`
		Cases    []struct {
			Classname string `xml:"classname,attr"`
			Name      string `xml:"name,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func junitFiles() []*wftest.FileResult {
	return []*wftest.FileResult{
		{
			File:     "w/sdlc.test.yaml",
			Tests:    &config.TestFile{Workflow: &config.Workflow{Name: "sdlc"}},
			Duration: 1500 * time.Millisecond,
			Results: []wftest.Result{
				{Name: "passes", Passed: true, Duration: 2 * time.Millisecond},
				{Name: `fails <"&">`, Failures: []string{
					"w/sdlc.test.yaml:9:9: path differs at step 4: want coding, got planning\n    want: a b\n    got:  a c",
					"w/sdlc.test.yaml:12:7: output holds \x00 and ]]> and \x1b[31m",
				}},
			},
		},
		{File: "w/bad.test.hcl", Err: errors.New("w/bad.test.hcl:4:16: unknown step \"reviw\"\nw/bad.test.hcl:5:1: more")},
	}
}

func TestJUnit(t *testing.T) {
	b, err := wftest.JUnit(junitFiles())
	if err != nil {
		t.Fatal(err)
	}
	// Well-formed: a strict decoder reads every token.
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, b)
		}
	}
	for _, err := range junit.Check(b) {
		t.Errorf("a reporter would not read it: %v", err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Tests != 3 || doc.Failures != 1 || doc.Errors != 1 || len(doc.Suites) != 2 {
		t.Fatalf("testsuites %+v", doc)
	}
	s := doc.Suites[0]
	if s.Name != "w/sdlc.test.yaml" || s.Tests != 2 || s.Failures != 1 || s.Time != "1.500" || len(s.Cases) != 2 {
		t.Fatalf("suite %+v", s)
	}
	pass, fail := s.Cases[0], s.Cases[1]
	if pass.Classname != "sdlc" || pass.Name != "passes" || pass.Time != "0.002" || pass.Failure != nil {
		t.Errorf("passing case %+v", pass)
	}
	if fail.Name != `fails <"&">` || fail.Failure == nil {
		t.Fatalf("failing case %+v", fail)
	}
	if want := "w/sdlc.test.yaml:9:9: path differs at step 4: want coding, got planning"; fail.Failure.Message != want {
		t.Errorf("failure message %q, want %q", fail.Failure.Message, want)
	}
	if !strings.Contains(fail.Failure.Text, "\n    got:  a c\nw/sdlc.test.yaml:12:7: output holds") || !strings.Contains(fail.Failure.Text, "]]>") {
		t.Errorf("failure text %q", fail.Failure.Text)
	}
	bad := doc.Suites[1]
	if bad.Name != "w/bad.test.hcl" || bad.Tests != 1 || bad.Errors != 1 || len(bad.Cases) != 1 || bad.Cases[0].Error == nil ||
		bad.Cases[0].Error.Message != `w/bad.test.hcl:4:16: unknown step "reviw"` {
		t.Errorf("invalid file's suite %+v", bad)
	}
}

func TestWriteJUnit(t *testing.T) {
	fs := afero.NewMemMapFs()
	if err := wftest.WriteJUnit(afero.NewReadOnlyFs(fs), "/out/junit.xml", junitFiles()); err == nil || !strings.Contains(err.Error(), "write junit /out/junit.xml") {
		t.Errorf("WriteJUnit on a read-only file system: err = %v", err)
	}
	if err := fs.MkdirAll("/out", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := wftest.WriteJUnit(fs, "/out/junit.xml", junitFiles()); err != nil {
		t.Fatal(err)
	}
	b, err := afero.ReadFile(fs, "/out/junit.xml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte(xml.Header)) || !bytes.Contains(b, []byte(`<testsuites tests="3" failures="1" errors="1"`)) {
		t.Errorf("junit.xml:\n%s", b)
	}
	names, _ := afero.ReadDir(fs, "/out")
	if len(names) != 1 {
		t.Errorf("files in /out: %d, want the report alone", len(names))
	}
}
