package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/flow-run/flow/runner/core"
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

// startSSE answers a request with an event stream, or with 500 when the
// connection cannot stream.
func startSSE(w http.ResponseWriter) (*sse, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return &sse{w: w, f: f}, true
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
// Last-Event-ID a reconnecting browser sends) as an "event" event, and
// a "status" event with the step table whenever it changes, from the
// run's shared watcher (watch.go), until the client goes away.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	t, ok := s.target(w, r)
	if !ok {
		return
	}
	after := resumeFrom(r, "after")
	// The stream reads the run's events, not its state: fifty browsers
	// that open a large run's page at once would each decode megabytes
	// (the run's shared watcher reads the state, once).
	dir := record.RunDir(t.repoDir, t.runID)
	if _, err := s.svc.FS.Stat(filepath.Join(dir, record.EventsFile)); err != nil {
		s.fail(w, r, core.Usage("run %s has no events: %v", t.runID, err))
		return
	}
	stream, ok := startSSE(w)
	if !ok {
		return
	}
	// Join the run's watcher first, then catch up from the log: an event
	// both bring is sent once, by its seq.
	sub, last, cancel := s.subscribe(t)
	defer cancel()
	catchUp := func() bool {
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

// logTail streams the latest session log of a step from ?offset= (or
// a reconnecting browser's Last-Event-ID) on:
// its new bytes as "log" events (JSON strings), until the step is done
// with sessions ("end"), runs another session ("next": the page loads
// that session's log) or the client goes away (see tailNext). A step
// that has printed nothing yet is looked at again until its first log
// appears.
func (s *Server) logTail(w http.ResponseWriter, r *http.Request) {
	t, ok := s.target(w, r)
	if !ok {
		return
	}
	off := max(resumeFrom(r, "offset"), 0)
	logs, err := s.svc.Logs(t.repoDir, t.runID, t.step, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	stream, ok := startSSE(w)
	if !ok {
		return
	}
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	path := ""
	read := func() error {
		if path == "" {
			return nil
		}
		for {
			chunk, err := s.readAt(path, off)
			if err != nil || len(chunk) == 0 {
				return nil
			}
			off += int64(len(chunk))
			if err := stream.send("log", strconv.FormatInt(off, 10), string(chunk)); err != nil {
				return err
			}
		}
	}
	// Whether the session still runs is read from the run's record, no
	// sooner than statusShare times the last reading took (a large
	// run's takes tens of milliseconds); its log is read every Poll.
	var checked time.Time
	var cost time.Duration
	for {
		if path == "" && len(logs.Logs) > 0 {
			path = logs.Logs[len(logs.Logs)-1].Path
		}
		if read() != nil {
			return
		}
		if time.Since(checked) >= statusShare*cost {
			start := time.Now()
			state, _, err := record.LoadState(s.svc.FS, logs.RunDir, false, start)
			if err != nil {
				return
			}
			checked = time.Now()
			cost = checked.Sub(start)
			if ss := state.Steps[logs.Step]; path == "" && ss != nil && ss.LogPath != "" {
				// The step's first session has started.
				path = ss.LogPath
			}
			switch tailNext(state, logs.Step, path) {
			case tailEnd:
				if read() == nil {
					_ = stream.send("end", "", "the session has ended")
				}
				return
			case tailNextSession:
				if read() == nil {
					_ = stream.send("next", "", "the step runs another session")
				}
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// What a log's stream does next, by tailNext.
const (
	tailGoOn        = iota // the session runs, or the step waits to run again
	tailNextSession        // the step runs a session with another log
	tailEnd                // the step is done with sessions, or the run stopped
)

// tailNext says what the stream of the log at path (the step's latest
// session's, "" while it has none) does, from the run's state: it goes
// on while that session runs, and while the step waits to run again in
// a run that goes on (an attempt failed, or a loop-back sent the run
// back to it); it tells the page of the next session once the step runs
// one; it ends otherwise.
func tailNext(st *core.State, step, path string) int {
	ss := st.Steps[step]
	switch {
	case ss == nil:
		return tailEnd
	case ss.Status == core.Running:
		if path != "" && ss.LogPath != "" && ss.LogPath != path {
			return tailNextSession
		}
		return tailGoOn
	case ss.Status == core.Pending && st.Status == core.RunRunning:
		return tailGoOn
	}
	return tailEnd
}

// readAt reads at most maxTailChunk bytes of a log from off on.
func (s *Server) readAt(path string, off int64) ([]byte, error) {
	f, err := s.svc.FS.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	buf := make([]byte, maxTailChunk)
	n, err := io.ReadFull(f, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return buf[:n], err
}
