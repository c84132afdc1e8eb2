package serve

import (
	"bytes"
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
	// Service is the operations layer every read and change goes
	// through.
	Service *ops.Service
	// Repos are the repositories whose runs are shown; "" or none means
	// the Service's directory. Requests name them by index.
	Repos []string
	// Tokens are the accepted secrets, each with the name recorded as
	// who acted. None means no authentication: the server must then
	// listen on a loopback address (Loopback).
	Tokens []Token
	// Loopback is true when the server listens on a loopback address
	// only.
	Loopback bool
	// ReadOnly refuses every change and hides the forms.
	ReadOnly bool
	// Launcher starts flow resume and flow retry; nil refuses them.
	Launcher Launcher
	// Poll is how often live streams look for news; 0 means 250 ms.
	Poll time.Duration
	// LoginCode, when set, is a one-time code: /login?code=CODE signs its
	// first user in with the first token, and then stops working. flow
	// serve prints it when it makes the token itself, so that the token
	// never appears in a link, a browser's history or a terminal.
	LoginCode string
}

// Server serves Mission Control. It is an http.Handler.
type Server struct {
	svc      *ops.Service
	repos    []string
	tokens   []Token
	loopback bool
	readOnly bool
	launcher Launcher
	poll     time.Duration
	// pageSteps and maxGraphSteps bound a run's page (see the
	// constants); tests lower them.
	pageSteps, maxGraphSteps int
	// loginCode is the one-time code, "" once used (mu guards it).
	loginMu   sync.Mutex
	loginCode string
	// watch holds the watchers of the runs that streams follow.
	watch watchers
	// workflows keeps the workflows of runs' pages loaded, finished
	// the list's rows of finished runs.
	workflows workflowCache
	finished  finishedRows
	// listStatus reads a run in full for the list of runs: the
	// service's Status (tests count its calls).
	listStatus func(repo, runID string) (ops.Status, error)
	csrfKey    []byte
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
		return nil, core.Usage("a server on a non-loopback address needs a token (--token NAME=SECRET)")
	}
	s := &Server{svc: cfg.Service, tokens: cfg.Tokens, loopback: cfg.Loopback, readOnly: cfg.ReadOnly,
		launcher: cfg.Launcher, poll: cfg.Poll, loginCode: cfg.LoginCode, pageSteps: pageSteps, maxGraphSteps: maxGraphSteps}
	s.listStatus = s.svc.Status
	if s.poll <= 0 {
		s.poll = 250 * time.Millisecond
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
		s.repos = append(s.repos, dir)
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

// parsePages parses each page's template with the shared layout.
func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range []string{"runs", "run", "log", "message"} {
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
	m.HandleFunc("GET /{$}", s.listRuns)
	m.HandleFunc("GET /r/{run}", s.findRun)
	m.HandleFunc("GET /runs/{repo}/{run}", s.runPage)
	m.HandleFunc("GET /runs/{repo}/{run}/events", s.runEvents)
	m.HandleFunc("GET /runs/{repo}/{run}/logs/{step}", s.logPage)
	m.HandleFunc("GET /runs/{repo}/{run}/logs/{step}/tail", s.logTail)
	m.HandleFunc("POST /runs/{repo}/{run}/approve/{step}", s.decide(true))
	m.HandleFunc("POST /runs/{repo}/{run}/reject/{step}", s.decide(false))
	m.HandleFunc("POST /runs/{repo}/{run}/control/{verb}", s.control)
	m.HandleFunc("POST /runs/{repo}/{run}/resume", s.relaunch(false))
	m.HandleFunc("POST /runs/{repo}/{run}/retry", s.relaunch(true))
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
	repo    int
	repoDir string
	runID   string
	step    string
}

// target reads and checks the repository index, run id and, when the
// route has one, step key of a request. It answers 404 for an unknown
// repository or run and 400 for a malformed id or key, and returns false
// then.
func (s *Server) target(w http.ResponseWriter, r *http.Request) (target, bool) {
	i, err := strconv.Atoi(r.PathValue("repo"))
	if err != nil || i < 0 || i >= len(s.repos) {
		s.message(w, r, http.StatusNotFound, "No such repository", "There is no repository "+r.PathValue("repo")+" here.")
		return target{}, false
	}
	t := target{repo: i, repoDir: s.repos[i], runID: r.PathValue("run")}
	if err := core.CheckRunID(t.runID); err != nil {
		s.message(w, r, http.StatusBadRequest, "Bad run id", err.Error())
		return target{}, false
	}
	if ok, _ := afero.DirExists(s.svc.FS, record.RunDir(t.repoDir, t.runID)); !ok {
		s.message(w, r, http.StatusNotFound, "No such run", "There is no run "+t.runID+" in "+t.repoDir+".")
		return target{}, false
	}
	if step := r.PathValue("step"); step != "" {
		if _, err := core.ParseStepKey(step); err != nil {
			s.message(w, r, http.StatusBadRequest, "Bad step", err.Error())
			return target{}, false
		}
		t.step = step
	}
	return t, true
}

// runURL is the path of a run's page.
// findRun redirects /r/RUN — the link a notification carries, which
// knows the run but not which repository this server lists it under — to
// the run's page in the first repository that has it.
func (s *Server) findRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("run")
	if err := core.CheckRunID(id); err != nil {
		s.message(w, r, http.StatusBadRequest, "Bad run id", err.Error())
		return
	}
	for i, dir := range s.repos {
		if ok, _ := afero.DirExists(s.svc.FS, record.RunDir(dir, id)); ok {
			http.Redirect(w, r, runURL(i, id), http.StatusSeeOther)
			return
		}
	}
	s.message(w, r, http.StatusNotFound, "No such run", "No repository of this server has run "+id+".")
}

func runURL(repo int, runID string) string {
	return fmt.Sprintf("/runs/%d/%s", repo, runID)
}

// fail answers with an operation's error: 400 for bad input, 409 for a
// refusal (the run or step is not in a state that allows it, or a live
// runner holds it), 500 otherwise.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, title := http.StatusInternalServerError, "Error"
	switch core.CodeOf(err) {
	case core.ExitUsage:
		code, title = http.StatusBadRequest, "Not done"
	case core.ExitRefused, core.ExitHeld:
		code, title = http.StatusConflict, "Refused"
	}
	s.message(w, r, code, title, err.Error())
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
	if i, err := strconv.Atoi(r.PathValue("repo")); err == nil && i >= 0 && i < len(s.repos) && core.CheckRunID(r.PathValue("run")) == nil {
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
}

// page returns the layout's data for a request.
func (s *Server) page(r *http.Request, title string) page {
	return page{Title: title, Who: who(r), CSRF: s.csrfField(r), ReadOnly: s.readOnly}
}
