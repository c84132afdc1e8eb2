package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// keepAlive is how often an idle stream sends a comment, so that
// proxies do not close it.
const keepAlive = 15 * time.Second

// maxTailChunk bounds the log bytes one look of a log stream sends.
const maxTailChunk = 64 << 10

// sse writes Server-Sent Events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

// streamLimit counts the live streams open, per client and in all.
type streamLimit struct {
	mu               sync.Mutex
	perClient, total int
	open             map[string]int
	all              int
}

// take counts a new stream of client, or returns why it is refused.
func (l *streamLimit) take(client string) (release func(), refused string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open[client] >= l.perClient:
		return nil, fmt.Sprintf("%s has %d live streams open, the most one client may (flow serve --client-streams): close a page of this server, or wait", client, l.open[client])
	case l.all >= l.total:
		return nil, fmt.Sprintf("this server has %d live streams open, the most it serves (flow serve --streams): try again later", l.all)
	}
	l.open[client]++
	l.all++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[client]--; l.open[client] == 0 {
				delete(l.open, client)
			}
			l.all--
		})
	}, ""
}

// startSSE answers a request with an event stream — counted against
// the client's and the server's stream limits, 429 beyond either — or
// with 500 when the connection cannot stream. The caller calls release
// when the stream ends.
func (s *Server) startSSE(w http.ResponseWriter, r *http.Request) (stream *sse, release func(), ok bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return nil, nil, false
	}
	release, refused := s.streams.take(who(r))
	if refused != "" {
		w.Header().Set("Retry-After", "10")
		http.Error(w, "429 too many requests: "+refused, http.StatusTooManyRequests)
		return nil, nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return &sse{w: w, f: f}, release, true
}

// send writes one event with a JSON value as its data, and an id when
// id is not "".
func (s *sse) send(event, id string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if id != "" {
		if _, err := fmt.Fprintf(s.w, "id: %s\n", id); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, b); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

// raw writes a message whose data is encoded already, and flushes it.
func (s *sse) raw(m message) error {
	if err := s.write(m); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

// write writes a message without flushing it.
func (s *sse) write(m message) error {
	if m.id != "" {
		if _, err := fmt.Fprintf(s.w, "id: %s\n", m.id); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", m.event, m.data); err != nil {
		return err
	}
	return nil
}

// ping writes a comment.
func (s *sse) ping() error {
	if _, err := io.WriteString(s.w, ": ping\n\n"); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

// liveStatus is the data of a run stream's "status" event: the run's
// status and liveness and its step table: the whole table in the first
// a stream is sent, then the rows that changed.
type liveStatus struct {
	Status string    `json:"status"`
	Live   string    `json:"live"`
	Hook   string    `json:"hook"`
	Reason string    `json:"reason"`
	Steps  []stepRow `json:"steps"`
}

// resumeFrom is where a stream starts: the query parameter param, or
// the later Last-Event-ID a reconnecting browser sends.
func resumeFrom(r *http.Request, param string) int64 {
	n, _ := strconv.ParseInt(r.URL.Query().Get(param), 10, 64)
	if id, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); err == nil && id > n {
		n = id
	}
	return n
}

// runEvents streams a run: each event appended after ?after= (or the
// Last-Event-ID a reconnecting browser sends) as an "event" event, a
// "status" event with the step table whenever it changes and a "parts"
// event with the page's parts that changed (view.go), from the run's
// shared watcher (watch.go), until the client goes away.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	t, ok := s.target(w, r)
	if !ok {
		return
	}
	after := resumeFrom(r, "after")
	// The stream reads the run's events, not its state: fifty browsers
	// that open a large run's page at once would each decode megabytes
	// (the run's shared watcher reads the state, once). A run of
	// another engine has no events here: its watcher sends its status.
	dir := t.runDir()
	if t.src.local {
		if _, err := s.svc.FS.Stat(filepath.Join(dir, record.EventsFile)); err != nil {
			s.fail(w, r, ops.Usage("run %s has no events: %v", t.runID, err))
			return
		}
	}
	stream, release, ok := s.startSSE(w, r)
	if !ok {
		return
	}
	defer release()
	// Join the run's watcher first, then catch up from the log: an event
	// both bring is sent once, by its seq.
	sub, last, cancel := s.subscribe(t)
	defer cancel()
	catchUp := func() bool {
		if !t.src.local {
			return true
		}
		events, _ := record.ReadEvents(s.svc.FS, dir, after)
		for _, e := range events {
			if stream.send("event", strconv.FormatInt(e.Seq, 10), eventRowOf(e)) != nil {
				return false
			}
			after = e.Seq
		}
		return true
	}
	if !catchUp() {
		return
	}
	if last != nil {
		if stream.raw(*last) != nil {
			return
		}
	}
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case m := <-sub.ch:
			// Write what has come, then flush once: a burst of events
			// costs one write to the connection, not one each.
			for more := true; more; {
				if m.event != "event" || m.seq > after {
					if m.event == "event" {
						after = m.seq
					}
					if stream.write(m) != nil {
						return
					}
				}
				select {
				case m = <-sub.ch:
				default:
					more = false
				}
			}
			stream.f.Flush()
		case <-sub.wake:
			// Behind: what it missed is in the log.
			if sub.lagged.Swap(false) && !catchUp() {
				return
			}
		case <-ping.C:
			if stream.ping() != nil {
				return
			}
		}
	}
}
