package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/wftest"
)

// TestShippedWorkflowTests runs the test file beside each shipped
// workflow: every test passes, and together they exercise every step,
// gate pass and fail, loop-back, when branch and human decision.
func TestShippedWorkflowTests(t *testing.T) {
	files, _ := filepath.Glob("../../workflows/*.test.yaml")
	if len(files) < 4 {
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
