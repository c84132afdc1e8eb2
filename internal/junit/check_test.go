package junit

import (
	"strings"
	"testing"
)

// TestCheck shows that Check accepts what reporters read and names each
// departure from it.
func TestCheck(t *testing.T) {
	const good = `<?xml version="1.0"?>
<testsuites tests="2" failures="1" errors="0" skipped="1" time="1.5">
  <testsuite name="wf" tests="2" failures="1" errors="0" skipped="1" time="1.5">
    <testcase classname="wf" name="a" time="1.000">
      <properties><property name="attempts" value="2"/></properties>
      <failure message="boom" type="step failed">boom</failure>
    </testcase>
    <testcase classname="wf" name="b" time="0"><skipped/></testcase>
  </testsuite>
</testsuites>`
	tests := []struct {
		name, from, to, want string
	}{
		{"good", "", "", ""},
		{"not XML", "</testsuites>", "", "not well-formed"},
		{"wrong root", "<testsuites ", "<results ", "root element is <results>"},
		{"suite without name", `<testsuite name="wf" `, `<testsuite `, "no name attribute"},
		{"case without classname", `classname="wf" name="a"`, `name="a"`, `testcase "a": no classname attribute`},
		{"time not decimal", `time="1.000"`, `time="1e0"`, `time "1e0" is not decimal seconds`},
		{"failure without message", `message="boom" `, ``, "<failure> has no message attribute"},
		{"properties after failure", `<properties><property name="attempts" value="2"/></properties>
      <failure message="boom" type="step failed">boom</failure>`, `<failure message="boom">boom</failure><properties/>`, "<properties> must come first"},
		{"counts disagree", `<testsuite name="wf" tests="2" failures="1"`, `<testsuite name="wf" tests="2" failures="0"`, `failures="0", but its cases count 1`},
		{"totals disagree", `<testsuites tests="2"`, `<testsuites tests="3"`, `testsuites: tests="3", but its suites count 2`},
		{"unknown element", `<skipped/>`, `<flaky/>`, `holds <flaky>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := good
			if tt.name == "wrong root" {
				doc = strings.Replace(doc, "</testsuites>", "</results>", 1)
			}
			if tt.from != "" || tt.to != "" {
				if !strings.Contains(doc, tt.from) {
					t.Fatalf("%q is not in the document", tt.from)
				}
				doc = strings.Replace(doc, tt.from, tt.to, 1)
			}
			errs := Check([]byte(doc))
			if tt.want == "" {
				for _, err := range errs {
					t.Errorf("unexpected: %v", err)
				}
				return
			}
			var all []string
			for _, err := range errs {
				all = append(all, err.Error())
			}
			if !strings.Contains(strings.Join(all, "\n"), tt.want) {
				t.Errorf("errors %q; want one containing %q", all, tt.want)
			}
		})
	}
}
