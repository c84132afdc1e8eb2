package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/countfs"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

const repo = "/repo"

// workflow has a plain step, a loop, a human step with declared inputs
// and a step after it.
const workflow = `name: wf
steps:
  - id: build
    run: echo build
  - id: items
    for_each: ["a", "b"]
    steps:
      - id: work
        run: echo work
  - id: ship_it
    human:
      message: Ship it?
      inputs:
        - name: ticket
          required: true
        - name: env
          default: prod
  - id: deploy
    run: echo deploy
cleanup:
  run: echo tidy
`

// failing fails at its step boom.
const failing = `name: failing
steps:
  - id: boom
    run: exit 1
`

// scripted is a proc.Starter whose sessions print "out of STEP" and
// exit 0, or 1 for step boom.
type scripted struct{}

func (scripted) Start(_ context.Context, spec proc.Spec) (proc.Session, error) {
	step := ""
	for _, kv := range spec.Env {
		if v, ok := strings.CutPrefix(kv, "FLOW_STEP_ID="); ok {
			step = v
		}
	}
	if spec.Output != nil {
		io.WriteString(spec.Output, "out of "+step+"\n")
	}
	code := 0
	if step == "boom" {
		code = 1
	}
	return proc.Ended{Result: proc.Result{ExitCode: code}}, nil
}

// fakeLauncher records what it was asked to start.
type fakeLauncher struct {
	mu    sync.Mutex
	calls [][]string
	// then, when set, is called with each command started.
	then func(args []string)
}

func (l *fakeLauncher) Launch(args []string) error {
	l.mu.Lock()
	l.calls = append(l.calls, args)
	then := l.then
	l.mu.Unlock()
	if then != nil {
		then(args)
	}
	return nil
}

func (l *fakeLauncher) got() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// newService returns a Service over an in-memory repository holding
// the test workflows, with run r1 waiting on ship_it and run r2 failed.
func newService(t *testing.T) *ops.Service {
	t.Helper()
	fsys := afero.NewMemMapFs()
	afero.WriteFile(fsys, repo+"/wf.yaml", []byte(workflow), 0o644)
	afero.WriteFile(fsys, repo+"/failing.yaml", []byte(failing), 0o644)
	svc := &ops.Service{FS: fsys, Clock: clock.NewFake(time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)),
		Starter: scripted{}, Dir: repo, Host: "test", PID: 4242, User: "tester",
		Alive: func(runlock.Holder) bool { return false }}
	start(t, svc, ops.RunRequest{Workflow: repo + "/wf.yaml", RunID: "r1", NoWait: true})
	start(t, svc, ops.RunRequest{Workflow: repo + "/failing.yaml", RunID: "r2", NoWait: true})
	return svc
}

func start(t *testing.T, svc *ops.Service, req ops.RunRequest) ops.RunResult {
	t.Helper()
	l, err := svc.PrepareRun(req)
	if err != nil {
		t.Fatalf("PrepareRun: %v", err)
	}
	res, err := svc.Start(context.Background(), l, ops.Attach{})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return res
}

// newServer returns a loopback server without tokens over a fresh
// Service, and its launcher.
func newServer(t *testing.T, edit ...func(*Config)) (*Server, *fakeLauncher) {
	t.Helper()
	l := &fakeLauncher{}
	cfg := Config{Service: newService(t), Repos: []string{repo}, Loopback: true, Launcher: l, Poll: 20 * time.Millisecond}
	for _, e := range edit {
		e(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, l
}

const host = "127.0.0.1:8080"

// get serves a GET of path, with headers given as name, value pairs.
func get(s *Server, path string, headers ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Host = host
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// csrfCookieValue is the CSRF cookie the tests' browser holds.
const csrfCookieValue = "0123456789abcdef0123456789abcdef0123"

// post serves a POST of form to path from this server's origin, with
// the browser's CSRF cookie and the form's token, and headers given as
// name, value pairs (an empty value removes a header).
func post(s *Server, path string, form url.Values, headers ...string) *httptest.ResponseRecorder {
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", s.csrfToken(csrfCookieValue))
	}
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	r.Host = host
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "http://"+host)
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: csrfCookieValue})
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			r.Header.Del(headers[i])
		} else {
			r.Header.Set(headers[i], headers[i+1])
		}
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func wantStatus(t *testing.T, w *httptest.ResponseRecorder, code int, says ...string) {
	t.Helper()
	if w.Code != code {
		t.Fatalf("status %d, want %d; body:\n%s", w.Code, code, w.Body.String())
	}
	for _, s := range says {
		if !strings.Contains(w.Body.String(), s) {
			t.Errorf("body does not say %q:\n%s", s, w.Body.String())
		}
	}
}

func TestListRunsAndFilter(t *testing.T) {
	s, _ := newServer(t)
	w := get(s, "/")
	wantStatus(t, w, http.StatusOK, `href="/runs/0/r1"`, `href="/runs/0/r2"`, "waiting_on_human", "failed", "ship_it")
	w = get(s, "/?status=failed")
	wantStatus(t, w, http.StatusOK, `href="/runs/0/r2"`)
	if strings.Contains(w.Body.String(), `href="/runs/0/r1"`) {
		t.Error("?status=failed lists the waiting run r1")
	}
}

func TestRunPage(t *testing.T) {
	s, _ := newServer(t)
	w := get(s, "/runs/0/r1")
	wantStatus(t, w, http.StatusOK, `<svg class="graph"`, "for_each items", `name="in.ticket"`, `value="prod"`,
		"2/2 items", "items[0].work", "step_waiting", `data-events="/runs/0/r1/events?after=`,
		`<blockquote class="question" id="question-ship_it">Ship it?</blockquote>`, `<svg class="gantt"`,
		`href="/runs/0/r1/logs/items%5B0%5D.work?log=items.0.work.0.1.log"`)
	svg := w.Body.String()[strings.Index(w.Body.String(), `<svg class="graph"`):]
	svg = svg[:strings.Index(svg, "</svg>")]
	for _, id := range []string{"build", "items", "items.work", "ship_it", "deploy"} {
		name := id[strings.LastIndex(id, ".")+1:]
		if !strings.Contains(svg, `data-key="`+id+`"`) || !strings.Contains(svg, ">"+name+"<") && !strings.Contains(svg, "for_each "+id) {
			t.Errorf("the graph does not name step %s", id)
		}
	}
	if !strings.Contains(svg, `class="node s-waiting_on_human" data-key="ship_it"`) {
		t.Error("the graph does not colour ship_it as waiting")
	}
	for k, v := range map[string]string{
		"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "same-origin",
	} {
		if got := w.Header().Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	for _, path := range []string{"/static/flow.css", "/static/flow.js"} {
		wantStatus(t, get(s, path), http.StatusOK)
	}
}

func TestLogs(t *testing.T) {
	s, _ := newServer(t)
	wantStatus(t, get(s, "/runs/0/r1/logs/build"), http.StatusOK, "out of build", "build.0.1.log")
	wantStatus(t, get(s, "/runs/0/r1/logs/items%5B1%5D.work"), http.StatusOK, "out of work", "items.1.work.0.1.log")
	wantStatus(t, get(s, "/runs/0/r1/logs/deploy"), http.StatusConflict, "has not run yet")
	// The session has ended: the stream sends what follows the offset,
	// then its end.
	w := get(s, "/runs/0/r1/logs/build/tail?offset=4")
	wantStatus(t, w, http.StatusOK, "id: 13\nevent: log\n", `data: "of build\n"`, "event: end")
	if w.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("Content-Type %q", w.Header().Get("Content-Type"))
	}
}

