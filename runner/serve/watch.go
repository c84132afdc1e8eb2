package serve

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flow-run/flow/runner"
)

// A run's live streams share one watcher: however many browsers follow
// a run, its record is looked at once a Poll, its new events read once
// and its step table built once per change, and what changed is sent to
// every stream. A watcher runs while a stream follows its run.

// statusEvery is how often a watcher rebuilds a run's status although
// its event log did not change: liveness changes with time (a runner's
// heartbeat grows old).
const statusEvery = 2 * time.Second

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
	// mu guards subs, status and stopped.
	mu   sync.Mutex
	subs map[*subscription]struct{}
	// status is the last status message sent, for a stream that joins.
	status  *message
	stopped bool
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
	sub = &subscription{ch: make(chan message, 1024), wake: make(chan struct{}, 1)}
	w.mu.Lock()
	w.subs[sub] = struct{}{}
	last = w.status
	w.mu.Unlock()
	s.watch.mu.Unlock()
	return sub, last, func() { w.leave(sub) }
}

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

// broadcast sends m to every stream; one that is behind misses it and
// is told to catch up.
func (w *watcher) broadcast(m message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m.event == "status" {
		w.status = &m
	}
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

// run looks at the run every Poll until its last stream leaves: new
// events when the event log grew, and the status when events came or
// statusEvery passed.
func (w *watcher) run() {
	s := w.s
	st, err := s.svc.Status(w.t.repoDir, w.t.runID)
	if err != nil {
		return
	}
	dir := st.RunDir
	base := runURL(w.t.repo, w.t.runID)
	wf := s.workflow(w.t.repoDir, st.State)
	after := st.State.Seq
	var size int64 = -1
	var last []byte
	var built time.Time
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	for !w.done() {
		changed := false
		if fi, err := s.svc.FS.Stat(filepath.Join(dir, runner.EventsFile)); err == nil && fi.Size() != size {
			size = fi.Size()
			events, _ := runner.ReadEvents(s.svc.FS, dir, after)
			for _, e := range events {
				b, _ := json.Marshal(eventRowOf(e))
				w.broadcast(message{event: "event", id: strconv.FormatInt(e.Seq, 10), seq: e.Seq, data: b})
				after = e.Seq
				changed = true
			}
		}
		if changed || last == nil || time.Since(built) >= statusEvery {
			if st, err = s.svc.StatusWith(w.t.repoDir, w.t.runID, wf); err == nil {
				b, _ := json.Marshal(liveStatus{Status: string(st.State.Status), Live: st.Liveness.State, Hook: st.Liveness.Hook, Reason: st.Liveness.Reason, Steps: stepRows(base, st, wf)})
				if string(b) != string(last) {
					last = b
					w.broadcast(message{event: "status", data: b})
				}
			}
			built = time.Now()
		}
		<-tick.C
	}
}
