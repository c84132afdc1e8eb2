package serve

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

//go:embed assets
var assets embed.FS

// Launcher starts a flow command line (such as "resume RUN --repo DIR")
// as a process of its own that outlives the request, and does not wait
// for it to end.
type Launcher interface {
	Launch(args []string) error
}

// Config is what a Server serves and how.
type Config struct {
	// Service is the operations layer of the repositories' runs: their
	// records, workflows and logs are read through it.
	Service *ops.Service
	// Engine carries every operation on the repositories' runs
	// (status, decisions, control, cancel, restart); nil is the
	// Service's local engine.
	Engine ops.Engine
	// Engines are more engines whose runs are listed beside the
	// repositories' (a Temporal server's), each a source of its own
	// after them, and acted on through it.
	Engines []ops.Engine
	// Repos are the repositories whose runs are shown; "" or none means
	// the Service's directory. Requests name them by index.
	Repos []string
	// Workflows are workflow files the start page offers besides those
	// of each repository's workflows/ directory.
	Workflows []string
	// Tokens are the accepted secrets, each with the name recorded as
	// who acted. None means no authentication: the server must then
	// listen on a loopback address (Loopback).
	Tokens []Token
	// APITokens are secrets accepted only as an Authorization Bearer
	// header, to make changes through /api/ (a loopback server's
	// generated token); Tokens are accepted there too.
	APITokens []Token
	// Loopback is true when the server listens on a loopback address
	// only.
	Loopback bool
	// ReadOnly refuses every change and hides the forms.
	ReadOnly bool
	// Launcher starts flow run, resume and retry; nil refuses them.
	Launcher Launcher
	// Poll is how often live streams look for news; 0 means 250 ms.
	Poll time.Duration
	// LoginCode, when set, is a login code: /login?code=CODE signs a
	// browser in with the first token, as many browsers as use it until
	// the server stops or someone signed in revokes it. flow serve
	// prints it when it makes the token itself, so that the token never
	// appears in a link, a browser's history or a terminal.
	LoginCode string
	// ResumeOnDecision resumes a run that no runner holds as soon as a
	// decision on it is recorded from a page.
	ResumeOnDecision bool
	// ClientStreams is how many live streams one client (a token, as
	// a login cookie or a Bearer header; "local" on a server without
	// tokens) may hold open at once, and Streams how many all clients
	// may: a stream beyond either is refused with 429. 0 means
	// DefaultClientStreams and DefaultStreams.
	ClientStreams, Streams int
}

// The default limits of live streams: per client and in all.
const (
	DefaultClientStreams = 16
	DefaultStreams       = 256
)

// source is where runs come from: a repository's record, read and
// acted on through the local engine, or another engine's server.
type source struct {
	// name is the repository's directory, or the engine's name.
	name string
	// dir is the repository requests name (an engine other than the
	// local one ignores it).
	dir string
	eng ops.Engine
	// local is true for a repository's record, which the server reads
	// itself (events, logs, workflows).
	local bool
}

// Server serves Mission Control. It is an http.Handler.
type Server struct {
	svc              *ops.Service
	sources          []*source
	workflowFiles    []string
	tokens           []Token
	apiTokens        []Token
	loopback         bool
	readOnly         bool
	launcher         Launcher
	poll             time.Duration
	resumeOnDecision bool
	// pageSteps and maxGraphSteps bound a run's page (see the
	// constants); tests lower them.
	pageSteps, maxGraphSteps int
	// loginCode is the login code, "" once revoked (loginMu guards it).
	loginMu   sync.Mutex
	loginCode string
	// watch holds the watchers of the runs that streams follow, lists
	// those of the lists of runs.
	watch watchers
	lists listWatchers
	// workflows keeps the workflows of runs' pages loaded, finished
	// the list's rows of finished runs, messages the rendered
	// human.message of waiting steps, timelines the runs' timelines.
	workflows workflowCache
	finished  finishedRows
	messages  messageCache
	timelines timelineCache
	// listStatus reads a run in full for the list of runs: its
	// engine's Status (tests count its calls).
	listStatus func(src *source, runID string) (ops.Status, error)
	csrfKey    []byte
	streams    streamLimit
	pages      map[string]*template.Template
	mux        *http.ServeMux
}