func TestBadTargets(t *testing.T) {
	s, _ := newServer(t)
	for path, code := range map[string]int{
		"/runs/7/r1":                          http.StatusNotFound,
		"/runs/x/r1":                          http.StatusNotFound,
		"/runs/0/nope":                        http.StatusNotFound,
		"/runs/0/-r1":                         http.StatusBadRequest,
		"/runs/0/r%241":                       http.StatusBadRequest,
		"/runs/0/r1/logs/a%5Bb":               http.StatusBadRequest,
		"/runs/0/r1/logs/items%5B%2F%5D.work": http.StatusBadRequest,
		"/runs/0/r1/logs/nope":                http.StatusBadRequest,
	} {
		if w := get(s, path); w.Code != code && !(w.Code == http.StatusMovedPermanently && code == http.StatusNotFound) {
			t.Errorf("GET %s: %d, want %d", path, w.Code, code)
		}
	}
	wantStatus(t, post(s, "/runs/0/r1/approve/a%5Bb", nil), http.StatusBadRequest)
	wantStatus(t, post(s, "/runs/0/r1/control/explode", nil), http.StatusNotFound)
}

// events reads a stream's "event:" lines into a channel.
func events(t *testing.T, body io.Reader) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				ch <- v
			}
		}
	}()
	return ch
}

