package local

import (
	"context"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/spec"
)

// cleanupOnly runs the workflow's cleanup session in a finished run
// (Options.CleanupOnly): flow cleanup on a completed or failed run
// asks for one session after the work, and a runner takes the run for
// that one session alone. It is recorded as the run's next cleanup
// (cleanup_started, cleanup_finished); the run's status and exit code
// stay as they were, whatever the session does. control.json says
// run_cleanup while it runs, and pause after, as after any cleanup.
//
// The result is the run's status with the cleanup's exit code: 0 when
// the session succeeded, 1 when it failed, 130 when it was interrupted.
func (x *run) cleanupOnly(ctx context.Context) (spec.Result, error) {
	sessCtx, cancelSessions := context.WithCancel(context.WithoutCancel(ctx))
	x.sessCtx = sessCtx
	x.stopped = make(chan struct{})
	defer x.sessions.Wait()
	defer cancelSessions()
	defer close(x.stopped)

	n := x.st.Cleanups + 1
	x.emit(newEvent(x.r.Clock.Now(), core.EvCleanupStarted, core.StepKey{}, core.CleanupFinished{N: n}))
	if err := x.persist(true); err != nil {
		return spec.Result{}, err
	}
	if err := x.writeControlCurrent(core.RunCleanup, core.RunCleanup, ""); err != nil {
		return spec.Result{}, err
	}
	x.cleanupN = n - 1
	x.startCleanup()
	done, interrupted := ctx.Done(), false
	var d core.CleanupDone
wait:
	for {
		// A cleanup that could not start says so at once, on the queue.
		for _, in := range x.queue {
			if cd, ok := in.(core.CleanupDone); ok {
				d = cd
				break wait
			}
		}
		select {
		case in := <-x.inputs:
			if cd, ok := in.(core.CleanupDone); ok {
				d = cd
				break wait
			}
		case <-done:
			done, interrupted = nil, true
			x.printf("stopping: the cleanup session gets SIGTERM and %s to end\n", x.r.KillGrace)
			cancelSessions()
		}
	}
	x.queue = nil
	x.emit(newEvent(x.r.Clock.Now(), core.EvCleanupFinished, core.StepKey{}, core.CleanupFinished{N: n, Failed: d.Failed, Error: d.Error}))
	if err := x.persist(true); err != nil {
		return spec.Result{}, err
	}
	if err := x.writeControlCurrent(core.Pause, core.Pause, "cleanup session finished"); err != nil {
		return spec.Result{}, err
	}
	if err := x.snapshot(); err != nil {
		return spec.Result{}, err
	}
	res := x.result(x.st.Status, 0, "cleanup session finished")
	switch {
	case interrupted:
		res.ExitCode, res.Reason = core.ExitInterrupted, "cleanup session interrupted"
	case d.Failed:
		res.ExitCode, res.Reason = core.ExitFailed, "cleanup session failed"
		if d.Error != "" {
			res.Reason += ": " + d.Error
		}
	}
	x.printf("run %s: %s; the run stays %s\n", x.st.RunID, res.Reason, x.st.Status)
	return res, nil
}
