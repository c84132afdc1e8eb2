package local

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// snapshotOf reads run_state.json of run r1, or nil when it is not
// there (yet).
func (e *env) snapshotOf() *core.State {
	st, _, err := record.ReadSnapshot(e.fs, filepath.Join(record.RunDir(repo, "r1"), record.StateFile))
	if err != nil {
		return nil
	}
	return st
}

// startRun starts a run in the background and returns its context's
// cancel and a channel that yields its result.
func (e *env) startRun(s *scripted, opts spec.Options) (stop func(), result <-chan spec.Result) {
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan spec.Result, 1)
	if s.fs == nil {
		s.fs = e.fs
	}
	opts.Workflow, opts.Repo, opts.RunID = e.wf, repo, "r1"
	go func() {
		res, err := e.runner(e.fs, s).Run(ctx, opts)
		if err != nil {
			e.t.Errorf("run: %v", err)
		}
		out <- res
	}()
	return cancel, out
}

// TestSnapshotAfterLoopBack: a loop-back's state reaches run_state.json
// within a second of it, though nothing else happens meanwhile (the
// re-entered step's session runs on): one second on the fake clock and
// the snapshot shows the target running its next iteration.
func TestSnapshotAfterLoopBack(t *testing.T) {
	e := newEnv(t, `
name: loop
steps:
  - {id: code, run: code}
  - {id: test, run: test, needs: [code], loop_back_to: code, max_attempts: 1}
`)
	s := &scripted{started: make(chan call, 8), fn: func(c call) reply {
		switch {
		case c.Step == "test":
			return reply{Exit: 1}
		case c.Iteration == 1:
			return reply{Block: true}
		}
		return reply{}
	}}
	stop, result := e.startRun(s, spec.Options{})
	for c := range s.started {
		if c.Step == "code" && c.Iteration == 1 {
			break
		}
	}
	// Wait, without a deadline, until the runner has recorded the
	// session of the new iteration: then it waits on its clock.
	dir := record.RunDir(repo, "r1")
	for !strings.Contains(readFile(e.fs, filepath.Join(dir, record.EventsFile)), `"iteration":1`) {
		runtime.Gosched()
	}
	e.clock.Advance(time.Second)
	for {
		if st := e.snapshotOf(); st != nil && st.Steps[keytest.K("code")].IterationCount == 1 && st.Steps[keytest.K("code")].Status == core.Running {
			break
		}
		runtime.Gosched()
	}
	stop()
	if res := <-result; res.ExitCode != core.ExitInterrupted {
		t.Errorf("exit %d, want 130", res.ExitCode)
	}
}

// TestSnapshotWhenWaiting: a run whose first step waits on a human has
// its snapshot at once, without the clock moving: whoever decides reads
// the wait from it.
func TestSnapshotWhenWaiting(t *testing.T) {
	e := newEnv(t, "name: h\nsteps:\n  - {id: gate, human: {message: go}}\n  - {id: b, run: b}\n")
	stop, result := e.startRun(&scripted{fn: ok}, spec.Options{})
	// The runner waits on its heartbeat and its poll once it is idle.
	for e.clock.Waiters() < 2 {
		runtime.Gosched()
	}
	st := e.snapshotOf()
	if st == nil {
		t.Fatal("no run_state.json while the run waits on a human")
	}
	if st.Status != core.RunWaitingOnHuman || st.Steps[keytest.K("gate")].Status != core.WaitingOnHuman || st.Steps[keytest.K("gate")].ManualInputPath == nil {
		t.Errorf("snapshot: run %s, gate %s, manual input %v", st.Status, st.Steps[keytest.K("gate")].Status, st.Steps[keytest.K("gate")].ManualInputPath)
	}
	stop()
	<-result
}

// TestExitCodeRecorded: a runner that leaves a run waiting (exit 3) or
// paused (exit 4) records that exit code; the next runner clears it.
func TestExitCodeRecorded(t *testing.T) {
	e := newEnv(t, "name: h\nsteps:\n  - {id: gate, human: {message: go}}\n")
	res := e.run(&scripted{fn: ok}, spec.Options{NoWait: true})
	if res.ExitCode != 3 {
		t.Fatalf("exit %d, want 3", res.ExitCode)
	}
	if st := e.snapshotOf(); st == nil || st.ExitCode != 3 || st.Status != core.RunWaitingOnHuman {
		t.Fatalf("snapshot %+v, want waiting_on_human with exit_code 3", st)
	}
	if err := record.SetDesired(e.fs, record.RunDir(repo, "r1"), core.Pause, "alice", "", e.clock.Now(), true); err != nil {
		t.Fatal(err)
	}
	if _, err := record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("gate"), core.HumanInput{Approved: true, By: "alice"}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.setWorkflow("name: h\nsteps:\n  - {id: gate, human: {message: go}}\n  - {id: b, run: b}\n")
	res = e.run(&scripted{fn: ok}, spec.Options{Resume: true, NoWait: true})
	if res.ExitCode != 4 {
		t.Fatalf("exit %d, want 4", res.ExitCode)
	}
	if st := e.snapshotOf(); st == nil || st.ExitCode != 4 || st.Status != core.RunPaused {
		t.Fatalf("snapshot %+v, want paused with exit_code 4", st)
	}
}

func readFile(fsys afero.Fs, path string) string {
	b, _ := afero.ReadFile(fsys, path)
	return string(b)
}