func TestRunEventsStream(t *testing.T) {
	s, _ := newServer(t)
	srv := httptest.NewServer(s)
	defer srv.Close()
	st, err := s.svc.Status(repo, "r1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/runs/0/r1/events?after="+strconv.FormatInt(st.State.Seq, 10), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := events(t, resp.Body)
	if ev := next(t, ch); ev != "status" {
		t.Fatalf("first event %q, want status", ev)
	}
	// Approving and resuming the run appends events.
	if _, err := s.svc.Decide(ops.DecideRequest{RunID: "r1", Step: core.Key("ship_it"), Approve: true, Input: map[string]any{"ticket": "T-1"}}); err != nil {
		t.Fatal(err)
	}
	l, err := s.svc.PrepareResume(ops.ResumeRequest{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Start(context.Background(), l, ops.Attach{}); err != nil {
		t.Fatal(err)
	}
	for {
		ev := next(t, ch)
		if ev == "event" {
			return
		}
	}
}

// next returns the stream's next event. It waits without a deadline:
// a stream that never sends is bounded by the test binary's -timeout.
func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	ev, ok := <-ch
	if !ok {
		t.Fatal("the stream ended")
	}
	return ev
}

// decision reads the decision recorded for ship_it in r1.
func decision(t *testing.T, s *Server) *core.HumanInput {
	t.Helper()
	st, err := s.svc.Status(repo, "r1")
	if err != nil {
		t.Fatal(err)
	}
	in, err := record.ReadManualInput(s.svc.FS, *st.State.Steps[keytest.K("ship_it")].ManualInputPath)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestApproveWithInputs(t *testing.T) {
	s, _ := newServer(t)
	wantStatus(t, post(s, "/runs/0/r1/approve/ship_it", url.Values{"in.env": {"staging"}}), http.StatusBadRequest, "ticket")
	w := post(s, "/runs/0/r1/approve/ship_it", url.Values{"in.ticket": {"OPS-12"}, "in.env": {""}})
	wantStatus(t, w, http.StatusSeeOther)
	// No runner holds r1: the page says so, shows the decision and
	// offers Resume in place of the form.
	if loc := w.Header().Get("Location"); loc != "/runs/0/r1?done=decided" {
		t.Errorf("Location %q", loc)
	}
	in := decision(t, s)
	if !in.Approved || in.By != "local" || in.Input["ticket"] != "OPS-12" || in.Input["env"] != "prod" {
		t.Errorf("decision %+v", in)
	}
	w = get(s, "/runs/0/r1?done=decided")
	wantStatus(t, w, http.StatusOK, "No runner holds this run", `<p class="decided">Approved by local at 2025-01-15 14:30:00Z with env=prod, ticket=OPS-12. No runner holds this run`,
		`action="/runs/0/r1/resume"`)
	if strings.Contains(w.Body.String(), `name="in.ticket"`) {
		t.Error("the approval form still shows after the decision")
	}
}

func TestReject(t *testing.T) {
	s, _ := newServer(t)
	wantStatus(t, post(s, "/runs/0/r1/reject/ship_it", nil), http.StatusBadRequest, "reason")
	wantStatus(t, post(s, "/runs/0/r1/reject/ship_it", url.Values{"reason": {"not today"}}), http.StatusSeeOther)
	if in := decision(t, s); in.Approved || in.Reason != "not today" {
		t.Errorf("decision %+v", in)
	}
	wantStatus(t, post(s, "/runs/0/r1/approve/build", nil), http.StatusConflict)
}

func TestConcurrentDecisions(t *testing.T) {
	s, _ := newServer(t)
	forms := []url.Values{{"in.ticket": {"OPS-1"}}, {"reason": {"no"}}}
	paths := []string{"/runs/0/r1/approve/ship_it", "/runs/0/r1/reject/ship_it"}
	got := make([]*httptest.ResponseRecorder, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = post(s, paths[i], forms[i])
		}()
	}
	wg.Wait()
	won, lost := 0, 0
	for _, w := range got {
		switch w.Code {
		case http.StatusSeeOther:
			won++
		case http.StatusConflict:
			lost++
			if !strings.Contains(w.Body.String(), "already") || !strings.Contains(w.Body.String(), "by local") {
				t.Errorf("the loser is not told what was decided:\n%s", w.Body.String())
			}
		}
	}
	if won != 1 || lost != 1 {
		t.Errorf("%d won, %d lost; want exactly one each", won, lost)
	}
}

func TestControl(t *testing.T) {
	s, _ := newServer(t)
	for verb, state := range controlStates {
		w := post(s, "/runs/0/r1/control/"+verb, url.Values{"note": {"from the web"}})
		wantStatus(t, w, http.StatusSeeOther)
		c, err := record.ReadControl(s.svc.FS, record.RunDir(repo, "r1"))
		if err != nil || c.DesiredState != state || c.SetBy != "local" || c.Note != "from the web" {
			t.Errorf("%s: control %+v, %v", verb, c, err)
		}
	}
	wantStatus(t, post(s, "/runs/0/r2/control/pause", nil), http.StatusConflict, "has already failed")
}

func TestResumeAndRetry(t *testing.T) {
	s, l := newServer(t)
	wantStatus(t, post(s, "/runs/0/r1/retry", nil), http.StatusConflict, "not failed")
	wantStatus(t, post(s, "/runs/0/r2/resume", nil), http.StatusConflict, "Retry failed steps")
	wantStatus(t, post(s, "/runs/0/r1/resume", nil), http.StatusSeeOther)
	wantStatus(t, post(s, "/runs/0/r2/retry", nil), http.StatusSeeOther)
	want := [][]string{{"resume", "r1", "--repo", repo, "--engine", "local", "--by", "local"}, {"retry", "r2", "--repo", repo, "--engine", "local", "--by", "local"}}
	if got := l.got(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("launched %q, want %q", got, want)
	}
	// A run a live runner holds is not resumed.
	s.svc.Alive = func(runlock.Holder) bool { return true }
	afero.WriteFile(s.svc.FS, filepath.Join(record.RunDir(repo, "r1"), record.LockFile), []byte(`{"pid":99,"host":"test","token":"t"}`), 0o644)
	wantStatus(t, post(s, "/runs/0/r1/resume", nil), http.StatusConflict, "live runner")
	if len(l.got()) != 2 {
		t.Errorf("launched %q", l.got())
	}
}

func TestAuth(t *testing.T) {
	if _, err := New(Config{Service: newService(t)}); err == nil {
		t.Error("a server off loopback without tokens was made")
	}
	const secret = "alice-secret-0123456789"
	s, _ := newServer(t, func(c *Config) {
		c.Loopback = false
		c.Tokens = []Token{{Name: "alice", Secret: secret}, {Name: "bob", Secret: "bob-secret-0123456789"}}
	})
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong-secret-0123456789"}, {"Authorization", "Basic " + secret}} {
		w := get(s, "/", h...)
		wantStatus(t, w, http.StatusUnauthorized)
		if strings.Contains(w.Body.String(), "r1") {
			t.Error("a 401 shows runs")
		}
	}
	wantStatus(t, get(s, "/runs/0/r1"), http.StatusUnauthorized)
	// The 401 page says how to log in, with the server's own style.
	wantStatus(t, get(s, "/runs/0/r1"), http.StatusUnauthorized, "login link", "Authorization: Bearer")
	wantStatus(t, get(s, "/static/flow.css"), http.StatusOK)
	wantStatus(t, get(s, "/", "Authorization", "Bearer "+secret), http.StatusOK, "signed in as alice", "r1")
	wantStatus(t, get(s, "/login?token=wrong"), http.StatusUnauthorized)
	w := get(s, "/login?token="+secret)
	wantStatus(t, w, http.StatusSeeOther)
	var c *http.Cookie
	for _, k := range w.Result().Cookies() {
		if k.Name == tokenCookie {
			c = k
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Value != secret {
		t.Fatalf("login cookie %+v", c)
	}
	wantStatus(t, get(s, "/", "Cookie", tokenCookie+"="+secret), http.StatusOK, "signed in as alice")
	// Changes are recorded as the token's name.
	wantStatus(t, post(s, "/runs/0/r1/control/pause", nil, "Authorization", "Bearer bob-secret-0123456789"), http.StatusSeeOther)
	if ctl, _ := record.ReadControl(s.svc.FS, record.RunDir(repo, "r1")); ctl == nil || ctl.SetBy != "bob" {
		t.Errorf("control %+v, want set by bob", ctl)
	}
	wantStatus(t, post(s, "/runs/0/r1/control/pause", nil), http.StatusUnauthorized)
}

func TestLoopbackServerRefusesOtherHosts(t *testing.T) {
	s, _ := newServer(t)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Host = "attacker.example:8080"
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	wantStatus(t, w, http.StatusForbidden)
	for _, h := range []string{"localhost:8080", "[::1]:8080", "127.0.0.1"} {
		r.Host = h
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		wantStatus(t, w, http.StatusOK)
	}
}

func TestCSRF(t *testing.T) {
	s, _ := newServer(t)
	path := "/runs/0/r1/control/pause"
	wantStatus(t, post(s, path, url.Values{"csrf": {""}}), http.StatusForbidden, "CSRF")
	wantStatus(t, post(s, path, url.Values{"csrf": {s.csrfToken("another cookie's value, 32 bytes+")}}), http.StatusForbidden, "CSRF")
	wantStatus(t, post(s, path, nil, "Origin", "http://evil.example"), http.StatusForbidden, "does not come from this server")
	wantStatus(t, post(s, path, nil, "Origin", ""), http.StatusForbidden)
	wantStatus(t, post(s, path, nil, "Origin", "", "Referer", "http://"+host+"/runs/0/r1"), http.StatusSeeOther)
	wantStatus(t, post(s, path, nil), http.StatusSeeOther)
	// A page gives a browser without one a CSRF cookie, and its forms
	// the token of that cookie.
	w := get(s, "/runs/0/r1")
	var c *http.Cookie
	for _, k := range w.Result().Cookies() {
		if k.Name == csrfCookie {
			c = k
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Fatalf("CSRF cookie %+v", c)
	}
	if !strings.Contains(w.Body.String(), `name="csrf" value="`+s.csrfToken(c.Value)+`"`) {
		t.Error("the forms do not carry the cookie's CSRF token")
	}
}

func TestReadOnly(t *testing.T) {
	s, l := newServer(t, func(c *Config) { c.ReadOnly = true })
	// The run's runner has said what it does; the server writes nothing.
	before, _ := record.ReadControl(s.svc.FS, record.RunDir(repo, "r1"))
	w := get(s, "/runs/0/r1")
	wantStatus(t, w, http.StatusOK, "read-only")
	if strings.Contains(w.Body.String(), `method="post"`) {
		t.Error("a read-only server shows forms")
	}
	for _, path := range []string{"/runs/0/r1/approve/ship_it", "/runs/0/r1/reject/ship_it", "/runs/0/r1/control/pause",
		"/runs/0/r1/control/continue", "/runs/0/r1/control/run-once", "/runs/0/r1/control/cleanup", "/runs/0/r1/resume", "/runs/0/r2/retry"} {
		wantStatus(t, post(s, path, url.Values{"in.ticket": {"x"}, "reason": {"x"}}), http.StatusForbidden)
	}
	if len(l.got()) != 0 {
		t.Errorf("a read-only server launched %q", l.got())
	}
	if c, _ := record.ReadControl(s.svc.FS, record.RunDir(repo, "r1")); !reflect.DeepEqual(c, before) {
		t.Errorf("a read-only server wrote control %+v (it was %+v)", c, before)
	}
}

func TestParseTokenAndLoopback(t *testing.T) {
	for _, bad := range []string{"alice", "=secret-0123456789abc", "alice=short", "al ice=secret-0123456789abc"} {
		if _, err := ParseToken(bad); err == nil || strings.Contains(err.Error(), "short") || strings.Contains(err.Error(), "0123") {
			t.Errorf("ParseToken(%q) = %v; want an error that hides the secret", bad, err)
		}
	}
	if tok, err := ParseToken("alice=secret=0123456789abc"); err != nil || tok.Name != "alice" || tok.Secret != "secret=0123456789abc" {
		t.Errorf("ParseToken = %+v, %v", tok, err)
	}
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "localhost:80": true, "[::1]:8080": true,
		":8080": false, "0.0.0.0:8080": false, "192.168.1.2:8080": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) = %v", addr, !want)
		}
	}
}

func TestExecLauncher(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	if err := (ExecLauncher{Path: "/bin/sh"}).Launch([]string{"-c", "exit 0"}); err != nil {
		t.Fatal(err)
	}
	if err := (ExecLauncher{Path: "/nonexistent/flow"}).Launch([]string{"resume"}); err == nil {
		t.Error("launching a missing executable succeeded")
	}
}

func TestGraphLoopBack(t *testing.T) {
	fsys := afero.NewMemMapFs()
	src := "name: lb\nsteps:\n  - id: code\n    run: echo code\n  - id: review\n    run: echo review\n    gate:\n      pass: 'true'\n      loop_back_to: code\n"
	afero.WriteFile(fsys, "/lb.yaml", []byte(src), 0o644)
	wf, err := config.Load(fsys, "/lb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st := &core.State{StepOrder: keytest.Keys("code", "review"), Steps: map[core.StepKey]*core.StepState{keytest.K("code"): {Status: core.Completed}, keytest.K("review"): {Status: core.Failed}}}
	svg := string(graphSVG(wf, st, true))
	for _, want := range []string{`<path class="edge" fill="none"`, `class="edge loopback" stroke-dasharray="6 4"`, "review loops back to code",
		`class="node s-completed" data-key="code"`, `class="node s-failed" data-key="review"`, ">FAILED<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the graph has no %q:\n%s", want, svg)
		}
	}
	if svg != string(graphSVG(wf, st, true)) {
		t.Error("the graph is not the same twice")
	}
}