// New checks cfg and returns its Server. A configuration without
// tokens that does not listen on loopback only is refused, and so is a
// repository that is not a directory.
func New(cfg Config) (*Server, error) {
	if cfg.Service == nil {
		return nil, errors.New("serve: no operations service")
	}
	if len(cfg.Tokens) == 0 && !cfg.Loopback {
		return nil, ops.Usage("a server on a non-loopback address needs a token (--token NAME=SECRET)")
	}
	s := &Server{svc: cfg.Service, tokens: cfg.Tokens, apiTokens: cfg.APITokens, loopback: cfg.Loopback, readOnly: cfg.ReadOnly,
		launcher: cfg.Launcher, poll: cfg.Poll, loginCode: cfg.LoginCode, resumeOnDecision: cfg.ResumeOnDecision,
		pageSteps: pageSteps, maxGraphSteps: maxGraphSteps, workflowFiles: cfg.Workflows}
	s.listStatus = func(src *source, runID string) (ops.Status, error) {
		return src.eng.Status(context.Background(), src.dir, runID)
	}
	if s.poll <= 0 {
		s.poll = 250 * time.Millisecond
	}
	s.streams = streamLimit{perClient: cfg.ClientStreams, total: cfg.Streams, open: map[string]int{}}
	if s.streams.perClient <= 0 {
		s.streams.perClient = DefaultClientStreams
	}
	if s.streams.total <= 0 {
		s.streams.total = DefaultStreams
	}
	eng := cfg.Engine
	if eng == nil {
		eng = cfg.Service.Local()
	}
	repos := cfg.Repos
	if len(repos) == 0 {
		repos = []string{""}
	}
	for _, r := range repos {
		dir, err := s.svc.Repo(r)
		if err != nil {
			return nil, err
		}
		s.sources = append(s.sources, &source{name: dir, dir: dir, eng: eng, local: true})
	}
	for _, e := range cfg.Engines {
		s.sources = append(s.sources, &source{name: e.Name(), dir: s.sources[0].dir, eng: e})
	}
	key, err := randomBytes(32)
	if err != nil {
		return nil, err
	}
	s.csrfKey = key
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// pageNames are the pages, each parsed with the shared layout.
var pageNames = []string{"runs", "run", "log", "message", "start", "workflows", "events"}

// parsePages parses each page's template with the shared layout.
func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse the %s page: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// funcs are the helpers the templates use.
var funcs = template.FuncMap{
	"lower": func(s any) string { return statusClass(fmt.Sprint(s)) },
}

// routes registers every route.
func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /login", s.login)
	m.HandleFunc("POST /login/revoke", s.revokeLogin)
	m.HandleFunc("GET /{$}", s.listRuns)
	m.HandleFunc("GET /live", s.listEvents)
	m.HandleFunc("GET /r/{run}", s.findRun)
	m.HandleFunc("GET /start", s.workflowsPage)
	m.HandleFunc("GET /start/{repo}", s.startPage)
	m.HandleFunc("POST /start/{repo}", s.startRun)
	m.HandleFunc("GET /runs/{repo}/{run}", s.runPage)
	m.HandleFunc("GET /runs/{repo}/{run}/events", s.runEvents)
	m.HandleFunc("GET /runs/{repo}/{run}/events.json", s.eventsJSON)
	m.HandleFunc("GET /runs/{repo}/{run}/raw", s.eventsPage)
	m.HandleFunc("GET /runs/{repo}/{run}/logs/{step}", s.logPage)
	m.HandleFunc("GET /runs/{repo}/{run}/logs/{step}/tail", s.logTail)
	m.HandleFunc("GET /runs/{repo}/{run}/logs/{step}/raw", s.logRaw)
	m.HandleFunc("POST /runs/{repo}/{run}/approve/{step}", s.decide(true))
	m.HandleFunc("POST /runs/{repo}/{run}/reject/{step}", s.decide(false))
	m.HandleFunc("POST /runs/{repo}/{run}/control/{verb}", s.control)
	m.HandleFunc("POST /runs/{repo}/{run}/cancel", s.cancel)
	m.HandleFunc("POST /runs/{repo}/{run}/resume", s.relaunch(false))
	m.HandleFunc("POST /runs/{repo}/{run}/retry", s.relaunch(true))
	m.HandleFunc("POST /runs/{repo}/{run}/takeover", s.takeover)
	s.apiRoutes(m)
	s.mux = m
}

