package main

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/configtest"
	"github.com/flow-run/flow/runner/wftest"
)

// TestShippedWorkflowTests runs the test file beside each shipped
// workflow: every test passes, and together they exercise every step,
// gate pass and fail, loop-back, when branch and human decision.
func TestShippedWorkflowTests(t *testing.T) {
	files, err := wftest.Expand(afero.NewOsFs(), []string{"../../workflows"})
	if err != nil || len(files) < 5 || !slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(f, ".test.hcl") }) {
		t.Fatalf("test files: %v", files)
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			tf, err := config.LoadTests(afero.NewOsFs(), file)
			if err != nil {
				t.Fatal(err)
			}
			results := wftest.Run(context.Background(), tf, wftest.Options{})
			for _, r := range results {
				if !r.Passed {
					t.Errorf("%s: %v", r.Name, r.Failures)
				}
			}
			if c := wftest.Cover(tf.Workflow, results); c.Percent < 100 {
				t.Errorf("coverage %.1f%%; not exercised: %v", c.Percent, c.Missing())
			}
		})
	}
}

// TestShippedHCLTestTwins checks that each shipped *.test.hcl file says
// what its YAML twin says: the same tests, scripts and expectations.
func TestShippedHCLTestTwins(t *testing.T) {
	files, _ := wftest.Expand(afero.NewOsFs(), []string{"../../workflows"})
	n := 0
	for _, file := range files {
		if !strings.HasSuffix(file, ".test.hcl") {
			continue
		}
		n++
		h, err := config.LoadTests(afero.NewOsFs(), file)
		if err != nil {
			t.Fatal(err)
		}
		y, err := config.LoadTests(afero.NewOsFs(), strings.TrimSuffix(file, ".hcl")+".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(withoutPositions(h), withoutPositions(y)) {
			t.Errorf("%s differs from its YAML twin", file)
		}
	}
	if n == 0 {
		t.Fatal("no shipped *.test.hcl file")
	}
}

// withoutPositions is a test file without what differs between a YAML
// file and its HCL twin: its name, bytes, workflow and positions.
func withoutPositions(tf *config.TestFile) *config.TestFile {
	c := *tf
	c.File, c.Source, c.Workflow, c.WorkflowPath = "", nil, nil, ""
	configtest.ZeroPos(&c)
	return &c
}