// TestFindRun: /r/RUN, the link a notification carries, leads to the
// run's page in the repository that has it.
func TestFindRun(t *testing.T) {
	s, _ := newServer(t)
	w := get(s, "/r/r1")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/runs/0/r1" {
		t.Errorf("GET /r/r1: %d to %q", w.Code, w.Header().Get("Location"))
	}
	wantStatus(t, get(s, "/r/nope"), http.StatusNotFound)
	wantStatus(t, get(s, "/r/-bad"), http.StatusBadRequest)
}

// TestSameOriginBehindProxy: a page served over https by a proxy that
// speaks http to flow serve is the same origin; another host is not.
func TestSameOriginBehindProxy(t *testing.T) {
	for origin, want := range map[string]bool{
		"https://flow.example.com": true, "http://flow.example.com": true,
		"https://evil.example.com": false, "ftp://flow.example.com": false, "": false, "null": false,
	} {
		r := httptest.NewRequest("POST", "http://flow.example.com/runs/0/r1/control/pause", nil)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if got := sameOrigin(r); got != want {
			t.Errorf("Origin %q: same origin %v, want %v", origin, got, want)
		}
	}
}

// TestLoginCode: the login code flow serve prints when it makes its
// token signs in every browser it is opened in, until it is revoked;
// the token itself is never in it.
func TestLoginCode(t *testing.T) {
	s, _ := newServer(t, func(c *Config) {
		c.Loopback = false
		c.Tokens = []Token{{Name: "admin", Secret: "0123456789abcdef0123"}}
		c.LoginCode = "once-only-code-0123456789"
	})
	w := get(s, "/login?code=once-only-code-0123456789")
	if w.Code != http.StatusSeeOther {
		t.Fatalf("first use: %d", w.Code)
	}
	var cookie *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == tokenCookie {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != "0123456789abcdef0123" || !cookie.HttpOnly {
		t.Fatalf("cookie %+v", cookie)
	}
	// A second browser: a phone.
	wantStatus(t, get(s, "/login?code=once-only-code-0123456789"), http.StatusSeeOther)
	wantStatus(t, get(s, "/login?code=wrong"), http.StatusUnauthorized, "login link")
	// Revoked by someone signed in, it signs no one in any more.
	wantStatus(t, post(s, "/login/revoke", nil, "Cookie", tokenCookie+"=0123456789abcdef0123; "+csrfCookie+"="+csrfCookieValue), http.StatusOK, "revoked")
	wantStatus(t, get(s, "/login?code=once-only-code-0123456789"), http.StatusUnauthorized)
}

// TestRunPageOfALargeRun: past a page of rows the step table is paged,
// opening at the step that waits, whose decision form shows on every
// page; past its bound the graph is not drawn, and the page says how to
// draw it.
func TestRunPageOfALargeRun(t *testing.T) {
	s, _ := newServer(t)
	s.pageSteps, s.maxGraphSteps = 2, 4
	w := get(s, "/runs/0/r1")
	wantStatus(t, w, http.StatusOK, "Steps 5–6 of 6", `<b aria-current="page">3</b>`, `href="/runs/0/r1?page=2" rel="prev"`,
		`data-key="ship_it"`, `name="in.ticket"`, "drawn for workflows of up to 4 steps; this one has 5", "flow graph "+repo+"/wf.yaml")
	body := w.Body.String()
	if strings.Contains(body, `<svg class="graph"`) || strings.Contains(body, `<tr class="s-completed" data-key="build"`) {
		t.Error("the page draws the graph, or shows the first page's rows")
	}
	w = get(s, "/runs/0/r1?page=1")
	wantStatus(t, w, http.StatusOK, "Steps 1–2 of 6", `data-key="build"`, `name="in.ticket"`, `href="/runs/0/r1?page=2" rel="next"`)
	if strings.Contains(w.Body.String(), `<tr class="s-waiting_on_human" data-key="ship_it"`) {
		t.Error("page 1 shows ship_it's row")
	}
}

// TestWorkflowLoadedOnce: the pages of a run load its workflow once
// while the file stays the same, and again once it changes.
func TestWorkflowLoadedOnce(t *testing.T) {
	s, _ := newServer(t)
	fsys := countfs.New(s.svc.FS)
	s.svc.FS = fsys
	for range 3 {
		wantStatus(t, get(s, "/runs/0/r1"), http.StatusOK, `data-key="deploy"`)
	}
	if n := fsys.Opens(repo + "/wf.yaml"); n != 1 {
		t.Errorf("three views opened the workflow %d times, want 1", n)
	}
	edited := strings.Replace(workflow, "id: deploy", "id: deploy_all", 1)
	if err := afero.WriteFile(fsys, repo+"/wf.yaml", []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys.Reset()
	w := get(s, "/runs/0/r1")
	wantStatus(t, w, http.StatusOK, `data-key="deploy_all"`)
	if n := fsys.Opens(repo + "/wf.yaml"); n != 1 {
		t.Errorf("the view after the edit opened the workflow %d times, want 1", n)
	}
}

// TestFinishedRunsReadOnce: the list reads a finished run in full once,
// and again when the run changes; a run that goes on is read each time.
func TestFinishedRunsReadOnce(t *testing.T) {
	s, _ := newServer(t)
	reads := map[string]int{}
	s.listStatus = func(src *source, runID string) (ops.Status, error) {
		reads[runID]++
		return s.svc.Status(src.dir, runID)
	}
	for range 3 {
		wantStatus(t, get(s, "/"), http.StatusOK, `href="/runs/0/r1"`, `href="/runs/0/r2"`, "failed")
	}
	if reads["r2"] != 1 || reads["r1"] != 3 {
		t.Errorf("three listings read the failed run r2 %d times (want 1) and the waiting run r1 %d times (want 3)", reads["r2"], reads["r1"])
	}
	// Retrying the failed run changes it: it is read in full again.
	s.svc.Clock.(*clock.Fake).Advance(time.Minute)
	l, err := s.svc.PrepareResume(ops.ResumeRequest{RunID: "r2", Retry: true, NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Start(context.Background(), l, ops.Attach{}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, get(s, "/"), http.StatusOK, `href="/runs/0/r2"`)
	wantStatus(t, get(s, "/"), http.StatusOK, `href="/runs/0/r2"`)
	if reads["r2"] != 2 {
		t.Errorf("after a retry the list read r2 %d times in all, want 2", reads["r2"])
	}
	// A filtered list keeps only the rows it shows.
	wantStatus(t, get(s, "/?status=waiting_on_human"), http.StatusOK)
	wantStatus(t, get(s, "/"), http.StatusOK)
	if reads["r2"] != 3 {
		t.Errorf("r2 was read %d times in all, want 3 (its row dropped by the filtered list)", reads["r2"])
	}
}

// TestWorkflowCacheKeepsTheLastUsed: the server keeps at most
// maxCachedWorkflows workflows, dropping the one used longest ago.
func TestWorkflowCacheKeepsTheLastUsed(t *testing.T) {
	s, _ := newServer(t)
	state := func(i int) *core.State {
		path := fmt.Sprintf("%s/wf%d.yaml", repo, i)
		if err := afero.WriteFile(s.svc.FS, path, []byte(workflow), 0o644); err != nil {
			t.Fatal(err)
		}
		return &core.State{WorkflowFile: path, RepoDir: repo}
	}
	for i := range maxCachedWorkflows {
		if s.workflow(repo, state(i)) == nil {
			t.Fatalf("workflow %d did not load", i)
		}
	}
	s.workflow(repo, state(0)) // used again: wf1 is now the oldest
	s.workflow(repo, state(maxCachedWorkflows))
	if n := len(s.workflows.m); n != maxCachedWorkflows {
		t.Errorf("%d workflows kept, want %d", n, maxCachedWorkflows)
	}
	for i, want := range map[int]bool{0: true, 1: false, 2: true, maxCachedWorkflows: true} {
		if _, ok := s.workflows.m[workflowKey{repo, fmt.Sprintf("%s/wf%d.yaml", repo, i)}]; ok != want {
			t.Errorf("wf%d kept: %v, want %v", i, ok, want)
		}
	}
}

// greet has vars, one of them a number, and one named as a secret.
const greet = `name: greet
vars:
  greeting: hello
  attempts: "1"
  api_token: ""
steps:
  - id: hello
    run: echo "{{ vars.greeting }}"
    max_attempts: vars.attempts
`

// TestStartRun: the start page offers the workflows of workflows/; a
// var that breaks the workflow is refused, positioned, before anything
// starts; a good start launches flow run and opens the run's page.
func TestStartRun(t *testing.T) {
	s, l := newServer(t)
	afero.WriteFile(s.svc.FS, repo+"/workflows/greet.yaml", []byte(greet), 0o644)
	l.then = func(args []string) {
		if args[0] == "run" {
			afero.WriteFile(s.svc.FS, record.RunDir(repo, args[slices.Index(args, "--run-id")+1])+"/"+record.EventsFile, nil, 0o644)
		}
	}
	wantStatus(t, get(s, "/start"), http.StatusOK, `href="/start/0?workflow=workflows%2Fgreet.yaml"`, ">greet<")
	w := get(s, "/start/0?workflow=workflows%2Fgreet.yaml")
	wantStatus(t, w, http.StatusOK, `name="var.greeting" value="hello"`, `name="var.attempts" value="1"`, `<option value="hello">hello</option>`, "<code>api_token</code>")
	if strings.Contains(w.Body.String(), `name="var.api_token"`) {
		t.Error("the form asks for a secret")
	}
	wantStatus(t, get(s, "/start/0?workflow=wf.yaml"), http.StatusNotFound)
	form := url.Values{"workflow": {"workflows/greet.yaml"}, "var.greeting": {"bonjour"}, "var.attempts": {"zero"}}
	w = post(s, "/start/0", form)
	wantStatus(t, w, http.StatusBadRequest, `<div class="field-error" data-var="attempts"><div class="start-error"><b>greet.yaml:9:19</b>`, "not a number",
		"    max_attempts: vars.attempts\n                  ^</pre>", `value="bonjour"`)
	form.Set("var.api_token", "s3cret")
	form.Set("var.attempts", "2")
	wantStatus(t, post(s, "/start/0", form), http.StatusBadRequest, "names a secret")
	if n := len(l.got()); n != 0 {
		t.Fatalf("%d commands started by refused starts", n)
	}
	form.Del("var.api_token")
	w = post(s, "/start/0", form)
	wantStatus(t, w, http.StatusSeeOther)
	got := l.got()
	if len(got) != 1 {
		t.Fatalf("started %q", got)
	}
	id := got[0][slices.Index(got[0], "--run-id")+1]
	want := []string{"run", repo + "/workflows/greet.yaml", "--repo", repo, "--run-id", id, "--engine", "local", "--by", "local", "--var", "attempts=2", "--var", "greeting=bonjour"}
	if !slices.Equal(got[0], want) {
		t.Errorf("started %q, want %q", got[0], want)
	}
	if loc := w.Header().Get("Location"); loc != "/runs/0/"+id+"?done=started" {
		t.Errorf("Location %q", loc)
	}
}

// TestAPI: reads answer the command line's JSON; changes need a Bearer
// token, never a browser's cookie and CSRF token.
func TestAPI(t *testing.T) {
	const apiSecret = "api-secret-0123456789"
	s, l := newServer(t, func(c *Config) { c.APITokens = []Token{{Name: "api", Secret: apiSecret}} })
	w := get(s, "/api/runs")
	wantStatus(t, w, http.StatusOK, `"repo":0`, `"engine":"local"`, `"run_id":"r1"`, `"status":"waiting_on_human"`)
	wantStatus(t, get(s, "/api/runs/0/r2"), http.StatusOK, `"run_id":"r2"`, `"status":"failed"`, `"liveness":{`)
	wantStatus(t, get(s, "/api/runs/0/nope"), http.StatusNotFound, `"error":"There is no run nope in /repo."`)
	wantStatus(t, get(s, "/api/runs/0/r1/events?after=18"), http.StatusOK, `"seq":19`)
	wantStatus(t, get(s, "/api/runs/0/r1/logs/build"), http.StatusOK, `"log":"build.0.1.log"`, `"text":"out of build\n"`, `"state":{"state":"ended"`)
	// A change with the browser's cookie and CSRF token, or no token,
	// is refused; with the Bearer token it is made, as the token's name.
	wantStatus(t, post(s, "/api/runs/0/r1/control/pause", nil), http.StatusUnauthorized, "Bearer")
	wantStatus(t, post(s, "/api/runs/0/r1/control/pause", nil, "Authorization", "Bearer wrong-0123456789abcdef"), http.StatusUnauthorized)
	wantStatus(t, post(s, "/api/runs/0/r1/control/pause", nil, "Authorization", "Bearer "+apiSecret, "Origin", ""), http.StatusOK, `"desired_state":"pause"`, `"by":"api"`)
	req := httptest.NewRequest(http.MethodPost, "/api/runs/0/r1/approve/ship_it", strings.NewReader(`{"input": {"ticket": "OPS-3"}}`))
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+apiSecret)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	wantStatus(t, rec, http.StatusOK, `"approved":true`, `"by":"api"`, `"runner_live":false`)
	if in := decision(t, s); in.Input["ticket"] != "OPS-3" || in.Input["env"] != "prod" {
		t.Errorf("decision %+v", in)
	}
	req = httptest.NewRequest(http.MethodPost, "/api/runs/0/r2/retry", nil)
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+apiSecret)
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	wantStatus(t, rec, http.StatusAccepted, `"started":"retry"`)
	if got := l.got(); len(got) != 1 || got[0][0] != "retry" {
		t.Errorf("launched %q", got)
	}
	// A read-only server refuses changes whatever the token.
	ro, _ := newServer(t, func(c *Config) { c.APITokens = []Token{{Name: "api", Secret: apiSecret}}; c.ReadOnly = true })
	wantStatus(t, post(ro, "/api/runs/0/r1/control/pause", nil, "Authorization", "Bearer "+apiSecret), http.StatusForbidden, "read-only")
}

// TestListStream: the list's stream sends the list, rendered, and the
// count of runs waiting for a decision.
func TestListStream(t *testing.T) {
	s, _ := newServer(t)
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/live", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if !strings.Contains(d, `data-run=\"r1\"`) || !strings.Contains(d, `"waiting":1`) || !strings.Contains(d, `check:`) && !strings.Contains(d, `boom: exit code 1`) {
				t.Errorf("the list sent %s", d)
			}
			return
		}
	}
	t.Fatal("the stream ended without a list")
}

