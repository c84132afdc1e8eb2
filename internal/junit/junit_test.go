package junit

import (
	"encoding/xml"
	"testing"

	"github.com/spf13/afero"
)

// TestWriteRoundTrip writes suites holding text XML cannot carry as is
// and reads them back.
func TestWriteRoundTrip(t *testing.T) {
	in := Suites{Suites: []Suite{{Name: "wf", Tests: 2, Failures: 1, Skipped: 1, Time: Seconds(1500e6), Cases: []Case{
		{Classname: "wf", Name: "a", Time: "1.000", Failure: NewProblem("step failed", "bad \x01 <x> ]]> \xff\nmore"),
			Properties: []Property{{Name: "attempts", Value: "2"}}},
		{Classname: "wf", Name: "b", Time: "0.000", Skipped: &Skipped{}},
	}}}}
	in.Total()
	fs := afero.NewMemMapFs()
	if err := Write(fs, "/out.xml", in); err != nil {
		t.Fatal(err)
	}
	b, err := afero.ReadFile(fs, "/out.xml")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range Check(b) {
		t.Errorf("a reporter would not read it: %v", err)
	}
	var out Suites
	if err := xml.Unmarshal(b, &out); err != nil {
		t.Fatalf("not well-formed: %v\n%s", err, b)
	}
	c := out.Suites[0].Cases[0]
	if out.Tests != 2 || out.Failures != 1 || out.Skipped != 1 || out.Suites[0].Time != "1.500" {
		t.Errorf("totals %+v", out)
	}
	if c.Failure == nil || c.Failure.Message != "bad \uFFFD <x> ]]> \uFFFD" || c.Failure.Text != "bad \uFFFD <x> ]]> \uFFFD\nmore" {
		t.Errorf("failure %+v", c.Failure)
	}
	if len(c.Properties) != 1 || c.Properties[0].Value != "2" || out.Suites[0].Cases[1].Skipped == nil {
		t.Errorf("cases %+v", out.Suites[0].Cases)
	}
}
