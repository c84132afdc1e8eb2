package temporal

import (
	"context"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/flow-run/flow/runner/core"
)

// TailWait is how long one read of a running session's output waits on
// its worker for more (TailRequest.Wait).
const TailWait = 10 * time.Second

// tailTakeWait is how long a read waits for a worker of the session's
// control queue to take it before the follower falls back to the
// session's beats.
const tailTakeWait = 10 * time.Second

// FollowLogs writes the output of the latest session of step of a run
// on Temporal to w as it grows, every byte once and in order, until
// that session ends (the step stops running, or runs another session)
// or ctx ends: flow logs --follow. The output is read from the
// session's log on its worker (ActivityTail, through TailWorkflow), as
// soon as it is written; nothing of it goes through the run's history
// or the session's beats. When no worker answers there (an older
// worker), it follows the tails the session's activity beats with
// instead, saying so on notes. It looks again every interval (a second
// when 0) while the session is not running on a worker that can wait
// for its output.
func FollowLogs(ctx context.Context, c client.Client, runID string, step core.StepKey, interval time.Duration, w, notes io.Writer) error {
	if interval <= 0 {
		interval = time.Second
	}
	st, err := Status(ctx, c, runID)
	if err != nil {
		return err
	}
	ss := st.State.Steps[step]
	if ss == nil || ss.Status != core.Running {
		// Not running: its last session's output is its end's tail.
		return followBeats(ctx, c, runID, step, interval, w, notes)
	}
	var launch LaunchReply
	v, err := c.QueryWorkflow(ctx, runID, "", QueryLaunch)
	if err == nil {
		err = v.Get(&launch)
	}
	if err != nil {
		return runError(runID, err)
	}
	id := SessionID{RunID: runID, Step: step, Iteration: ss.IterationCount, Attempt: ss.Attempts}
	gen := st.State.Generation
	var off int64
	// read reads the session's output from off on and writes it.
	read := func(wait time.Duration) (TailReply, error) {
		r, err := ReadTail(ctx, c, launch.Input.TaskQueue, ControlQueue(launch.Host.Queue), TailRequest{Session: id, Gen: gen, Offset: off, Wait: wait})
		if err != nil {
			return r, err
		}
		if r.Offset < off {
			fmt.Fprintf(notes, "%s: its log was cut to its limit; from its start again (%s on %s)\n", step, r.Log, r.Host)
		}
		w.Write(r.Data)
		off = r.Offset + int64(len(r.Data))
		return r, nil
	}
	for {
		r, err := read(TailWait)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if off == 0 {
				fmt.Fprintf(notes, "%s: its worker does not answer for its log (%v); following the session's beats\n", step, oneLine(err))
				return followBeats(ctx, c, runID, step, interval, w, notes)
			}
			return fmt.Errorf("read the log of %s on its worker: %w", step, err)
		}
		if r.Running || len(r.Data) > 0 {
			continue
		}
		// Not running on the worker that answered: it ended, or has not
		// begun, or runs on another worker of a shared repository.
		st, err := Status(ctx, c, runID)
		if err != nil {
			return err
		}
		ss := st.State.Steps[step]
		if ss == nil || ss.Status != core.Running || ss.IterationCount != id.Iteration || ss.Attempts != id.Attempt {
			// It ended: what it wrote last.
			for {
				r, err := read(0)
				if err != nil || len(r.Data) == 0 {
					return err
				}
			}
		}
		if !sleep(ctx, interval) {
			return nil
		}
	}
}

// ReadTail reads a session's output on its worker: it runs TailWorkflow
// on queue (a task queue of flow's workers) for the worker's control
// queue ctl.
func ReadTail(ctx context.Context, c client.Client, queue, ctl string, req TailRequest) (TailReply, error) {
	id := fmt.Sprintf("%s.tail.%d", req.Session.RunID, time.Now().UnixNano())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue,
		WorkflowExecutionTimeout: tailTakeWait + req.Wait + time.Minute}, TailWorkflowName,
		TailWorkflowRequest{Queue: ctl, Wait: tailTakeWait, Request: req})
	var reply TailReply
	if err == nil {
		err = run.Get(ctx, &reply)
	}
	return reply, err
}

// followBeats writes the output of the latest session of step from the
// tails its activity beats with, then the one it returns. Output
// reaches the server only with the session's beats, which Temporal
// passes on at most every 0.8 of the session's heartbeat timeout; a
// beat that carries less than what was written since the last one is
// said on notes, with where the whole log is.
func followBeats(ctx context.Context, c client.Client, runID string, step core.StepKey, interval time.Duration, w, notes io.Writer) error {
	var cur *LogTail
	// write prints what t adds to the session cur that was printed.
	write := func(t LogTail) {
		if cur == nil || t.Iteration != cur.Iteration || t.Attempt != cur.Attempt {
			if int64(len(t.Tail)) < t.Size {
				fmt.Fprintf(notes, "%s: the last %d of %d bytes; the whole log is %s on %s\n", t.Step, len(t.Tail), t.Size, t.Log, t.Host)
			}
			io.WriteString(w, t.Tail)
			cur = &t
			return
		}
		n := t.Size - cur.Size
		switch {
		case n <= 0:
			return
		case n <= int64(len(t.Tail)):
			io.WriteString(w, t.Tail[int64(len(t.Tail))-n:])
		default:
			fmt.Fprintf(notes, "%s: %d bytes written between two beats are not carried; the whole log is %s on %s\n", t.Step, n-int64(len(t.Tail)), t.Log, t.Host)
			io.WriteString(w, t.Tail)
		}
		cur = &t
	}
	same := func(t LogTail, iteration, attempt int) bool { return t.Iteration == iteration && t.Attempt == attempt }
	for {
		st, err := Status(ctx, c, runID)
		if err != nil {
			return err
		}
		tails, err := Logs(ctx, c, runID, step)
		if err != nil {
			return err
		}
		ss := st.State.Steps[step]
		if ss == nil || ss.Status != core.Running {
			// The session ended: its end carries its last output.
			if len(tails) > 0 && (cur == nil || same(tails[0], cur.Iteration, cur.Attempt)) {
				write(tails[0])
			}
			return nil
		}
		if cur != nil && !same(*cur, ss.IterationCount, ss.Attempts) {
			return nil // the step runs another session
		}
		// A tail of an earlier session of the step is not this one's.
		if len(tails) > 0 && same(tails[0], ss.IterationCount, ss.Attempts) {
			write(tails[0])
		}
		if !sleep(ctx, interval) {
			return nil
		}
	}
}
