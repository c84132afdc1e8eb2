package serve

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// A run's live streams share one watcher: however many browsers follow
// a run, its record is looked at once a Poll, its new events read once
// and its step table built once per change, and what changed is sent to
// every stream. A watcher runs while a stream follows its run.

// statusEvery is how often a watcher rebuilds a run's status although
// its event log did not change: liveness changes with time (a runner's
// heartbeat grows old).
const statusEvery = 2 * time.Second

// partsEvery is how often, at most, a watcher draws a run page's parts
// again (its graph and timeline) while the run's status stays the same:
// a session's bar grows by the second.
const partsEvery = time.Second

// statusShare bounds the time a watcher spends building a run's status:
// after a build that took d, the next waits at least statusShare times
// d (new events are still sent every Poll). A run of a few steps builds
// in a millisecond and is followed every Poll; one of 20,000 takes tens
// of milliseconds, and its table is refreshed about once a second
// (bench/serve-large.sh), for at most a tenth of a processor.
const statusShare = 10

// message is one Server-Sent Event, its data already encoded.
type message struct {
	event, id string
	seq       int64
	data      []byte
}

// watcher follows one run for its streams.
type watcher struct {
	s   *Server
	t   target
	key string
	// mu guards subs, live, full and stopped.
	mu   sync.Mutex
	subs map[*subscription]struct{}
	// live is the run's status as last sent, every row of it: the
	// status messages carry only the rows that changed, and a stream
	// that joins is sent the whole of live first (full, encoded on
	// the first join after a change).
	live    *liveStatus
	full    *message
	stopped bool
	// parts are the run page's live parts as last sent, by name;
	// partsMsg all of them, for a stream that joins.
	parts    map[string]string
	partsMsg *message
}

// subscription is one stream's place at a watcher. A stream that falls
// behind misses messages rather than holding the others up: lagged is
// set, wake tells it, and it catches up on the events from the log.
type subscription struct {
	ch     chan message
	wake   chan struct{}
	lagged atomic.Bool
}

// watchers holds the running watchers by run.
type watchers struct {
	mu  sync.Mutex
	all map[string]*watcher
}

// subscribe joins the watcher of t's run, starting it when it does not
// run; the subscription gets the run's messages until cancel is called.
func (s *Server) subscribe(t target) (sub *subscription, last *message, cancel func()) {
	key := strconv.Itoa(t.repo) + "/" + t.runID
	s.watch.mu.Lock()
	if s.watch.all == nil {
		s.watch.all = map[string]*watcher{}
	}
	w := s.watch.all[key]
	if w == nil {
		w = &watcher{s: s, t: t, key: key, subs: map[*subscription]struct{}{}}
		s.watch.all[key] = w
		go w.run()
	}
	sub = &subscription{ch: make(chan message, subBuffer), wake: make(chan struct{}, 1)}
	w.mu.Lock()
	w.subs[sub] = struct{}{}
	last = w.whole()
	if last != nil && w.partsMsg != nil {
		// The parts follow the table in the channel: a new stream has
		// room for both.
		sub.ch <- *w.partsMsg
	}
	w.mu.Unlock()
	s.watch.mu.Unlock()
	return sub, last, func() { w.leave(sub) }
}

// subBuffer is how many messages a stream may fall behind before it
// misses some (and catches up from the log).
const subBuffer = 256

// leave removes a stream; the last one to leave stops the watcher.
func (w *watcher) leave(sub *subscription) {
	w.s.watch.mu.Lock()
	defer w.s.watch.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.subs, sub)
	if len(w.subs) == 0 && !w.stopped {
		w.stopped = true
		delete(w.s.watch.all, w.key)
	}
}

// whole returns the message of the whole live status, nil before the
// first; w.mu is held.
func (w *watcher) whole() *message {
	if w.live == nil {
		return nil
	}
	if w.full == nil {
		b, _ := json.Marshal(w.live)
		w.full = &message{event: "status", data: b}
	}
	return w.full
}

// update makes next the live status and sends its streams the rows
// that differ from the last one's (all of them the first time), with
// the run's status; nothing when nothing changed.
func (w *watcher) update(next *liveStatus) {
	w.mu.Lock()
	prev := w.live
	w.mu.Unlock()
	diff := *next
	if prev != nil {
		diff.Steps = changedRows(prev.Steps, next.Steps)
		if len(diff.Steps) == 0 && diff.Status == prev.Status && diff.Live == prev.Live && diff.Hook == prev.Hook && diff.Reason == prev.Reason {
			return
		}
	}
	b, _ := json.Marshal(diff)
	w.mu.Lock()
	w.live, w.full = next, nil
	w.mu.Unlock()
	w.broadcast(message{event: "status", data: b})
}

// changedRows returns the rows of next that are not in prev as they
// are there (a new row, or one whose cells changed), in next's order.
func changedRows(prev, next []stepRow) []stepRow {
	at := make(map[string]int, len(prev))
	for i, r := range prev {
		at[r.Key] = i
	}
	changed := []stepRow{}
	for _, r := range next {
		if i, ok := at[r.Key]; !ok || !sameCells(prev[i], r) {
			changed = append(changed, r)
		}
	}
	return changed
}

