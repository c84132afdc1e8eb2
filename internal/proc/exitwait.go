package proc

import (
	"context"
	"time"
)

// exitWaiter waits for a session's main process to exit, leaving it
// unreaped where the system allows (see awaitExit), and then reaps it.
type exitWaiter interface {
	// wait blocks until the main process has exited, and then reports
	// true, at once and from then on. It reports false when deadline
	// (if not zero) has passed or, if interruptible, when the session's
	// context is done; it may also report false early, so a caller
	// looks at the clock and the context again before it acts.
	wait(deadline time.Time, interruptible bool) bool
	// reap reaps the main process once wait has reported true, and
	// returns the error of the wait (an exit status is not one).
	reap() error
	// close releases what the waiter holds; it does not reap.
	close()
}

// chanWaiter waits in a goroutine of its own: where the runtime's
// poller cannot wait for a process.
type chanWaiter struct {
	ctx     context.Context
	exited  chan struct{}
	reapErr func() error
}

func newChanWaiter(ctx context.Context, cmd *mainProc) *chanWaiter {
	w := &chanWaiter{ctx: ctx, exited: make(chan struct{})}
	go func() {
		defer close(w.exited)
		w.reapErr = awaitExit(cmd)
	}()
	return w
}

func (w *chanWaiter) wait(deadline time.Time, interruptible bool) bool {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	var done <-chan struct{}
	if interruptible {
		done = w.ctx.Done()
	}
	select {
	case <-w.exited:
		return true
	case <-timeout:
	case <-done:
	}
	return false
}

func (w *chanWaiter) reap() error {
	<-w.exited
	return w.reapErr()
}

func (w *chanWaiter) close() {}
