package wftest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

// FileResult is the outcome of the tests of one test file.
type FileResult struct {
	File    string
	Tests   *config.TestFile
	Results []Result
	// Duration is the real time the file's tests took.
	Duration time.Duration
	// Err is why the file could not be loaded, for reports of every
	// file given (JUnit); Tests and Results are then empty. RunFile
	// returns such an error rather than setting it.
	Err error
}

// Expand turns flow test's arguments into test files: a directory
// stands for the test files in it (*.test.yaml, *.test.yml and
// *.test.hcl, see config.IsTestFile), in name order; no argument means
// the current directory.
func Expand(fs afero.Fs, args []string) ([]string, error) {
	if len(args) == 0 {
		args = []string{"."}
	}
	var out []string
	for _, arg := range args {
		fi, err := fs.Stat(arg)
		if err != nil {
			return nil, fmt.Errorf("test files: %w", err)
		}
		if !fi.IsDir() {
			out = append(out, arg)
			continue
		}
		entries, err := afero.ReadDir(fs, arg)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", arg, err)
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && config.IsTestFile(e.Name()) {
				names = append(names, filepath.Join(arg, e.Name()))
			}
		}
		sort.Strings(names)
		out = append(out, names...)
	}
	return out, nil
}

// RunFile loads the test file at path through fs and runs its tests; an
// invalid file is config.LoadTests's error.
func RunFile(ctx context.Context, fs afero.Fs, path string, opts Options) (*FileResult, error) {
	tf, err := config.LoadTestsAs(fs, path, opts.Format)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	res := Run(ctx, tf, opts)
	return &FileResult{File: path, Tests: tf, Results: res, Duration: time.Since(began)}, nil
}

// TestLine is the JSON line flow test --json prints for each test: the
// test's Result, its "type" "test" and its file.
type TestLine struct {
	Type string `json:"type"`
	File string `json:"file"`
	Result
}

// MarshalJSON writes the line as one object: "type" and "file", then
// the fields of the Result.
func (t TestLine) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(struct {
		Type string `json:"type"`
		File string `json:"file"`
	}{t.Type, t.File})
	if err != nil {
		return nil, err
	}
	r, err := json.Marshal(t.Result)
	if err != nil {
		return nil, err
	}
	// head is {"type":...,"file":...}, r an object with fields.
	return append(append(head[:len(head)-1], ','), r[1:]...), nil
}

// FileLine is the JSON line flow test --json prints for each test file,
// after the lines of its tests: "type" "file", whether every test
// passed (and the coverage reached --cover-min), how many ran and
// failed, how long they took, the coverage when it was asked for, and
// for a file that could not be loaded its error and diagnostics (the
// objects of flow validate --json).
type FileLine struct {
	Type       string          `json:"type"`
	File       string          `json:"file"`
	Workflow   string          `json:"workflow,omitempty"`
	Passed     bool            `json:"passed"`
	Tests      int             `json:"tests"`
	Failed     int             `json:"failed"`
	DurationMS int64           `json:"duration_ms"`
	Coverage   *Coverage       `json:"coverage,omitempty"`
	CoverMin   float64         `json:"cover_min,omitempty"`
	Error      string          `json:"error,omitempty"`
	Problems   json.RawMessage `json:"diagnostics,omitempty"`
}

// Lines returns the JSON lines of a file's results (FileLine, TestLine):
// a line per test, then the file's line. cov is the workflow's coverage
// when it was asked for, and coverMin the least coverage asked for (0:
// none); a coverage below it fails the file.
func (fr *FileResult) Lines(cov *Coverage, coverMin float64) ([]TestLine, FileLine) {
	fl := FileLine{Type: "file", File: fr.File, Passed: fr.Err == nil, DurationMS: fr.Duration.Milliseconds(), Coverage: cov, CoverMin: coverMin}
	if fr.Err != nil {
		fl.Error = fr.Err.Error()
		var ds config.Diagnostics
		if errors.As(fr.Err, &ds) {
			fl.Problems, _ = ds.JSON()
		}
		return nil, fl
	}
	if fr.Tests != nil {
		fl.Workflow = fr.Tests.WorkflowPath
	}
	tests := make([]TestLine, 0, len(fr.Results))
	for _, r := range fr.Results {
		tests = append(tests, TestLine{Type: "test", File: fr.File, Result: r})
		fl.Tests++
		if !r.Passed {
			fl.Failed++
			fl.Passed = false
		}
	}
	if cov != nil && coverMin > 0 && cov.Percent < coverMin {
		fl.Passed = false
	}
	return tests, fl
}