// TestGraphEdgesAvoidBoxes: in a graph with a loop body, an edge that
// skips rows and a loop-back, every straight part of an edge lies
// between rows, in its source's or target's column, or in a lane right
// of every box.
func TestGraphEdgesAvoidBoxes(t *testing.T) {
	fsys := afero.NewMemMapFs()
	src := `name: g
steps:
  - id: a
    run: x
  - id: b
    run: x
  - id: loop
    needs: [a, b]
    for_each: ["1", "2"]
    steps:
      - {id: one, run: x}
      - {id: two, run: x, needs: [one]}
      - {id: three, run: x, needs: [two], loop_back_to: one}
  - id: review
    needs: [loop]
    run: x
    loop_back_to: a
  - id: ship
    needs: [review, a]
    run: x
`
	afero.WriteFile(fsys, "/g.yaml", []byte(src), 0o644)
	wf, err := config.Load(fsys, "/g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	svg := string(graphSVG(wf, &core.State{Steps: map[core.StepKey]*core.StepState{}}, true))
	type rect struct{ x, y, w, h float64 }
	var boxes []rect
	for _, m := range regexp.MustCompile(`<g class="node (?:s-\w+)" data-key="[^"]+"><rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)"`).FindAllStringSubmatch(svg, -1) {
		var r rect
		fmt.Sscan(m[1]+" "+m[2]+" "+m[3]+" "+m[4], &r.x, &r.y, &r.w, &r.h)
		boxes = append(boxes, r)
	}
	if len(boxes) != 7 {
		t.Fatalf("%d step boxes, want 7:\n%s", len(boxes), svg)
	}
	paths := regexp.MustCompile(`<path class="edge[^"]*"[^>]* d="([^"]+)"[^>]*><title>([^<]+)</title>`).FindAllStringSubmatch(svg, -1)
	for _, want := range []string{"one, then two", "two, then three", "three loops back to one", "review loops back to a", "a, then ship", "a, then loop", "b, then loop"} {
		found := false
		for _, p := range paths {
			found = found || p[2] == want
		}
		if !found {
			t.Errorf("no edge %q", want)
		}
	}
	for _, p := range paths {
		// Sample the path: its straight parts, and its curves by their
		// cubic formula.
		var pts [][2]float64
		f := strings.Fields(strings.NewReplacer(",", " ").Replace(p[1]))
		var cur [2]float64
		for i := 0; i < len(f); {
			num := func(k int) float64 { v, _ := strconv.ParseFloat(f[i+k], 64); return v }
			switch f[i] {
			case "M":
				cur = [2]float64{num(1), num(2)}
				i += 3
			case "L":
				to := [2]float64{num(1), num(2)}
				for s := 0.0; s <= 1; s += 0.02 {
					pts = append(pts, [2]float64{cur[0] + s*(to[0]-cur[0]), cur[1] + s*(to[1]-cur[1])})
				}
				cur = to
				i += 3
			case "C":
				c1, c2, to := [2]float64{num(1), num(2)}, [2]float64{num(3), num(4)}, [2]float64{num(5), num(6)}
				for s := 0.0; s <= 1; s += 0.02 {
					u := 1 - s
					pts = append(pts, [2]float64{u*u*u*cur[0] + 3*u*u*s*c1[0] + 3*u*s*s*c2[0] + s*s*s*to[0],
						u*u*u*cur[1] + 3*u*u*s*c1[1] + 3*u*s*s*c2[1] + s*s*s*to[1]})
				}
				cur = to
				i += 7
			default:
				t.Fatalf("path %q: unknown command %q", p[1], f[i])
			}
		}
		for _, pt := range pts {
			for _, b := range boxes {
				if pt[0] > b.x+1 && pt[0] < b.x+b.w-1 && pt[1] > b.y+1 && pt[1] < b.y+b.h-1 {
					t.Errorf("edge %q passes through the box at %v (point %v)", p[2], b, pt)
					break
				}
			}
		}
	}
}

// TestTimeline: sessions, waits and loop-backs from a run's events.
func TestTimeline(t *testing.T) {
	s, _ := newServer(t)
	st, err := s.svc.Status(repo, "r1")
	if err != nil {
		t.Fatal(err)
	}
	tl := s.readTimeline(target{src: s.sources[0], runID: "r1"}, st.State)
	if r := tl.rows[keytest.K("build")]; r == nil || len(r.bars) != 1 || r.bars[0].class != "s-completed" || r.bars[0].log != "build.0.1.log" {
		t.Errorf("build's row %+v", tl.rows[keytest.K("build")])
	}
	if r := tl.rows[keytest.K("ship_it")]; r == nil || len(r.bars) != 1 || !r.bars[0].wait || !r.bars[0].end.IsZero() {
		t.Errorf("ship_it's row %+v", tl.rows[keytest.K("ship_it")])
	}
	svg, note := tl.svg(st.State, "/runs/0/r1", st.At, 100, false)
	for _, want := range []string{`class="bar s-completed" data-key="build"`, `class="bar s-waiting_on_human wait" data-key="ship_it"`,
		`href="/runs/0/r1/logs/items%5B1%5D.work?log=items.1.work.0.1.log"`, ">items[0].work<"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the timeline has no %q:\n%s", want, svg)
		}
	}
	if note != "" {
		t.Errorf("note %q", note)
	}
	_, note = tl.svg(st.State, "/runs/0/r1", st.At, 2, false)
	if !strings.Contains(note, "first 2 of") {
		t.Errorf("a timeline of 2 rows notes %q", note)
	}
}

