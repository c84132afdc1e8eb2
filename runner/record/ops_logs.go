package record

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/runner/core"
)

// LogFile is one session log of a step, with what its name says.
type LogFile struct {
	// Path is the log's path.
	Path string `json:"path"`
	// Name is the log's file name, for people.
	Name string `json:"name"`
	// Generation is the run's generation when the session ran: 0 before
	// any --start-at-step or retry.
	Generation int `json:"generation"`
	// Iteration is the step's iteration (loop-backs into it).
	Iteration int `json:"iteration"`
	// Attempt is the session's attempt within its iteration; for the
	// cleanup session, its number in the run.
	Attempt int `json:"attempt"`
	// Check is true for the output of the session's gate.check.
	Check bool `json:"check,omitempty"`
}

// StepLogs lists the session logs of a step of the run in runDir,
// oldest first (by generation, iteration, then attempt), each session's
// gate.check log after it. A run without a logs directory has no logs.
//
// Log names are the driver's (names.go): <step>.<iteration>.<attempt>.log,
// with g<generation> before the iteration from generation 1 on, a step
// instance's key written loop.item.step, and @cleanup.<n>.log for the
// cleanup session (step CleanupSession).
func StepLogs(fsys afero.Fs, runDir string, step core.StepKey) ([]LogFile, error) {
	dir := filepath.Join(runDir, LogsDir)
	entries, err := afero.ReadDir(fsys, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the logs of %s: %w", step, err)
	}
	var logs []LogFile
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if l, ok := parseLogName(e.Name(), step); ok {
			l.Path = filepath.Join(dir, e.Name())
			logs = append(logs, l)
		}
	}
	slices.SortStableFunc(logs, func(a, b LogFile) int {
		if a.Generation != b.Generation {
			return a.Generation - b.Generation
		}
		if a.Iteration != b.Iteration {
			return a.Iteration - b.Iteration
		}
		if a.Attempt != b.Attempt {
			return a.Attempt - b.Attempt
		}
		if a.Check != b.Check && b.Check {
			return -1
		}
		if a.Check != b.Check {
			return 1
		}
		return 0
	})
	return logs, nil
}

// parseLogName reads a session log's name: ok is false for anything
// that is not a session log of step.
func parseLogName(name string, step core.StepKey) (LogFile, bool) {
	rest, ok := strings.CutPrefix(name, file(step)+".")
	if !ok {
		return LogFile{}, false
	}
	rest, ok = strings.CutSuffix(rest, ".log")
	if !ok {
		return LogFile{}, false
	}
	l := LogFile{Name: name}
	rest, l.Check = strings.CutSuffix(rest, ".check")
	parts := strings.Split(rest, ".")
	if g, ok := strings.CutPrefix(parts[0], "g"); ok && len(parts) > 1 {
		n, err := strconv.Atoi(g)
		if err != nil || n < 0 {
			return LogFile{}, false
		}
		l.Generation, parts = n, parts[1:]
	}
	nums := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return LogFile{}, false
		}
		nums[i] = n
	}
	switch {
	case len(nums) == 2:
		l.Iteration, l.Attempt = nums[0], nums[1]
	case len(nums) == 1 && step == core.Key(CleanupSession):
		l.Attempt = nums[0]
	default:
		return LogFile{}, false
	}
	return l, true
}

// ReadEvents returns the events of the run in runDir with a seq
// greater than after, oldest first. A log with a fault in it is read up
// to the fault, and the error wraps *eventlog.CorruptError.
func ReadEvents(fsys afero.Fs, runDir string, after int64) ([]core.Event, error) {
	events, err := eventlog.Read(fsys, filepath.Join(runDir, EventsFile), after)
	if err != nil {
		return events, fmt.Errorf("read the events of %s: %w", filepath.Base(runDir), err)
	}
	return events, nil
}
