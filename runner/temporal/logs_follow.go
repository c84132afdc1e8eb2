package temporal

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/flow-run/flow/runner/core"
	"go.temporal.io/sdk/client"
)

// FollowLogs writes the output of the latest session of step of a run
// on Temporal to w as it grows — from the tails its activity beats
// with, then the one it returns — until that session ends (the step
// stops running, or runs another session) or ctx ends: flow logs
// --follow. It asks every interval (a second when 0). Output reaches
// the server only with the session's beats, which Temporal passes on at
// most every 0.8 of the session's heartbeat timeout (about 50 s by
// default); a beat that carries less than what was written since the
// last one is said on notes, with where the whole log is.
func FollowLogs(ctx context.Context, c client.Client, runID, step string, interval time.Duration, w, notes io.Writer) error {
	if interval <= 0 {
		interval = time.Second
	}
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
