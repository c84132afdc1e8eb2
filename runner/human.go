package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/gates"
	"github.com/flow-run/flow/internal/atomicfile"
)

// checkHuman reads the manual input file of a waiting step. It returns
// the input when a human has decided, or timedOut when human.timeout
// passed first.
func (x *run) checkHuman(id string) (in *HumanInput, timedOut bool, err error) {
	s := x.st.Steps[id]
	if s == nil || s.ManualInputPath == nil {
		return nil, false, nil
	}
	in, err = ReadManualInput(x.r.FS, *s.ManualInputPath)
	if err != nil {
		if x.warned[id] == err.Error() {
			return nil, false, nil
		}
		x.warned[id] = err.Error()
		return nil, false, err
	}
	if in != nil && decidedBefore(in, s) {
		in = nil
	}
	if in != nil {
		return in, false, nil
	}
	step := x.wf.Step(id)
	if step != nil && step.Human != nil && step.Human.Timeout != nil && s.StartedAt != nil {
		var env *gates.Env
		if step.Human.Timeout.Expr != nil {
			env = x.env(nil)
		}
		d, err := x.duration(step.Human.Timeout, env)
		if err == nil && d > 0 && x.r.Clock.Now().Sub(s.StartedAt.Time) >= d {
			return nil, true, nil
		}
	}
	return nil, false, nil
}

// ReadManualInput reads a manual input file: nil when there is none yet.
func ReadManualInput(fsys afero.Fs, path string) (*HumanInput, error) {
	b, err := afero.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read manual input %s: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("manual input %s is not a JSON object: %w", path, err)
	}
	if _, ok := raw["approved"]; !ok {
		return nil, fmt.Errorf("manual input %s has no \"approved\": true or false", path)
	}
	var in HumanInput
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("manual input %s: %w", path, err)
	}
	return &in, nil
}

// Decide records a human's decision for a step waiting in a run:
// what flow approve and flow reject do. It writes the manual input file
// atomically. Deciding again the same way is a no-op; deciding a step
// that is not waiting is an error that says what the step is doing.
func Decide(fsys afero.Fs, runDir, step string, in HumanInput, now time.Time) error {
	st, _, err := LoadState(fsys, runDir, false, now)
	if err != nil {
		return err
	}
	s := st.Steps[step]
	if s == nil {
		return fmt.Errorf("run %s has no step %q", st.RunID, step)
	}
	path := filepath.Join(st.ManualInputsDir, st.RunID+"__"+step+".json")
	if s.ManualInputPath != nil {
		path = *s.ManualInputPath
	}
	prev, _ := ReadManualInput(fsys, path)
	if s.Status != WaitingOnHuman {
		if (prev != nil && prev.Approved == in.Approved) || (s.Human != nil && s.Human.Approved == in.Approved) {
			return nil // already decided the same way
		}
		return fmt.Errorf("step %s of run %s is %s, not waiting on a human", step, st.RunID, s.Status)
	}
	if decidedBefore(prev, s) {
		prev = nil
	}
	if prev != nil {
		if prev.Approved == in.Approved {
			return nil
		}
		return fmt.Errorf("step %s of run %s was already %s by %s; the runner has not read it yet", step, st.RunID, verb(prev.Approved), prev.By)
	}
	if in.At == "" {
		in.At = Time{Time: now.UTC()}.String()
	}
	return writeManualInput(fsys, path, in)
}

// decidedBefore reports whether in is the decision of an earlier wait of
// step s: one written before the step began waiting this time. After a
// rejection loops back, the file of that decision is still there when the
// step waits again, and must not decide the new wait.
func decidedBefore(in *HumanInput, s *StepState) bool {
	if in == nil || in.At == "" || s.StartedAt == nil {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, in.At)
	return err == nil && t.Before(s.StartedAt.Time)
}

func verb(approved bool) string {
	if approved {
		return "approved"
	}
	return "rejected"
}

// ask asks at the terminal for a decision on a waiting step, when the
// runner has a way to ask. The answer is written as the manual input
// file, exactly as flow approve would, and noticed by the next poll.
// The question runs in its own goroutine, which is not waited for: a
// read of the terminal cannot be cancelled, and the process may exit
// while it waits.
func (x *run) ask(e AwaitHuman, msg string) {
	if x.r.Ask == nil || x.opts.NoWait {
		return
	}
	runID, fsys, now := x.st.RunID, x.r.FS, x.r.Clock.Now
	go func() {
		in, ok := x.r.Ask(runID, e.Step, msg)
		if !ok {
			return
		}
		if in.At == "" {
			in.At = Time{Time: now().UTC()}.String()
		}
		_ = writeManualInput(fsys, e.ManualInputPath, in)
	}()
}

// writeManualInput writes a manual input file atomically.
func writeManualInput(fsys afero.Fs, path string, in HumanInput) error {
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return err
	}
	if err := fsys.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write manual input: %w", err)
	}
	if err := atomicfile.WriteFile(fsys, path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write manual input: %w", err)
	}
	return nil
}

// humanMessage renders the message of a human step.
func (x *run) humanMessage(id string) string {
	s := x.wf.Step(id)
	if s == nil || s.Human == nil || s.Human.Message == nil {
		return ""
	}
	m, err := s.Human.Message.Compiled().Render(x.env(nil))
	if err != nil {
		return ""
	}
	return m
}

// archiveManualInput moves the manual input file of a decision the run
// has recorded out of the way, so that the step, when a loop-back makes
// it wait again, waits for a new decision. The file is kept beside, named
// after the iteration it decided.
func (x *run) archiveManualInput(step string) {
	s := x.st.Steps[step]
	if s == nil || s.ManualInputPath == nil {
		return
	}
	path := *s.ManualInputPath
	aside := fmt.Sprintf("%s.%d.%d.json", strings.TrimSuffix(path, ".json"), s.IterationCount, s.Attempts)
	if err := x.r.FS.Rename(path, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		x.printf("warning: keep decision of %s aside: %v\n", step, err)
	}
}
