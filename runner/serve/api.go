package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// The JSON API (docs/mission-control.md) serves scripts what the pages
// serve people, as the command line's --json does: the same objects.
// Its changes need an Authorization: Bearer header (admit): a browser's
// cookie is never taken for one, so no other site's page can make a
// browser change anything through it.

// apiRoutes registers the JSON API's routes.
func (s *Server) apiRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/runs", s.apiRuns)
	m.HandleFunc("GET /api/runs/{repo}/{run}", s.apiStatus)
	m.HandleFunc("GET /api/runs/{repo}/{run}/events", s.eventsJSON)
	m.HandleFunc("GET /api/runs/{repo}/{run}/logs/{step}", s.apiLogs)
	m.HandleFunc("POST /api/runs/{repo}/{run}/approve/{step}", s.apiDecide(true))
	m.HandleFunc("POST /api/runs/{repo}/{run}/reject/{step}", s.apiDecide(false))
	m.HandleFunc("POST /api/runs/{repo}/{run}/control/{verb}", s.apiControl)
	m.HandleFunc("POST /api/runs/{repo}/{run}/cancel", s.apiCancel)
	m.HandleFunc("POST /api/runs/{repo}/{run}/resume", s.apiRelaunch(false))
	m.HandleFunc("POST /api/runs/{repo}/{run}/retry", s.apiRelaunch(true))
	m.HandleFunc("POST /api/runs/{repo}/{run}/takeover", s.apiTakeover)
	m.HandleFunc("POST /api/start", s.apiStart)
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, apiError{Error: "no such API route: " + r.Method + " " + r.URL.Path, Code: http.StatusNotFound})
	})
}

// apiError is the body of an API error.
type apiError struct {
	Error string `json:"error"`
	// Code is the HTTP status; ExitCode the command line's for the same
	// error.
	Code     int `json:"code"`
	ExitCode int `json:"exit_code,omitempty"`
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// apiFail answers with an operation's error as JSON.
func apiFail(w http.ResponseWriter, err error) {
	code, _ := httpStatus(err)
	writeJSON(w, code, apiError{Error: err.Error(), Code: code, ExitCode: int(ops.CodeOf(err))})
}

// apiTarget reads a request's target as target does, answering its
// errors as JSON.
func (s *Server) apiTarget(w http.ResponseWriter, r *http.Request) (target, bool) {
	t, err := s.resolve(r)
	if err != nil {
		apiFail(w, err)
		return target{}, false
	}
	return t, true
}

// decodeBody reads a request's JSON body into v; an empty body, or a
// form's (whose fields the handler reads), leaves v as it is.
func decodeBody(r *http.Request, v any) error {
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return r.ParseForm()
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return ops.Usage("read the request's body: %v", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return ops.Usage("the request's body is not the JSON expected: %v", err)
	}
	return nil
}

// sourceRuns is one source's runs in GET /api/runs.
type sourceRuns struct {
	// Repo is the source's index, as URLs name it; Name its repository
	// or engine; Engine "local" or "temporal".
	Repo   int    `json:"repo"`
	Name   string `json:"name"`
	Engine string `json:"engine"`
	ops.RunList
	Error string `json:"error,omitempty"`
}

// apiRuns lists the runs of every source: each as flow runs --json
// lists a repository's.
func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Sources []sourceRuns `json:"sources"`
	}{Sources: []sourceRuns{}}
	for i, src := range s.sources {
		sr := sourceRuns{Repo: i, Name: src.name, Engine: src.eng.Name()}
		list, err := src.eng.Runs(r.Context(), src.dir)
		if err != nil {
			sr.Error = err.Error()
		}
		sr.RunList = list
		if sr.Runs == nil {
			sr.Runs = []ops.RunSummary{}
		}
		out.Sources = append(out.Sources, sr)
	}
	writeJSON(w, http.StatusOK, out)
}

