package serve

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// maxLogShown is how much of the end of a log its page shows; the
// whole log is a link away.
const maxLogShown = 256 << 10

// logData is the data of a log's page.
type logData struct {
	page
	Base  string
	RunID string
	Step  string
	// Name is the log shown; Sessions every session's log of the step,
	// to pick another.
	Name     string
	Sessions []sessionLink
	Text     string
	Clipped  bool
	Size     int64
	RawURL   string
	// TailURL follows the log while its session runs; "" for a log
	// that no longer grows.
	TailURL string
	// State says whether the session runs ("live") or has ended, and
	// StateText how: "running for 12s", "exit 1 after 3s".
	State     string
	StateText string
	// Since is when a running session started (RFC 3339): the page
	// counts on.
	Since string
	Note  string
}

// sessionLink is one session's log in the picker.
type sessionLink struct {
	Label   string
	URL     string
	Current bool
}

// logState says of a step's session whether it runs and how it ended.
type logState struct {
	State string `json:"state"`
	Text  string `json:"text"`
	Since string `json:"since,omitempty"`
}

// logPage shows the end of a session log of a step — its latest
// session's, or the one ?log= names — with a picker of every session
// (attempts, iterations, checks), and follows it live while it runs.
func (s *Server) logPage(w http.ResponseWriter, r *http.Request) {
	t, ok := s.target(w, r)
	if !ok {
		return
	}
	base := runURL(t.repo, t.runID)
	d := &logData{page: s.page(r, t.step+" — "+t.runID), Base: base, RunID: t.runID, Step: t.step}
	if !t.src.local {
		s.remoteLog(w, r, t, d)
		return
	}
	logs, err := s.svc.Logs(t.dir(), t.runID, t.key, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	st, err := t.src.eng.Status(r.Context(), t.dir(), t.runID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	latest := -1
	for i := len(logs.Logs) - 1; i >= 0; i-- {
		if !logs.Logs[i].Check {
			latest = i
			break
		}
	}
	pick := latest
	if name := r.URL.Query().Get("log"); name != "" {
		pick = -2
		for i, l := range logs.Logs {
			if l.Name == name {
				pick = i
			}
		}
		if pick == -2 {
			s.fail(w, r, notFound("Step %s of run %s has no log %s.", t.step, t.runID, name))
			return
		}
	}
	if pick < 0 && len(logs.Logs) > 0 {
		pick = len(logs.Logs) - 1
	}
	self := base + "/logs/" + url.PathEscape(t.step)
	for i, l := range logs.Logs {
		d.Sessions = append(d.Sessions, sessionLink{Label: sessionLabel(l), URL: self + "?log=" + url.QueryEscape(l.Name), Current: i == pick})
	}
	var off int64
	if pick >= 0 {
		l := logs.Logs[pick]
		tail := &tailWriter{max: maxLogShown}
		if err := s.svc.CopyLog(tail, l); err != nil {
			s.fail(w, r, err)
			return
		}
		d.Name, d.Text, d.Clipped, off = l.Name, strings.ToValidUTF8(string(tail.buf), "\uFFFD"), tail.n > int64(len(tail.buf)), tail.n
		d.Size = tail.n
		d.RawURL = self + "/raw?log=" + url.QueryEscape(l.Name)
	}
	ls := s.stepLogState(st, t, pick == latest || latest < 0)
	d.State, d.StateText, d.Since = ls.State, ls.Text, ls.Since
	if pick >= 0 && pick != latest {
		d.State, d.StateText = "ended", "an earlier session"
		if b := s.sessionBar(t, st, logs.Logs[pick].Name); b != nil {
			d.StateText = endedText(b.exit, b.end.Sub(b.start), b.note)
		}
	}
	if d.State == "live" || d.State == "waiting" {
		d.TailURL = fmt.Sprintf("%s/tail?offset=%d", self, off)
	}
	s.render(w, r, http.StatusOK, "log", d)
}

// remoteLog fills a log's page of a run of another engine through its
// engine's Logs: the tail of the step's last session, which the page
// follows from its start while the step runs.
func (s *Server) remoteLog(w http.ResponseWriter, r *http.Request, t target, d *logData) {
	st, err := t.src.eng.Status(r.Context(), t.dir(), t.runID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ls := s.stepLogState(st, t, true)
	d.State, d.StateText, d.Since = ls.State, ls.Text, ls.Since
	self := runURL(t.repo, t.runID) + "/logs/" + url.PathEscape(t.step)
	if ls.State == "live" {
		d.TailURL = self + "/tail?offset=0"
		d.Note = "The session's output on the " + t.src.eng.Name() + " engine, from its start."
		s.render(w, r, http.StatusOK, "log", d)
		return
	}
	tail := &tailWriter{max: maxLogShown}
	var notes strings.Builder
	if err := t.src.eng.Logs(r.Context(), ops.LogsRequest{Repo: t.dir(), RunID: t.runID, Step: t.key}, tail, &notes); err != nil {
		s.fail(w, r, err)
		return
	}
	d.Text, d.Note = strings.ToValidUTF8(string(tail.buf), "\uFFFD"), strings.TrimSpace(notes.String())
	d.Name = t.step
	s.render(w, r, http.StatusOK, "log", d)
}

// sessionLabel names a session's log in the picker.
func sessionLabel(l record.LogFile) string {
	if l.Check {
		return fmt.Sprintf("iteration %d, attempt %d: its check", l.Iteration, l.Attempt)
	}
	label := fmt.Sprintf("iteration %d, attempt %d", l.Iteration, l.Attempt)
	if l.Generation > 0 {
		label = fmt.Sprintf("restart %d, ", l.Generation) + label
	}
	return label
}

// stepLogState says whether a step's session runs, waits to run again
// (an attempt failed, a loop-back sent the run back to it), or has
// ended and how; latest is false for an earlier session's log.
func (s *Server) stepLogState(st ops.Status, t target, latest bool) logState {
	ss := st.State.Steps[t.key]
	if ss == nil {
		return logState{State: "ended", Text: "the step has not run"}
	}
	live := s.runnerLive(t, st)
	switch {
	case ss.Status == core.Running && live:
		ls := logState{State: "live", Text: "running"}
		if ss.StartedAt != nil {
			ls.Since = ss.StartedAt.UTC().Format(time.RFC3339Nano)
			ls.Text = "running for " + shortDuration(st.At.Sub(ss.StartedAt.Time))
		}
		return ls
	case ss.Status == core.Running:
		return logState{State: "ended", Text: "the run's runner is gone; the session does not run (Resume runs it again)"}
	case ss.Status == core.Pending && st.State.Status == core.RunRunning && live:
		return logState{State: "waiting", Text: "waiting to run again"}
	}
	var d time.Duration
	if ss.StartedAt != nil && ss.EndedAt != nil {
		d = ss.EndedAt.Sub(ss.StartedAt.Time)
	}
	note := ""
	if ss.LastError != nil {
		note = *ss.LastError
	}
	return logState{State: "ended", Text: strings.ToLower(string(ss.Status)) + ": " + endedText(ss.ExitCode, d, note)}
}

// endedText says how a session ended: "exit 0 after 3s".
func endedText(exit *int, d time.Duration, note string) string {
	out := "ended"
	if exit != nil {
		out = fmt.Sprintf("exit %d", *exit)
	}
	if d > 0 {
		out += " after " + shortDuration(d)
	}
	if note != "" {
		out += " (" + clip(note, 200) + ")"
	}
	return out
}

// sessionBar finds the timeline's bar of a session by its log's name.
func (s *Server) sessionBar(t target, st ops.Status, name string) *bar {
	tl := s.readTimeline(t, st.State)
	if r := tl.rows[t.key]; r != nil {
		for _, b := range r.bars {
			if b.log == name {
				return b
			}
		}
	}
	return nil
}

// logRaw writes a whole session log as text: the one ?log= names, else
// the step's latest.
func (s *Server) logRaw(w http.ResponseWriter, r *http.Request) {
	t, ok := s.target(w, r)
	if !ok {
		return
	}
	if !t.src.local {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_ = t.src.eng.Logs(r.Context(), ops.LogsRequest{Repo: t.dir(), RunID: t.runID, Step: t.key}, w, io.Discard)
		return
	}
	logs, err := s.svc.Logs(t.dir(), t.runID, t.key, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	name := r.URL.Query().Get("log")
	for i := len(logs.Logs) - 1; i >= 0; i-- {
		if l := logs.Logs[i]; name == "" && !l.Check || l.Name == name {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Content-Disposition", "inline; filename="+strconv.Quote(l.Name))
			_ = s.svc.CopyLog(w, l)
			return
		}
	}
	s.fail(w, r, notFound("Step %s of run %s has no log %s.", t.step, t.runID, name))
}

// logTail streams the latest session log of a step from ?offset= (or
// a reconnecting browser's Last-Event-ID) on: its new bytes as "log"
// events (JSON strings), until the step is done with sessions ("end",
// with how it ended), runs another session ("next": the page loads
// that session's log) or the client goes away (see tailNext). A step
// that has printed nothing yet is looked at again until its first log
// appears. A run of another engine is followed through its engine's
// Logs.
func (s *Server) logTail(w http.ResponseWriter, r *http.Request) {
	t, ok := s.target(w, r)
	if !ok {
		return
	}
	if !t.src.local {
		s.remoteTail(w, r, t)
		return
	}
	off := max(resumeFrom(r, "offset"), 0)
	logs, err := s.svc.Logs(t.dir(), t.runID, t.key, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	stream, release, ok := s.startSSE(w, r)
	if !ok {
		return
	}
	defer release()
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
					st := ops.Status{State: state, At: time.Now(), RunDir: logs.RunDir}
					_ = stream.send("end", "", s.stepLogState(st, t, true))
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

// remoteTail follows a step's session on another engine through its
// Logs, from its start, then sends how it ended.
func (s *Server) remoteTail(w http.ResponseWriter, r *http.Request, t target) {
	stream, release, ok := s.startSSE(w, r)
	if !ok {
		return
	}
	defer release()
	out := &sseWriter{s: stream}
	err := t.src.eng.Logs(r.Context(), ops.LogsRequest{Repo: t.dir(), RunID: t.runID, Step: t.key, Follow: true}, out, io.Discard)
	if err != nil || r.Context().Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if st, err := t.src.eng.Status(ctx, t.dir(), t.runID); err == nil {
		_ = stream.send("end", "", s.stepLogState(st, t, true))
	}
}

// sseWriter sends what is written to it as "log" events.
type sseWriter struct {
	s *sse
	n int64
}

func (w *sseWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	if err := w.s.send("log", strconv.FormatInt(w.n, 10), strings.ToValidUTF8(string(p), "\uFFFD")); err != nil {
		return 0, err
	}
	return len(p), nil
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
func tailNext(st *core.State, step core.StepKey, path string) int {
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
