package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/flow-run/flow/internal/safefs"
	"github.com/flow-run/flow/internal/suggest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/spf13/afero"
)

// StepLogs is the result of Logs: the session logs of one step.
type StepLogs struct {
	// RunID is the run's id.
	RunID string `json:"run_id"`
	// RunDir is the run's directory.
	RunDir string `json:"run_dir"`
	// Step is the step.
	Step core.StepKey `json:"step"`
	// Logs are the step's session logs, oldest first: every one, or the
	// latest only. Empty when the step's sessions printed nothing (a
	// session that prints nothing leaves no log).
	Logs []record.LogFile `json:"logs"`
}

// Logs lists the session logs of a step of a run (the newest run when
// runID is ""): the latest one, or with all every one, oldest first.
// The step "cleanup" is the workflow's cleanup session. An unknown run
// or step is an ExitUsage error; a step that has not run yet is an
// ExitRefused error. A step that ran and printed nothing has no logs
// and no error.
func (s *Service) Logs(repo, runID string, k core.StepKey, all bool) (StepLogs, error) {
	_, ref, err := s.openRun(repo, runID)
	if err != nil {
		return StepLogs{}, err
	}
	step, cleanup := k, core.Key(record.CleanupSession)
	if ref.State.Steps[step] == nil && (step == core.Key("cleanup") || step == cleanup) {
		// The workflow's cleanup session, unless a step is named so.
		step = cleanup
	}
	if ref.State.Steps[step] == nil && step != cleanup {
		return StepLogs{}, unknownStep(ref.ID, ref.State, step.String())
	}
	logs, err := record.StepLogs(s.FS, ref.Dir, step)
	if err != nil {
		return StepLogs{}, err
	}
	out := StepLogs{RunID: ref.ID, RunDir: ref.Dir, Step: step, Logs: []record.LogFile{}}
	if len(logs) == 0 {
		if ss := ref.State.Steps[step]; ss != nil && ss.StartedAt != nil {
			return out, nil
		}
		return StepLogs{}, Refused("step %s of run %s has not run yet", step, ref.ID)
	}
	if !all {
		// The latest session's own log, not its gate.check's.
		last := len(logs) - 1
		for last > 0 && logs[last].Check {
			last--
		}
		logs = logs[last : last+1]
	}
	out.Logs = logs
	return out, nil
}

// CopyLog writes a session log to w, streaming it: a log of any size
// is never held in memory whole.
func (s *Service) CopyLog(w io.Writer, l record.LogFile) error {
	f, err := s.openLog(l.Path)
	if err != nil {
		return fmt.Errorf("read log %s: %w", l.Name, err)
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("read log %s: %w", l.Name, err)
	}
	return nil
}

// followEvery is how often Follow looks for more output.
const followEvery = 200 * time.Millisecond

// Follow writes the latest log of logs to w as it grows, until its
// session ends (its step stops running, or runs another session) or
// ctx is cancelled. It returns nil then, after one last read for output
// written before the end.
func (s *Service) Follow(ctx context.Context, logs StepLogs, w io.Writer) error {
	if len(logs.Logs) == 0 {
		return nil
	}
	path := logs.Logs[len(logs.Logs)-1].Path
	var off int64
	read := func() {
		f, err := s.openLog(path)
		if err != nil {
			return
		}
		defer f.Close()
		if _, err := f.Seek(off, io.SeekStart); err == nil {
			n, _ := io.Copy(w, f)
			off += n
		}
	}
	for {
		read()
		st, _, err := record.LoadState(s.FS, logs.RunDir, false, s.clock().Now())
		if err != nil {
			return err
		}
		ss := st.Steps[logs.Step]
		if ss == nil || ss.Status != core.Running || ss.LogPath != path {
			read()
			return nil
		}
		if !s.sleep(ctx, followEvery) {
			return nil
		}
	}
}

// unknownStep says that a run has no step (or instance) of that name,
// and what it has: its steps of the top level, and for a step of a
// loop's body, how its instances are named.
func unknownStep(runID string, st *core.State, step string) error {
	var top []string
	example := ""
	for _, id := range st.StepOrder {
		if !id.IsInstance() {
			top = append(top, id.String())
			continue
		}
		if example == "" && id.Step == step {
			example = id.String()
		}
	}
	if example != "" {
		return Usage("step %q of run %s runs once per item of its loop: name an instance, e.g. %s (flow status %s --items lists them)", step, runID, example, runID)
	}
	msg := fmt.Sprintf("run %s has no step %q", runID, step)
	if c, ok := suggest.Closest(step, core.KeyStrings(st.StepOrder)); ok {
		msg += fmt.Sprintf(" (did you mean %q?)", c)
	}
	return Usage("%s; its steps: %s", msg, strings.Join(top, ", "))
}

// openLog opens a session log of a run for reading. On the real disk it
// is opened beneath the run's directory following no link, and only as
// a regular file, never waiting on a FIFO (internal/safefs): a session
// can plant a link or a FIFO where its log is, and a reader must not
// follow it out of the run, nor hang on it.
func (s *Service) openLog(path string) (afero.File, error) {
	if _, ok := s.FS.(*afero.OsFs); ok {
		return safefs.New(filepath.Dir(filepath.Dir(path))).Open(path)
	}
	return s.FS.Open(path)
}

// logsJSON writes the logs of a step as flow logs --json does: a
// LogChunk line per piece of each log, following the latest while its
// session runs when follow is set, then the line that ends them.
func (s *Service) logsJSON(ctx context.Context, logs StepLogs, follow bool, out io.Writer) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for i, lf := range logs.Logs {
		cw := newChunkWriter(enc, logs.RunID, logs.Step.String(), lf, 0)
		var err error
		if follow && i == len(logs.Logs)-1 {
			err = s.Follow(ctx, logs, cw)
		} else {
			err = s.CopyLog(cw, lf)
		}
		if err == nil {
			err = cw.Close()
		}
		if err != nil {
			return err
		}
	}
	st, _, err := record.LoadState(s.FS, logs.RunDir, false, s.clock().Now())
	if err != nil {
		return err
	}
	return enc.Encode(logEnd(logs.RunID, logs.Step, st))
}