// apiStatus answers a run's status as flow status --json does.
func (s *Server) apiStatus(w http.ResponseWriter, r *http.Request) {
	t, ok := s.apiTarget(w, r)
	if !ok {
		return
	}
	st, err := t.src.eng.Status(r.Context(), t.dir(), t.runID)
	if err != nil {
		apiFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// eventsJSON answers a local run's events after ?after= (all of them
// without it), as recorded in its event log.
func (s *Server) eventsJSON(w http.ResponseWriter, r *http.Request) {
	t, ok := s.apiTarget(w, r)
	if !ok {
		return
	}
	if !t.src.local {
		apiFail(w, ops.Unsupported(t.src.eng.Name(), "events (its history is on its server)"))
		return
	}
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	events, err := record.ReadEvents(s.svc.FS, t.runDir(), after)
	if err != nil {
		apiFail(w, fmt.Errorf("read the events of run %s: %w", t.runID, err))
		return
	}
	if events == nil {
		events = []core.Event{}
	}
	writeJSON(w, http.StatusOK, struct {
		RunID  string       `json:"run_id"`
		Events []core.Event `json:"events"`
	}{t.runID, events})
}

// LogText is what GET /api/runs/REPO/RUN/logs/STEP answers: a step's
// sessions and the text of one session's log.
type LogText struct {
	RunID string `json:"run_id"`
	Step  string `json:"step"`
	// Sessions are the step's session logs, oldest first (each
	// attempt, iteration and check).
	Sessions []record.LogFile `json:"sessions"`
	// Log names the log whose text follows: ?log=, else the latest
	// session's.
	Log string `json:"log"`
	// Offset is where Text starts in the log, Size the log's size when
	// read: Text is the log's end (?offset= reads from there on, up to
	// 256 KiB).
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Text   string `json:"text"`
	// State says whether the step's session runs ("live"), waits to
	// run again ("waiting") or has ended ("ended"), and how.
	State logState `json:"state"`
}

// apiLogs answers a step's session logs and the end of one of them.
func (s *Server) apiLogs(w http.ResponseWriter, r *http.Request) {
	t, ok := s.apiTarget(w, r)
	if !ok {
		return
	}
	st, err := t.src.eng.Status(r.Context(), t.dir(), t.runID)
	if err != nil {
		apiFail(w, err)
		return
	}
	out := LogText{RunID: t.runID, Step: t.step, Sessions: []record.LogFile{}, State: s.stepLogState(st, t, true)}
	if !t.src.local {
		tail := &tailWriter{max: maxLogShown}
		if err := t.src.eng.Logs(r.Context(), ops.LogsRequest{Repo: t.dir(), RunID: t.runID, Step: t.key}, tail, io.Discard); err != nil {
			apiFail(w, err)
			return
		}
		out.Text, out.Size, out.Offset = string(tail.buf), tail.n, tail.n-int64(len(tail.buf))
		writeJSON(w, http.StatusOK, out)
		return
	}
	logs, err := s.svc.Logs(t.dir(), t.runID, t.key, true)
	if err != nil {
		apiFail(w, err)
		return
	}
	out.Sessions = logs.Logs
	var pick *record.LogFile
	name := r.URL.Query().Get("log")
	for i := len(logs.Logs) - 1; i >= 0; i-- {
		if l := logs.Logs[i]; name == "" && !l.Check || l.Name == name {
			pick = &logs.Logs[i]
			break
		}
	}
	if pick == nil {
		if name != "" {
			apiFail(w, notFound("step %s of run %s has no log %s", t.step, t.runID, name))
			return
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	out.Log = pick.Name
	if q := r.URL.Query().Get("offset"); q != "" {
		off, err := strconv.ParseInt(q, 10, 64)
		if err != nil || off < 0 {
			apiFail(w, ops.Usage("?offset=%q: want a number of bytes", q))
			return
		}
		chunk, err := s.readAtMost(pick.Path, off, maxLogShown)
		if err != nil {
			apiFail(w, err)
			return
		}
		out.Offset, out.Text = off, string(chunk)
		if fi, err := s.svc.FS.Stat(pick.Path); err == nil {
			out.Size = fi.Size()
		}
	} else {
		tail := &tailWriter{max: maxLogShown}
		if err := s.svc.CopyLog(tail, *pick); err != nil {
			apiFail(w, err)
			return
		}
		out.Text, out.Size, out.Offset = string(tail.buf), tail.n, tail.n-int64(len(tail.buf))
	}
	out.Text = strings.ToValidUTF8(out.Text, "\uFFFD")
	writeJSON(w, http.StatusOK, out)
}

// readAtMost reads at most n bytes of a log from off on.
func (s *Server) readAtMost(path string, off int64, n int) ([]byte, error) {
	var out []byte
	for len(out) < n {
		chunk, err := s.readAt(path, off+int64(len(out)))
		if err != nil {
			return nil, fmt.Errorf("read log: %w", err)
		}
		if len(chunk) == 0 {
			break
		}
		out = append(out, chunk...)
	}
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

// apiDecide approves or rejects a waiting step: {"input": {...}} or
// {"reason": "..."}; it answers ops.Decision's JSON with runner_live
// and resumed (see decided).
func (s *Server) apiDecide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t, ok := s.apiTarget(w, r)
		if !ok {
			return
		}
		var body struct {
			Input  map[string]any `json:"input"`
			Reason string         `json:"reason"`
		}
		if err := decodeBody(r, &body); err != nil {
			apiFail(w, err)
			return
		}
		if body.Reason == "" {
			body.Reason = r.PostFormValue("reason")
		}
		req := ops.DecideRequest{Approve: approve, By: who(r), Reason: strings.TrimSpace(body.Reason)}
		if approve {
			req.Input = body.Input
			if req.Input == nil && r.PostForm != nil {
				in, err := formInputs(r)
				if err != nil {
					apiFail(w, err)
					return
				}
				req.Input = in
			}
		} else if req.Reason == "" {
			apiFail(w, ops.Usage("a rejection needs a reason: {\"reason\": \"...\"}"))
			return
		}
		d, err := s.doDecide(r.Context(), t, req)
		if err != nil {
			apiFail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, d)
	}
}

// apiControl sets a run's desired state: {"note": "..."} optional; it
// answers ops.ControlResult's JSON.
func (s *Server) apiControl(w http.ResponseWriter, r *http.Request) {
	state, ok := controlStates[r.PathValue("verb")]
	if !ok {
		apiFail(w, notFound("unknown action %s: want pause, continue, run-once or cleanup", r.PathValue("verb")))
		return
	}
	t, ok := s.apiTarget(w, r)
	if !ok {
		return
	}
	var body struct {
		Note string `json:"note"`
	}
	if err := decodeBody(r, &body); err != nil {
		apiFail(w, err)
		return
	}
	if body.Note == "" {
		body.Note = r.PostFormValue("note")
	}
	res, err := t.src.eng.Control(r.Context(), ops.ControlRequest{Repo: t.dir(), RunID: t.runID, State: state, By: who(r), Note: clip(body.Note, 500)})
	if err != nil {
		apiFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// apiCancel cancels a run; it answers ops.CancelResult's JSON.
func (s *Server) apiCancel(w http.ResponseWriter, r *http.Request) {
	t, ok := s.apiTarget(w, r)
	if !ok {
		return
	}
	res, err := t.src.eng.Cancel(r.Context(), ops.CancelRequest{Repo: t.dir(), RunID: t.runID, By: who(r)})
	if err != nil {
		apiFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// apiRelaunch starts flow resume (or flow retry) on a run, detached:
// {"run_id", "started": "resume"}.
func (s *Server) apiRelaunch(retry bool) http.HandlerFunc {
	verb := "resume"
	if retry {
		verb = "retry"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		t, ok := s.apiTarget(w, r)
		if !ok {
			return
		}
		if err := s.doRelaunch(r.Context(), t, retry, who(r)); err != nil {
			apiFail(w, err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]string{"run_id": t.runID, "started": verb})
	}
}

// apiTakeover starts flow resume --takeover on a run whose runner is
// frozen, detached: {"run_id", "started": "takeover"}.
func (s *Server) apiTakeover(w http.ResponseWriter, r *http.Request) {
	t, ok := s.apiTarget(w, r)
	if !ok {
		return
	}
	if err := s.doTakeover(r.Context(), t, who(r)); err != nil {
		apiFail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"run_id": t.runID, "started": "takeover"})
}

// apiStart starts a run: {"repo": 0, "workflow": "workflows/ci.yaml",
// "vars": {"k": "v"}, "start_at": ""}; it answers Started (201), or 400
// with the start's errors ({"error", "vars", "errors"}).
func (s *Server) apiStart(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Repo int `json:"repo"`
		startRequest
	}
	if err := decodeBody(r, &body); err != nil {
		apiFail(w, err)
		return
	}
	if body.Repo < 0 || body.Repo >= len(s.sources) || !s.sources[body.Repo].local {
		apiFail(w, notFound("there is no repository %d here that runs start in", body.Repo))
		return
	}
	if s.launcher == nil {
		apiFail(w, ops.Refused("this server does not start runs"))
		return
	}
	src := s.sources[body.Repo]
	var o *offered
	for _, c := range s.offeredWorkflows(body.Repo, src) {
		if c.Rel == body.Workflow {
			o = &c
		}
	}
	if o == nil {
		apiFail(w, notFound("this server offers no workflow %q in %s", body.Workflow, src.name))
		return
	}
	wf, err := s.svc.LoadWorkflow(o.Path, src.dir)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, struct {
			apiError
			Errors []startError `json:"errors"`
		}{apiError{Error: err.Error(), Code: http.StatusBadRequest, ExitCode: int(ops.ExitUsage)}, s.startErrors(err)})
		return
	}
	started, err := s.doStart(r.Context(), body.Repo, *o, wf, body.startRequest, who(r))
	var f *startFailed
	if errors.As(err, &f) {
		writeJSON(w, http.StatusBadRequest, struct {
			apiError
			*startFailed
		}{apiError{Error: f.Error(), Code: http.StatusBadRequest, ExitCode: int(ops.ExitUsage)}, f})
		return
	}
	if err != nil {
		apiFail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, started)
}

// eventsPage shows a local run's newest events as they are recorded.
func (s *Server) eventsPage(w http.ResponseWriter, r *http.Request) {
	t, ok := s.target(w, r)
	if !ok {
		return
	}
	d := &runView{page: s.page(r, "Events of "+t.runID), Base: runURL(t.repo, t.runID), RunID: t.runID}
	if t.src.local {
		st, err := t.src.eng.Status(r.Context(), t.dir(), t.runID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		events, _ := record.ReadEvents(s.svc.FS, t.runDir(), max(0, st.State.Seq-maxEvents))
		if len(events) > maxEvents {
			events = events[len(events)-maxEvents:]
		}
		for _, e := range events {
			d.Events = append(d.Events, eventRowOf(e))
		}
	}
	s.render(w, r, http.StatusOK, "events", d)
}