// ServeHTTP sets the security headers, checks the request's host, token
// and (for a change) its origin and CSRF token, then serves it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	r, ok := s.admit(w, r)
	if !ok {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// target is the run (and step) a request names, checked.
type target struct {
	repo  int
	src   *source
	runID string
	// key is the step key the request names, parsed once; step is its
	// String form, for display and URLs.
	key  core.StepKey
	step string
}

// dir is the repository of the target's source.
func (t target) dir() string { return t.src.dir }

// runDir is the run's directory in a local source's record.
func (t target) runDir() string { return record.RunDir(t.src.dir, t.runID) }

// sourceOf returns the source a request's {repo} names.
func (s *Server) sourceOf(r *http.Request) (int, *source, error) {
	i, err := strconv.Atoi(r.PathValue("repo"))
	if err != nil || i < 0 || i >= len(s.sources) {
		return 0, nil, notFound("There is no repository %s here.", r.PathValue("repo"))
	}
	return i, s.sources[i], nil
}

// source returns the source a request's {repo} names, or answers 404
// and returns false.
func (s *Server) source(w http.ResponseWriter, r *http.Request) (int, *source, bool) {
	i, src, err := s.sourceOf(r)
	if err != nil {
		s.fail(w, r, err)
		return 0, nil, false
	}
	return i, src, true
}

// resolve reads and checks the source index, run id and, when the
// route has one, step key of a request: an unknown source or run is
// errNotFound, a malformed id or key an ExitUsage error.
func (s *Server) resolve(r *http.Request) (target, error) {
	i, src, err := s.sourceOf(r)
	if err != nil {
		return target{}, err
	}
	t := target{repo: i, src: src, runID: r.PathValue("run")}
	if err := record.CheckRunID(t.runID); err != nil {
		return target{}, ops.Usage("%v", err)
	}
	if src.local {
		if ok, _ := afero.DirExists(s.svc.FS, t.runDir()); !ok {
			return target{}, notFound("There is no run %s in %s.", t.runID, src.name)
		}
	}
	if step := r.PathValue("step"); step != "" {
		k, err := core.ParseStepKey(step)
		if err != nil {
			return target{}, ops.Usage("%v", err)
		}
		t.key, t.step = k, k.String()
	}
	return t, nil
}

// target resolves a request's target, or answers its error (404, 400)
// and returns false.
func (s *Server) target(w http.ResponseWriter, r *http.Request) (target, bool) {
	t, err := s.resolve(r)
	if err != nil {
		s.fail(w, r, err)
		return target{}, false
	}
	return t, true
}

// findRun redirects /r/RUN — the link a notification carries, which
// knows the run but not which repository this server lists it under — to
// the run's page in the first repository that has it.
func (s *Server) findRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("run")
	if err := record.CheckRunID(id); err != nil {
		s.fail(w, r, ops.Usage("%v", err))
		return
	}
	for i, src := range s.sources {
		if !src.local {
			continue
		}
		if ok, _ := afero.DirExists(s.svc.FS, record.RunDir(src.dir, id)); ok {
			http.Redirect(w, r, runURL(i, id), http.StatusSeeOther)
			return
		}
	}
	for i, src := range s.sources {
		if !src.local {
			if _, err := src.eng.Status(r.Context(), src.dir, id); err == nil {
				http.Redirect(w, r, runURL(i, id), http.StatusSeeOther)
				return
			}
		}
	}
	s.fail(w, r, notFound("No repository of this server has run %s.", id))
}

// runURL is the path of a run's page.
func runURL(repo int, runID string) string {
	return fmt.Sprintf("/runs/%d/%s", repo, runID)
}

// errNotFound is the error of a request for what is not here (404).
type errNotFound struct{ msg string }

func (e *errNotFound) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &errNotFound{msg: fmt.Sprintf(format, args...)}
}

// httpStatus is the HTTP status of an operation's error and its title
// for people: 400 for bad input, 404 for what is not here, 409 for a
// refusal (the run or step is not in a state that allows it, or a live
// runner holds it), 500 otherwise.
func httpStatus(err error) (int, string) {
	var nf *errNotFound
	if errors.As(err, &nf) {
		return http.StatusNotFound, "Not found"
	}
	switch ops.CodeOf(err) {
	case ops.ExitUsage:
		return http.StatusBadRequest, "Not done"
	case ops.ExitRefused, ops.ExitHeld:
		return http.StatusConflict, "Refused"
	}
	return http.StatusInternalServerError, "Error"
}

// fail answers with an operation's error, in the page's words: a
// command the error suggests is said as the page's action when there is
// one.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, title := httpStatus(err)
	s.message(w, r, code, title, pageWords(err.Error()))
}

// messageData is the data of the message page.
type messageData struct {
	page
	Text string
	Back string
}

// message renders a page that says one thing, with the status code.
func (s *Server) message(w http.ResponseWriter, r *http.Request, code int, title, text string) {
	back := "/"
	if i, err := strconv.Atoi(r.PathValue("repo")); err == nil && i >= 0 && i < len(s.sources) && record.CheckRunID(r.PathValue("run")) == nil {
		back = runURL(i, r.PathValue("run"))
	}
	s.render(w, r, code, "message", &messageData{page: s.page(r, title), Text: text, Back: back})
}

// render executes a page's template into a buffer, so that a page
// that fails to render is not half written, and writes it with code.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// page is what every page's layout shows.
type page struct {
	Title    string
	Who      string
	CSRF     string
	ReadOnly bool
	// LoginCode is true while a login code signs browsers in.
	LoginCode bool
	// CanStart is true when the server starts runs.
	CanStart bool
}

// page returns the layout's data for a request.
func (s *Server) page(r *http.Request, title string) page {
	s.loginMu.Lock()
	code := s.loginCode != ""
	s.loginMu.Unlock()
	return page{Title: title, Who: who(r), CSRF: s.csrfField(r), ReadOnly: s.readOnly, LoginCode: code && len(s.tokens) > 0,
		CanStart: !s.readOnly && s.launcher != nil}
}
