package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// The list of runs is live too: its pages with the same filter share a
// watcher, which lists the runs every listEvery and, when the list's
// rendered rows changed (a new run, a row whose status, step or
// duration changed), sends them to every page as one "list" message.

// listEvery is how often a list's watcher lists the runs, at least:
// listing reads the head of every run, and each running run in full.
const listEvery = time.Second

// listWatchers holds the running watchers of lists, by filter.
type listWatchers struct {
	mu  sync.Mutex
	all map[string]*listWatcher
}

// listWatcher lists the runs for the pages that show one list.
type listWatcher struct {
	s      *Server
	filter string
	// mu guards subs, last and stopped.
	mu      sync.Mutex
	subs    map[*subscription]struct{}
	last    *message
	stopped bool
}

// listUpdate is the data of a "list" message.
type listUpdate struct {
	// HTML is the list's rendered part; Waiting the runs that wait for
	// a decision.
	HTML    string `json:"html"`
	Waiting int    `json:"waiting"`
}

// subscribeList joins the watcher of a list, starting it when none
// runs; the last list it sent comes first.
func (s *Server) subscribeList(filter string) (*subscription, func()) {
	s.lists.mu.Lock()
	defer s.lists.mu.Unlock()
	if s.lists.all == nil {
		s.lists.all = map[string]*listWatcher{}
	}
	lw := s.lists.all[filter]
	if lw == nil {
		lw = &listWatcher{s: s, filter: filter, subs: map[*subscription]struct{}{}}
		s.lists.all[filter] = lw
		go lw.run()
	}
	sub := &subscription{ch: make(chan message, 16), wake: make(chan struct{}, 1)}
	lw.mu.Lock()
	lw.subs[sub] = struct{}{}
	if lw.last != nil {
		sub.ch <- *lw.last
	}
	lw.mu.Unlock()
	return sub, func() { lw.leave(sub) }
}

// leave removes a page; the last one to leave stops the watcher.
func (lw *listWatcher) leave(sub *subscription) {
	lw.s.lists.mu.Lock()
	defer lw.s.lists.mu.Unlock()
	lw.mu.Lock()
	defer lw.mu.Unlock()
	delete(lw.subs, sub)
	if len(lw.subs) == 0 && !lw.stopped {
		lw.stopped = true
		delete(lw.s.lists.all, lw.filter)
	}
}

// run lists the runs until the last page leaves, and sends the list
// whenever it changed. A page that cannot keep up misses lists: the
// next one it gets is whole.
func (lw *listWatcher) run() {
	s := lw.s
	every := max(s.poll, listEvery)
	tick := time.NewTicker(every)
	defer tick.Stop()
	prev := ""
	for {
		lw.mu.Lock()
		stopped := lw.stopped
		lw.mu.Unlock()
		if stopped {
			return
		}
		d := s.listData(context.Background(), lw.filter)
		d.page.ReadOnly, d.page.CanStart = s.readOnly, !s.readOnly && s.launcher != nil
		var buf bytes.Buffer
		if err := s.pages["runs"].ExecuteTemplate(&buf, "list", d); err == nil && buf.String() != prev {
			prev = buf.String()
			b, _ := json.Marshal(listUpdate{HTML: prev, Waiting: d.Waiting})
			m := message{event: "list", data: b}
			lw.mu.Lock()
			lw.last = &m
			for sub := range lw.subs {
				select {
				case sub.ch <- m:
				default:
				}
			}
			lw.mu.Unlock()
		}
		<-tick.C
	}
}

// listEvents streams the list of runs (?status= filters it) as "list"
// events: the rendered list whenever it changes, until the page goes
// away.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	stream, release, ok := s.startSSE(w, r)
	if !ok {
		return
	}
	defer release()
	sub, cancel := s.subscribeList(listFilter(r))
	defer cancel()
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case m := <-sub.ch:
			if stream.raw(m) != nil {
				return
			}
		case <-ping.C:
			if stream.ping() != nil {
				return
			}
		}
	}
}
