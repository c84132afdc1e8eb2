package ops

import (
	"context"
	"strconv"
	"time"

	"github.com/flow-run/flow/internal/junit"
	"github.com/flow-run/flow/runner/core"
)

// RunJUnit returns run id of repo ("" for the Service's directory) as
// JUnit XML suites for CI test reporters: one <testsuite> named after
// the workflow, one <testcase> per step (name the step id, classname
// the workflow, time the step's duration), a <failure> for a FAILED
// step whose message is its last error and whose text adds its
// evidence (the tail of the output that failed it, as the run recorded
// it), <skipped/> for one that did not run to its end — SKIPPED (with
// why), never run, waiting on a human, or still running — and the
// step's iterations and attempts as properties.
//
// The run is read from repo's record, or, when the Service's Engine is a
// StateReader (a run on Temporal), asked of the engine.
func (s *Service) RunJUnit(ctx context.Context, repo, id string) (junit.Suites, error) {
	if sr, ok := s.Engine.(StateReader); ok {
		st, err := sr.RunState(ctx, id)
		if err != nil {
			return junit.Suites{}, err
		}
		return runSuites(st), nil
	}
	_, ref, err := s.openRun(repo, id)
	if err != nil {
		return junit.Suites{}, err
	}
	return runSuites(ref.State), nil
}

// StateReader is an Engine whose runs' state is not in a local record:
// it answers for them.
type StateReader interface {
	// RunState returns the state of run id.
	RunState(ctx context.Context, id string) (*core.State, error)
}

// WriteRunJUnit writes RunJUnit's report to path (relative to the
// Service's directory) atomically.
func (s *Service) WriteRunJUnit(ctx context.Context, repo, id, path string) error {
	suites, err := s.RunJUnit(ctx, repo, id)
	if err != nil {
		return err
	}
	dst, err := s.abs(path)
	if err != nil {
		return Usage("--junit %s: %v", path, err)
	}
	return junit.Write(s.FS, dst, suites)
}

// runSuites turns a run's state into JUnit's suites.
func runSuites(st *core.State) junit.Suites {
	suite := junit.Suite{Name: st.WorkflowName}
	var total time.Duration
	for _, id := range st.StepOrder {
		ss := st.Steps[id]
		if ss == nil {
			continue
		}
		d := stepDuration(ss)
		total += d
		c := junit.Case{Classname: st.WorkflowName, Name: id.String(), Time: junit.Seconds(d), Properties: []junit.Property{
			{Name: "status", Value: string(ss.Status)},
			{Name: "iterations", Value: strconv.Itoa(ss.IterationCount)},
			{Name: "attempts", Value: strconv.Itoa(ss.Attempts)},
		}}
		suite.Tests++
		switch ss.Status {
		case core.Failed:
			suite.Failures++
			msg := "failed"
			if ss.LastError != nil && *ss.LastError != "" {
				msg = *ss.LastError
			}
			text := msg
			if ss.Evidence != "" {
				text += "\n\n" + ss.Evidence
			}
			p := junit.NewProblem("step failed", text)
			p.Message = junit.Text(msg)
			c.Failure = p
		case core.Completed:
		default:
			suite.Skipped++
			c.Skipped = &junit.Skipped{Message: junit.Text(notRun(ss))}
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Time = junit.Seconds(total)
	all := junit.Suites{Suites: []junit.Suite{suite}}
	all.Total()
	all.Time = suite.Time
	return all
}

// notRun says why a step that is neither COMPLETED nor FAILED did not
// run to its end.
func notRun(ss *core.StepState) string {
	switch ss.Status {
	case core.Skipped:
		if ss.SkipReason != "" {
			return "skipped: " + ss.SkipReason
		}
		return "skipped"
	case core.WaitingOnHuman:
		return "waiting on a human"
	case core.Running:
		return "still running"
	}
	if ss.BlockedByLoop != nil {
		return "not run: blocked by the loop-back of " + *ss.BlockedByLoop
	}
	return "not run"
}

// stepDuration is how long a step ran: from its start to its end, or 0
// when it has not both.
func stepDuration(ss *core.StepState) time.Duration {
	if ss.StartedAt == nil || ss.EndedAt == nil {
		return 0
	}
	if d := ss.EndedAt.Time.Sub(ss.StartedAt.Time); d > 0 {
		return d
	}
	return 0
}
