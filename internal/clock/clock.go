package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and creates timers. Implementations are safe for
// concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// Real returns a Clock backed by the time package.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Fake is a Clock whose time only moves when Advance or Set is called.
// It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	deadline time.Time
	ch       chan time.Time
}

// NewFake returns a Fake clock that reads t until advanced.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After returns a channel that receives the fake time once Advance has
// moved the clock to or past Now()+d. A non-positive d fires at once.
// The channel is buffered, so an abandoned timer never blocks Advance.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waiters = append(f.waiters, waiter{deadline: f.now.Add(d), ch: ch})
	return ch
}

// Advance moves the fake time forward by d and fires, in deadline order,
// every timer whose deadline has been reached. A negative d is ignored.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		return
	}
	f.mu.Lock()
	f.setLocked(f.now.Add(d))
	f.mu.Unlock()
}

// Set moves the fake time to t, if t is later than the current fake time,
// and fires the timers that are due. It never moves the clock backwards.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	if t.After(f.now) {
		f.setLocked(t)
	}
	f.mu.Unlock()
}

func (f *Fake) setLocked(t time.Time) {
	f.now = t
	sort.SliceStable(f.waiters, func(i, j int) bool {
		return f.waiters[i].deadline.Before(f.waiters[j].deadline)
	})
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.deadline.After(t) {
			kept = append(kept, w)
			continue
		}
		w.ch <- t
	}
	clear(f.waiters[len(kept):])
	f.waiters = kept
}

// Waiters returns the number of timers created by After that have not
// fired yet. Tests use it to wait until the code under test is blocked
// on the clock before they call Advance.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil waits, polling in real time, until at least n timers are
// pending, and reports whether that happened within timeout.
func (f *Fake) BlockUntil(n int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if f.Waiters() >= n {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// AwaitWaiters waits, polling in real time, until at least n timers are
// pending: until the code under test is blocked on the clock. It has no
// deadline: tests are bounded by the test binary's -timeout, not by a
// wall-clock guess that a loaded machine can miss.
func (f *Fake) AwaitWaiters(n int) {
	for f.Waiters() < n {
		time.Sleep(time.Millisecond)
	}
}
