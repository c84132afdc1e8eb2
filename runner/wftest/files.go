package wftest

import (
	"context"
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
