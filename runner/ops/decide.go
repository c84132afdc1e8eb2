package ops

import (
	"strings"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// DecideRequest is a human's decision on a step that waits.
type DecideRequest struct {
	// Repo is the repository of the run; "" is the Service's directory.
	Repo string
	// RunID names the run; "" is the one run of the repository that
	// has not finished, when there is exactly one (openTarget).
	RunID string
	// Step is the human step; "" with a RunID that names no run of
	// the repository makes RunID the step (runOrStep), and with none
	// lists the steps that wait.
	Step core.StepKey
	// Approve approves the step; false rejects it.
	Approve bool
	// By names who decides; "" is the Service's user.
	By string
	// Input is what an approval gives later steps (steps.<id>.input);
	// when the step declares its inputs, Decide checks it against them
	// and fills in their defaults.
	Input map[string]any
	// Reason says why; a rejection needs one.
	Reason string
}

// Decision is the result of Decide.
type Decision struct {
	// RunID is the run's id.
	RunID string `json:"run_id"`
	// Step is the step decided.
	Step string `json:"step"`
	// Approved is true for an approval, false for a rejection.
	Approved bool `json:"approved"`
	// By is who decided.
	By string `json:"by"`
	// At is when the decision was made (UTC, as in run_state.json); for
	// an earlier identical decision, when that one was made.
	At string `json:"at"`
	// Already is true when the same decision had been made before:
	// nothing changed.
	Already bool `json:"already"`
}

// Decide records a human's decision on a step waiting in a run: what
// flow approve and flow reject do (record.SubmitDecision). Exactly one decision
// wins per wait. A rejection without a reason, an unknown run or step
// are ExitUsage errors; a step that is not waiting, or was already
// decided otherwise, is an ExitRefused error saying what was decided,
// by whom and when. Asking for the decision already made is not an
// error: the result has Already set. An approval's inputs are checked
// against those the step declares, and their defaults filled in
// (ResolveInputs); a rejection needs none.
func (s *Service) Decide(req DecideRequest) (Decision, error) {
	verb := "approve"
	if !req.Approve {
		verb = "reject"
	}
	asStep, arg := false, ""
	if req.Step.IsZero() {
		req.RunID, arg, asStep = s.runOrStep(req.Repo, req.RunID)
	}
	repo, ref, err := s.openTarget(req.Repo, req.RunID, verb)
	if err != nil {
		return Decision{}, err
	}
	if asStep {
		k, err := core.ParseStepKey(arg)
		if err != nil {
			return Decision{}, s.notRunNorStep(repo, arg, ref)
		}
		req.Step = k
	}
	step := req.Step.String()
	switch {
	case req.Step.IsZero():
		return Decision{}, noStep(verb, ref)
	case ref.State.Steps[req.Step] == nil && asStep:
		return Decision{}, s.notRunNorStep(repo, step, ref)
	case ref.State.Steps[req.Step] == nil:
		return Decision{}, unknownStep(ref.ID, ref.State, step)
	}
	if !req.Approve && strings.TrimSpace(req.Reason) == "" {
		return Decision{}, Usage("reject needs --reason\ntry: flow reject %s %s --reason 'why'", ref.ID, core.ShellArg(step))
	}
	in := core.HumanInput{Approved: req.Approve, By: s.Who(req.By), Reason: req.Reason}
	if req.Approve {
		if in.Input, err = ResolveInputs(step, s.stepInputs(repo, ref, req.Step), req.Input); err != nil {
			return Decision{}, err
		}
	}
	now := s.clock().Now()
	already, err := record.SubmitDecision(s.FS, ref.Dir, req.Step, in, now)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{RunID: ref.ID, Step: step, Approved: req.Approve, By: in.By, At: core.Time{Time: now.UTC()}.String()}
	if already != nil {
		d.Already, d.By, d.At = true, already.Already.By, already.Already.At
	}
	return d, nil
}

// ControlRequest asks a run's runner to change what it does between
// sessions.
type ControlRequest struct {
	// Repo is the repository of the run; "" is the Service's directory.
	Repo string
	// RunID names the run; "" is the one run of the repository that
	// has not finished, when there is exactly one (openTarget).
	RunID string
	// State is the desired state: pause, continuous, run_once or
	// run_cleanup.
	State core.ControlState
	// By names who asks; "" is the Service's user.
	By string
	// Note is kept in control.json.
	Note string
}

// ControlResult is the result of Control.
type ControlResult struct {
	// RunID is the run's id.
	RunID string `json:"run_id"`
	// DesiredState is the state asked for.
	DesiredState core.ControlState `json:"desired_state"`
	// By is who asked.
	By string `json:"by"`
	// Note is the note kept with it.
	Note string `json:"note"`
	// RunnerLive is true when a live runner holds the run and reads the
	// desired state between its sessions; when false, nothing happens
	// until flow resume starts a runner (record.LiveRunner).
	RunnerLive bool `json:"runner_live"`
	// Cleanup is, for flow cleanup on a finished run, how the cleanup
	// session that was run ended (its ExitCode 0, 1 or 130); the run's
	// own status is unchanged.
	Cleanup *RunResult `json:"cleanup,omitempty"`
}

// controlVerbs names the command of each desired state, for messages.
var controlVerbs = map[core.ControlState]string{
	core.Pause:      "pause",
	core.Continuous: "continue",
	core.RunOnce:    "run-once",
	core.RunCleanup: "cleanup",
}

// Control writes the desired state of a run (given none, the one run
// that has not finished: openTarget) in its control file; the runner reads it between sessions and
// never interrupts one. A run that has already ended is refused
// (ExitRefused: run_once has no next session to run; the cleanup of a
// finished run is Local.Control's, which runs it); so is run_cleanup
// for a workflow that declares no cleanup session. An unknown run is
// an ExitUsage error; an invalid state is an ExitUsage error. The result says whether a live runner holds
// the run: without one, the desired state takes effect at the next flow
// resume.
func (s *Service) Control(req ControlRequest) (ControlResult, error) {
	verb, ok := controlVerbs[req.State]
	if !ok {
		return ControlResult{}, Usage("unknown desired state %q", req.State)
	}
	repo, ref, err := s.openTarget(req.Repo, req.RunID, verb)
	if err != nil {
		return ControlResult{}, err
	}
	if st := ref.State; st.Status.Terminal() {
		switch req.State {
		case core.RunOnce:
			return ControlResult{}, Refused("run %s has already %s (exit %d): there is no next session to run once; to run steps again: flow run %s --start-at-step STEP",
				ref.ID, st.Status, st.ExitCode, st.WorkflowFile)
		case core.RunCleanup:
			if err := s.checkCleanup(repo, ref); err != nil {
				return ControlResult{}, err
			}
			return ControlResult{}, Refused("run %s has already %s: its cleanup session runs on the command line (flow cleanup %s), which takes the run for that one session",
				ref.ID, st.Status, ref.ID)
		}
		return ControlResult{}, Refused("run %s has already %s (exit %d); %s applies to a run that has not ended; to run steps again: flow run %s --start-at-step STEP",
			ref.ID, st.Status, st.ExitCode, verb, st.WorkflowFile)
	}
	if req.State == core.RunCleanup {
		if err := s.checkCleanup(repo, ref); err != nil {
			return ControlResult{}, err
		}
	}
	by := s.Who(req.By)
	now := s.clock().Now()
	_, live := record.LiveRunner(s.FS, ref.Dir, ref.State, now, s.alive())
	if err := record.SetDesired(s.FS, ref.Dir, req.State, by, req.Note, now, !live); err != nil {
		return ControlResult{}, err
	}
	return ControlResult{RunID: ref.ID, DesiredState: req.State, By: by, Note: req.Note, RunnerLive: live}, nil
}
