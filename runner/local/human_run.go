package local

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/flow-run/flow/gates"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// checkHuman reads the manual input file of a waiting step. It returns
// the input when a human has decided, or timedOut when human.timeout
// passed first.
func (x *run) checkHuman(id core.StepKey) (in *core.HumanInput, timedOut bool, err error) {
	s := x.st.Steps[id]
	if s == nil || s.ManualInputPath == nil {
		return nil, false, nil
	}
	step := x.stepOf(id)
	anyFile := step != nil && step.Human != nil && step.Human.AnyFile
	in, err = record.ReadDecision(x.r.FS, *s.ManualInputPath, anyFile)
	if err != nil {
		if x.warned[id.String()] == err.Error() {
			return nil, false, nil
		}
		x.warned[id.String()] = err.Error()
		return nil, false, err
	}
	if in != nil && record.DecidedBefore(in, s) {
		in = nil
	}
	if in != nil && !anyFile {
		// flow approve, flow reject and Mission Control date their
		// decisions; a file with no time, or one from the future, was
		// not made by them for this wait.
		if why := record.Undated(in, x.r.Clock.Now()); why != "" {
			if msg := "manual input " + *s.ManualInputPath + " ignored: " + why; x.warned[id.String()] != msg {
				x.warned[id.String()] = msg
				x.warn(id, msg)
			}
			return nil, false, nil
		}
	}
	if in != nil {
		x.fillInputs(id, in)
		return in, false, nil
	}
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

// fillInputs gives an approval the defaults of the inputs its step
// declares and it does not give: a decision file written by hand, or by
// a tool other than flow approve, renders them as flow approve would.
func (x *run) fillInputs(id core.StepKey, in *core.HumanInput) { record.FillInputs(x.stepOf(id), in) }

// ask asks at the terminal for a decision on a waiting step, when the
// runner has a way to ask. The answer is written as the manual input
// file, exactly as flow approve would, and noticed by the next poll.
// The question runs in its own goroutine, which is not waited for: a
// read of the terminal cannot be cancelled, and the process may exit
// while it waits.
func (x *run) ask(e core.AwaitHuman, msg string) {
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
			in.At = core.Time{Time: now().UTC()}.String()
		}
		if err := record.CreateManualInput(fsys, e.ManualInputPath, in); errors.Is(err, fs.ErrExist) {
			x.printf("%s: already decided elsewhere; your answer was not recorded\n", e.Step)
		}
	}()
}

// humanExprError evaluates the message and the timeout of a human
// step as the wait will, and returns why one cannot be evaluated, or "".
func (x *run) humanExprError(id core.StepKey) string {
	s := x.stepOf(id)
	if s == nil || s.Human == nil {
		return ""
	}
	if m := s.Human.Message; m != nil {
		if _, err := m.Compiled().RenderLimit(x.env(&stepFacts{step: id}), int(x.limits.Prompt)); err != nil {
			return fmt.Sprintf("%s: human.message: %v", posString(m.Pos), err)
		}
	}
	if t := s.Human.Timeout; t != nil && t.Expr != nil {
		if _, err := x.duration(t, x.env(nil)); err != nil {
			return fmt.Sprintf("%s: human.timeout: %v", posString(t.Pos), err)
		}
	}
	return ""
}

// humanMessage renders the message of a human step.
func (x *run) humanMessage(id core.StepKey) string {
	s := x.stepOf(id)
	if s == nil || s.Human == nil || s.Human.Message == nil {
		return ""
	}
	m, err := s.Human.Message.Compiled().RenderLimit(x.env(&stepFacts{step: id}), int(x.limits.Prompt))
	if err != nil {
		return ""
	}
	return m
}

// archiveManualInput moves the manual input file of a decision the run
// has recorded out of the way, so that the step, when a loop-back makes
// it wait again, waits for a new decision. The file is kept beside, named
// after the iteration it decided.
func (x *run) archiveManualInput(step core.StepKey) {
	s := x.st.Steps[step]
	if s == nil || s.ManualInputPath == nil {
		return
	}
	path := *s.ManualInputPath
	aside := x.names.ArchivedDecision(step, s.IterationCount, s.Attempts)
	if err := x.rec.Rename(path, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		x.printf("warning: keep decision of %s aside: %v\n", step, err)
	}
}
