package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFrontEndOnly keeps the command a front end of runner/ops: it
// meets the operating system only in Run (root.go), and never reads
// runs, run files or workflows itself.
func TestFrontEndOnly(t *testing.T) {
	osOnly := []string{"time.Now", "os.Getenv", "os.Hostname", "os.Getpid", "os.Environ", "os.Getwd", "proc.OS", "clock.Real"}
	never := []string{"afero.ReadFile", "afero.Glob", "afero.Exists", "record.LoadState", "record.FindRun", "record.ListRuns",
		"local.Decide", "record.SetDesired", "spec.PlanStartAt", "record.Live(", "local.Runner{", "record.LogsDir",
		"record.EventsFile", "record.StateFile", "record.RunsDir", "config.Load"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		for _, s := range never {
			if strings.Contains(src, s) {
				t.Errorf("%s uses %s: that is the operations layer's business", f, s)
			}
		}
		if f == "root.go" {
			continue
		}
		for _, s := range osOnly {
			if strings.Contains(src, s) {
				t.Errorf("%s uses %s: the operating system enters only in Run (root.go)", f, s)
			}
		}
	}
}