// fakeEngine is another engine's server holding one run, t1, waiting
// on a human: it answers from r1's status and records what is asked.
type fakeEngine struct {
	st    ops.Status
	mu    sync.Mutex
	asked []string
}

func (e *fakeEngine) note(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, s)
}

func (e *fakeEngine) Name() string { return "temporal" }
func (e *fakeEngine) Run(context.Context, spec.Options, ops.Attach) (spec.Result, error) {
	return spec.Result{}, ops.Unsupported("temporal", "run")
}
func (e *fakeEngine) Restart(_ context.Context, req ops.RestartRequest) (*ops.Launch, error) {
	e.note("restart " + req.RunID)
	return &ops.Launch{}, nil
}
func (e *fakeEngine) Newest(context.Context, string, string) (string, error) { return "t1", nil }
func (e *fakeEngine) Runs(context.Context, string) (ops.RunList, error) {
	return ops.RunList{Runs: []ops.RunSummary{{RunID: "t1", Workflow: "wf", Status: string(e.st.State.Status), CreatedAt: e.st.State.CreatedAt.String()}}}, nil
}
func (e *fakeEngine) Status(_ context.Context, _, runID string) (ops.Status, error) {
	if runID != "t1" {
		return ops.Status{}, ops.Usage("no run %s on Temporal", runID)
	}
	return e.st, nil
}
func (e *fakeEngine) Watch(ctx context.Context, repo, runID string, _ ops.WatchOptions, fn func(ops.Update) error) error {
	st, err := e.Status(ctx, repo, runID)
	if err != nil {
		return err
	}
	return fn(ops.Update{Status: &st, First: true, Changed: true})
}
func (e *fakeEngine) Logs(_ context.Context, req ops.LogsRequest, out, _ io.Writer) error {
	e.note("logs " + req.Step.String())
	_, err := io.WriteString(out, "tail of "+req.Step.String()+"\n")
	return err
}
func (e *fakeEngine) Decide(_ context.Context, req ops.DecideRequest) (ops.Decision, error) {
	e.note(fmt.Sprintf("decide %s %s %v by %s", req.RunID, req.Step, req.Input, req.By))
	return ops.Decision{RunID: req.RunID, Step: req.Step.String(), Approved: req.Approve, By: req.By}, nil
}
func (e *fakeEngine) Control(_ context.Context, req ops.ControlRequest) (ops.ControlResult, error) {
	e.note(fmt.Sprintf("control %s %s", req.RunID, req.State))
	return ops.ControlResult{RunID: req.RunID, DesiredState: req.State, RunnerLive: true}, nil
}
func (e *fakeEngine) Cancel(_ context.Context, req ops.CancelRequest) (ops.CancelResult, error) {
	e.note("cancel " + req.RunID)
	return ops.CancelResult{RunID: req.RunID}, nil
}

