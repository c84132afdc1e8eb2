// Package gcpace keeps a long-lived process's heap close to what it
// holds live.
//
// Go lets the heap grow to about twice its live size between two
// collections (GOGC=100). For a process whose live heap is a few
// megabytes that is nothing; for a runner holding the state of 20,000
// steps (25 MB) it is 25 MB more resident memory for the whole run.
// A Pacer caps the growth instead: after every collection it sets the
// collector's percentage so that the heap may grow by a fixed number of
// bytes over what is live, never by less than a floor percentage (which
// bounds how often the collector runs) nor by more than Go's default.
// Small heaps are paced exactly as Go paces them.
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultPercent is Go's own GOGC, which a Pacer never exceeds.
const DefaultPercent = 100

// Percent is the GOGC percentage that lets a heap of live bytes grow by
// headroom bytes before the next collection, clamped to
// [floor, DefaultPercent]. A heap of no bytes gets DefaultPercent.
func Percent(live, headroom uint64, floor int) int {
	floor = min(max(floor, 1), DefaultPercent)
	if live == 0 {
		return DefaultPercent
	}
	p := headroom * 100 / live
	if p >= DefaultPercent {
		return DefaultPercent
	}
	return max(int(p), floor)
}

// Pacer sets the collector's percentage after every collection; see the
// package documentation.
type Pacer struct {
	headroom uint64
	floor    int
	// Past a live heap of large bytes (0: never), the heap may grow by
	// largeHeadroom instead (see Taper).
	large, largeHeadroom uint64

	mu      sync.Mutex
	stopped bool
	prev    int // the percentage before Start, restored by Stop
	last    int // the percentage last set
	sample  []metrics.Sample
}

// liveMetric is the heap the last collection marked live.
const liveMetric = "/gc/heap/live:bytes"

// Start paces the collector from the next collection on, letting the
// heap grow by headroom bytes over its live size (at least floor percent,
// at most Go's default). Stop ends it and restores the percentage that
// was in force before.
func Start(headroom uint64, floor int) *Pacer {
	p := &Pacer{
		headroom: headroom,
		floor:    floor,
		sample:   []metrics.Sample{{Name: liveMetric}},
	}
	p.prev = debug.SetGCPercent(DefaultPercent)
	p.last = DefaultPercent
	p.arm()
	return p
}

// sentinel is an object nothing refers to, whose cleanup runs after the
// collection that finds it unreachable: a hook called once per cycle.
// It holds a pointer so that the allocator never batches it with other
// small objects (a batched object's cleanup may wait for its
// neighbours).
type sentinel struct{ _ *byte }

func (p *Pacer) arm() {
	runtime.AddCleanup(new(sentinel), (*Pacer).collected, p)
}

// collected runs once per collection, on the runtime's cleanup
// goroutine.
func (p *Pacer) collected() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() == metrics.KindUint64 {
		live := p.sample[0].Value.Uint64()
		if pct := Percent(live, p.headroomFor(live), p.floor); pct != p.last {
			debug.SetGCPercent(pct)
			p.last = pct
		}
	}
	p.arm()
}

// Taper lets the heap grow by headroom bytes, not the Pacer's own,
// once the live heap is above bytes: a process that holds much live
// collects more often, so that what it holds plus what it lets grow
// stays small. It returns p.
func (p *Pacer) Taper(above, headroom uint64) *Pacer {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.large, p.largeHeadroom = above, headroom
	return p
}

// headroomFor returns the bytes the heap may grow by over live.
func (p *Pacer) headroomFor(live uint64) uint64 {
	if p.large > 0 && live >= p.large {
		return p.largeHeadroom
	}
	return p.headroom
}

// Last is the percentage the Pacer last set.
func (p *Pacer) Last() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Stop ends the pacing and restores the percentage in force before
// Start.
func (p *Pacer) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	debug.SetGCPercent(p.prev)
}