// sameCells reports whether two rows show the same: their encoded
// fields are equal (Waiting is not sent).
func sameCells(a, b stepRow) bool {
	a.Waiting, b.Waiting = nil, nil
	return a == b
}

// broadcast sends m to every stream; one that is behind misses it and
// is told to catch up.
func (w *watcher) broadcast(m message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for sub := range w.subs {
		select {
		case sub.ch <- m:
		default:
			sub.lagged.Store(true)
			select {
			case sub.wake <- struct{}{}:
			default:
			}
		}
	}
}

// done reports whether the watcher has stopped.
func (w *watcher) done() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

// updateParts renders the run page's live parts from a view and sends
// its streams those that differ from the last sent, as one "parts"
// message (a JSON object of name to HTML).
func (w *watcher) updateParts(v *runView) {
	parts, err := w.s.renderParts(v)
	if err != nil {
		return
	}
	w.mu.Lock()
	prev := w.parts
	w.mu.Unlock()
	changed := map[string]string{}
	for name, html := range parts {
		if prev == nil || prev[name] != html {
			changed[name] = html
		}
	}
	if len(changed) == 0 {
		return
	}
	b, _ := json.Marshal(changed)
	all, _ := json.Marshal(parts)
	w.mu.Lock()
	w.parts, w.partsMsg = parts, &message{event: "parts", data: all}
	w.mu.Unlock()
	w.broadcast(message{event: "parts", data: b})
}

// run follows the run until its last stream leaves: a local run's
// record directly (run), another engine's through its Watch.
func (w *watcher) run() {
	if w.t.src.local {
		w.runLocal()
		return
	}
	w.runRemote()
}

// runRemote follows a run of another engine through its Watch, every
// Poll (at least a second), until the run is over or the last stream
// leaves.
func (w *watcher) runRemote() {
	s := w.s
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for !w.done() {
			time.Sleep(s.poll)
		}
		cancel()
	}()
	var wf *config.Workflow
	_ = w.t.src.eng.Watch(ctx, w.t.dir(), w.t.runID, ops.WatchOptions{Interval: max(s.poll, time.Second), Every: true}, func(u ops.Update) error {
		if u.Status == nil || u.Status.State == nil {
			return nil
		}
		st := *u.Status
		if wf == nil {
			wf = s.remoteWorkflow(st.State)
		}
		v := s.view(runSubject{t: w.t, st: st, wf: wf})
		w.update(&liveStatus{Status: string(st.State.Status), Live: st.Liveness.State, Hook: st.Liveness.Hook.String(), Reason: st.Liveness.Reason, Steps: v.Steps})
		w.updateParts(v)
		return nil
	})
}

// runLocal looks at a local run every Poll until its last stream
// leaves: new events when the event log grew, and the status (its
// table and the page's parts) when events came or statusEvery passed.
func (w *watcher) runLocal() {
	s := w.s
	st, err := s.svc.Status(w.t.dir(), w.t.runID)
	if err != nil {
		return
	}
	dir := st.RunDir
	wf := s.workflow(w.t.dir(), st.State)
	tl := s.buildTimeline(w.t, st.State)
	after := max(st.State.Seq, tl.seq)
	var size int64 = -1
	var built, drawn time.Time
	var cost time.Duration
	drawnStatus := ""
	// dirty is set when events came since the last status was built.
	dirty := true
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	for !w.done() {
		changed := false
		if fi, err := s.svc.FS.Stat(filepath.Join(dir, record.EventsFile)); err == nil && fi.Size() != size {
			size = fi.Size()
			events, _ := record.ReadEvents(s.svc.FS, dir, after)
			for _, e := range events {
				b, _ := json.Marshal(eventRowOf(e))
				w.broadcast(message{event: "event", id: strconv.FormatInt(e.Seq, 10), seq: e.Seq, data: b})
				tl.apply(e)
				after = e.Seq
				changed = true
			}
		}
		dirty = dirty || changed
		if since := time.Since(built); dirty && since >= statusShare*cost || since >= statusEvery {
			start := time.Now()
			// The local engine's Status, with the workflow loaded once.
			if st, err = s.svc.StatusWith(w.t.dir(), w.t.runID, wf); err == nil {
				dirty = false
				// The parts are drawn when the run's status or its
				// runner's changed, else at most every partsEvery.
				key := string(st.State.Status) + " " + st.Liveness.State
				draw := key != drawnStatus || time.Since(drawn) >= partsEvery
				v := s.view(runSubject{t: w.t, st: st, wf: wf, tl: tl, rowsOnly: !draw})
				w.update(&liveStatus{Status: string(st.State.Status), Live: st.Liveness.State, Hook: st.Liveness.Hook.String(), Reason: st.Liveness.Reason, Steps: v.Steps})
				if draw {
					w.updateParts(v)
					drawn, drawnStatus = time.Now(), key
				}
			}
			built = time.Now()
			cost = built.Sub(start)
		}
		<-tick.C
	}
}