// TestRemoteEngine: another engine's runs are listed beside the
// repository's, marked with the engine, and every page and action
// goes through that engine.
func TestRemoteEngine(t *testing.T) {
	svc := newService(t)
	st, err := svc.Status(repo, "r1")
	if err != nil {
		t.Fatal(err)
	}
	st.State.RunID = "t1"
	st.Liveness = record.Liveness{State: record.LiveStuck, Hook: keytest.K("ship_it"), Reason: "waiting on a human", Holder: &runlock.Holder{PID: 1}}
	eng := &fakeEngine{st: st}
	s, l := newServer(t, func(c *Config) { c.Engines = []ops.Engine{eng} })
	wantStatus(t, get(s, "/"), http.StatusOK, `href="/runs/1/t1"`, `<span class="engine">on temporal</span>`, `href="/runs/0/r1"`)
	w := get(s, "/runs/1/t1")
	wantStatus(t, w, http.StatusOK, "Ship it?", `name="in.ticket"`, `action="/runs/1/t1/approve/ship_it"`, `data-action="cancel"`,
		"keeps its history on its server")
	wantStatus(t, post(s, "/runs/1/t1/approve/ship_it", url.Values{"in.ticket": {"T-9"}}), http.StatusSeeOther)
	wantStatus(t, post(s, "/runs/1/t1/control/pause", nil), http.StatusSeeOther)
	wantStatus(t, post(s, "/runs/1/t1/cancel", nil), http.StatusSeeOther)
	wantStatus(t, get(s, "/runs/1/t1/logs/build"), http.StatusOK, "tail of build")
	wantStatus(t, get(s, "/api/runs/1/t1"), http.StatusOK, `"run_id":"t1"`)
	wantStatus(t, get(s, "/runs/1/nope"), http.StatusBadRequest)
	eng.mu.Lock()
	got := strings.Join(eng.asked, "\n")
	eng.mu.Unlock()
	for _, want := range []string{"decide t1 ship_it map[ticket:T-9] by local", "control t1 pause", "cancel t1", "logs build"} {
		if !strings.Contains(got, want) {
			t.Errorf("the engine was not asked %q; it was asked:\n%s", want, got)
		}
	}
	if len(l.got()) != 0 {
		t.Errorf("launched %q", l.got())
	}
	// A run no runner holds is resumed with the engine's flag.
	eng.st.Liveness = record.Liveness{State: record.LiveStopped}
	wantStatus(t, post(s, "/runs/1/t1/resume", nil), http.StatusSeeOther)
	if got := l.got(); len(got) != 1 || !slices.Equal(got[0], []string{"resume", "t1", "--repo", repo, "--engine", "temporal"}) {
		t.Errorf("launched %q", got)
	}
}

