package ops

import (
	"context"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/junit"
)

const failingSteps = `name: wf
defaults:
  max_attempts: 2
steps:
  - id: build
    run: echo build
  - id: docs
    when: "false"
    run: echo docs
  - id: broken
    needs: [build]
    run: echo broken
`

// TestRunJUnit checks the JUnit report of a run with a failed and a
// skipped step: well-formed XML that reads back into the fields CI test
// reporters use.
func TestRunJUnit(t *testing.T) {
	s, _ := newService(t, failingSteps, map[string]reply{"broken": {Out: "something <broke> \x01\n", Exit: 3}})
	res := run(t, s, RunRequest{Workflow: wf, RunID: "r1"})
	if res.ExitCode != int(ExitFailed) {
		t.Fatalf("run exit %d; want 1", res.ExitCode)
	}
	if err := s.WriteRunJUnit(context.Background(), "", "r1", "out.xml"); err != nil {
		t.Fatal(err)
	}
	b, err := afero.ReadFile(s.FS, repo+"/out.xml")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range junit.Check(b) {
		t.Errorf("a reporter would not read it: %v", err)
	}
	var got junit.Suites
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatalf("not well-formed: %v\n%s", err, b)
	}
	if got.Tests != 3 || got.Failures != 1 || got.Skipped != 1 || len(got.Suites) != 1 {
		t.Fatalf("totals %+v\n%s", got, b)
	}
	suite := got.Suites[0]
	if suite.Name != "wf" || suite.Tests != 3 || suite.Failures != 1 || suite.Skipped != 1 || suite.Time == "" {
		t.Errorf("suite %+v", suite)
	}
	cases := map[string]junit.Case{}
	for _, c := range suite.Cases {
		if c.Classname != "wf" || c.Time == "" {
			t.Errorf("case %+v lacks classname or time", c)
		}
		cases[c.Name] = c
	}
	if c := cases["build"]; c.Failure != nil || c.Skipped != nil {
		t.Errorf("build %+v; want it passed", c)
	}
	if c := cases["docs"]; c.Skipped == nil || c.Failure != nil {
		t.Errorf("docs %+v; want it skipped", c)
	}
	c := cases["broken"]
	if c.Failure == nil || c.Failure.Message == "" {
		t.Fatalf("broken %+v; want a failure with a message", c)
	}
	props := map[string]string{}
	for _, p := range c.Properties {
		props[p.Name] = p.Value
	}
	if props["attempts"] != "2" || props["iterations"] == "" || props["status"] != "FAILED" {
		t.Errorf("broken's properties %v", props)
	}
	// The failure's text ends with the evidence the run recorded on the
	// failed step: its session's output.
	if !strings.HasSuffix(c.Failure.Text, "\n\nsomething <broke> \uFFFD") {
		t.Errorf("broken's failure text %q lacks its output", c.Failure.Text)
	}
	if !strings.Contains(string(b), "<testsuites") {
		t.Errorf("no <testsuites> root:\n%s", b)
	}
}

// TestRunJUnitUnknownRun is a usage error.
func TestRunJUnitUnknownRun(t *testing.T) {
	s, _ := newService(t, failingSteps, nil)
	_, err := s.RunJUnit(context.Background(), "", "nope")
	wantCode(t, err, ExitUsage)
}

// TestRunJUnitNotRun: steps that never ran, and one that waits on a
// human, are skipped with why, not passed.
func TestRunJUnitNotRun(t *testing.T) {
	s, _ := newService(t, `name: wf
steps:
  - id: build
    run: echo build
  - id: ship
    human: {message: "Ship?"}
  - id: deploy
    run: echo deploy
`, nil)
	res := run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
	if res.ExitCode != int(ExitHuman) {
		t.Fatalf("run exit %d; want 3", res.ExitCode)
	}
	suites, err := s.RunJUnit(context.Background(), "", "r1")
	if err != nil {
		t.Fatal(err)
	}
	if suites.Tests != 3 || suites.Skipped != 2 || suites.Failures != 0 {
		t.Errorf("totals %+v; want 3 tests, 2 skipped", suites)
	}
	want := map[string]string{"build": "", "ship": "waiting on a human", "deploy": "not run"}
	for _, c := range suites.Suites[0].Cases {
		got := ""
		if c.Skipped != nil {
			got = c.Skipped.Message
		}
		if w, ok := want[c.Name]; !ok || got != w || (w == "") != (c.Skipped == nil) {
			t.Errorf("%s: skipped %+v; want %q", c.Name, c.Skipped, w)
		}
	}
}