// TestResumeOnDecision: with ResumeOnDecision, a decision on a run no
// runner holds starts a runner at once.
func TestResumeOnDecision(t *testing.T) {
	s, l := newServer(t, func(c *Config) { c.ResumeOnDecision = true })
	w := post(s, "/runs/0/r1/approve/ship_it", url.Values{"in.ticket": {"OPS-12"}})
	wantStatus(t, w, http.StatusSeeOther)
	if loc := w.Header().Get("Location"); loc != "/runs/0/r1?done=resumed" {
		t.Errorf("Location %q", loc)
	}
	if got := l.got(); len(got) != 1 || !slices.Equal(got[0], []string{"resume", "r1", "--repo", repo, "--engine", "local", "--by", "local"}) {
		t.Errorf("launched %q", got)
	}
}

func TestStreamLimits(t *testing.T) {
	s, _ := newServer(t, func(c *Config) {
		c.Loopback = false
		c.Tokens = []Token{{Name: "alice", Secret: "alice-secret-0123456789"}, {Name: "bob", Secret: "bob-secret-0123456789"}}
		c.ClientStreams, c.Streams = 2, 3
	})
	srv := httptest.NewServer(s)
	defer srv.Close()
	open := func(who string) (*http.Response, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/live", nil)
		req.Header.Set("Authorization", "Bearer "+who+"-secret-0123456789")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return resp, func() { cancel(); resp.Body.Close() }
	}
	want := func(resp *http.Response, code int, says string) {
		t.Helper()
		if resp.StatusCode != code {
			t.Fatalf("status %d, want %d", resp.StatusCode, code)
		}
		if code == http.StatusTooManyRequests {
			b, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(b), says) || resp.Header.Get("Retry-After") == "" {
				t.Errorf("429 says %q (Retry-After %q), want %q", b, resp.Header.Get("Retry-After"), says)
			}
		}
	}
	a1, close1 := open("alice")
	defer close1()
	want(a1, http.StatusOK, "")
	a2, close2 := open("alice")
	defer close2()
	want(a2, http.StatusOK, "")
	a3, close3 := open("alice")
	want(a3, http.StatusTooManyRequests, "alice has 2 live streams open, the most one client may (flow serve --client-streams)")
	close3()
	b1, closeB1 := open("bob")
	defer closeB1()
	want(b1, http.StatusOK, "")
	b2, closeB2 := open("bob")
	want(b2, http.StatusTooManyRequests, "this server has 3 live streams open, the most it serves (flow serve --streams)")
	closeB2()
	// A closed stream is given back: alice may open one again once the
	// server has seen the first go.
	close1()
	for {
		resp, closeIt := open("alice")
		if resp.StatusCode == http.StatusOK {
			closeIt()
			break
		}
		want(resp, http.StatusTooManyRequests, "alice has 2")
		closeIt()
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTakeover(t *testing.T) {
	s, l := newServer(t)
	// A run whose runner holds the lock, its process alive, beating.
	s.svc.Alive = func(runlock.Holder) bool { return true }
	dir := record.RunDir(repo, "r1")
	afero.WriteFile(s.svc.FS, filepath.Join(dir, record.LockFile), []byte(`{"pid":99,"host":"test","token":"t"}`), 0o644)
	st, err := s.svc.Status(repo, "r1")
	if err != nil {
		t.Fatal(err)
	}
	st.State.Runner = &core.RunnerInfo{PID: 99, Host: "test", HeartbeatAt: &core.Time{Time: s.now()}}
	if err := record.WriteSnapshot(s.svc.FS, dir, st.State); err != nil {
		t.Fatal(err)
	}
	w := get(s, "/runs/0/r1")
	wantStatus(t, w, http.StatusOK)
	if strings.Contains(w.Body.String(), `data-action="takeover"`) {
		t.Error("a beating runner's run offers Take over")
	}
	wantStatus(t, post(s, "/runs/0/r1/takeover", nil), http.StatusConflict, "no frozen runner")
	// Not heard from for a minute: frozen. Take over is offered first,
	// and starts flow resume --takeover.
	s.svc.Clock.(*clock.Fake).Advance(time.Minute)
	w = get(s, "/runs/0/r1")
	wantStatus(t, w, http.StatusOK, `data-action="takeover"`)
	body := w.Body.String()
	if i, j := strings.Index(body, `data-action="takeover"`), strings.Index(body, `data-action="cancel"`); i < 0 || j < 0 || i > j || strings.Contains(body, `data-action="control/pause"`) {
		t.Errorf("a frozen runner's run does not offer Take over first, then Cancel, and nothing else (takeover at %d, cancel at %d)", i, j)
	}
	wantStatus(t, get(s, "/"), http.StatusOK, "Take over (on the run&#39;s page)")
	wantStatus(t, post(s, "/runs/0/r1/takeover", nil), http.StatusSeeOther)
	want := [][]string{{"resume", "r1", "--repo", repo, "--engine", "local", "--by", "local", "--takeover"}}
	if got := l.got(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("launched %q, want %q", got, want)
	}
	// A runner on another host is not this server's to take over.
	afero.WriteFile(s.svc.FS, filepath.Join(dir, record.LockFile), []byte(`{"pid":99,"host":"elsewhere","token":"t"}`), 0o644)
	wantStatus(t, post(s, "/runs/0/r1/takeover", nil), http.StatusConflict, "no frozen runner")
}
