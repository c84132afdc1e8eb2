package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests drive Mission Control (flow serve) in Debian's
// headless Chromium, as people would: they read the runs, a run's
// question, graph, timeline and logs, approve (with and without a live
// runner), follow a log, pause, cancel, retry, resume a dead run, start
// runs from the page, script the JSON API and sign two browsers in with
// one login link. Every page is shot at 1400 and 400 px wide, into
// $FLOW_SCREENSHOTS when set (CI keeps them; docs/ has the best), else
// into the test's temporary directory.
//
// They skip when no Chromium is installed, unless FLOW_REQUIRE_BROWSER=1
// (set by .ci/run), when a missing browser fails them. They wait on
// what the pages show, without deadlines of their own: the test
// binary's -timeout bounds them.

const browserWorkflow = `name: release
vars:
  version: "1.2"
steps:
  - id: build
    run: echo built
  - id: approve
    description: The release manager signs the release off.
    human:
      message: "Ship {{ vars.version }} to production? (run {{ run.id }})"
      inputs: [{name: ticket, required: true}]
  - id: deploy
    run: 'for i in 1 2 3 4 5 6 7 8; do echo "deploy {{ steps.approve.input.ticket }} line $i"; sleep 0.4; done'
  - id: regions
    for_each: ["eu", "us"]
    steps:
      - id: push
        run: echo push
`

const failingWorkflow = `name: flaky
steps:
  - id: check
    run: test -f fixed
    max_attempts: 1
  - id: after
    run: echo after
`

// slowWorkflow's step prints 150 lines at once, then a line every
// quarter of a second for half a minute.
const slowWorkflow = `name: slow
steps:
  - id: work
    run: 'i=0; while [ $i -lt 150 ]; do echo "warm-up line $i"; i=$((i+1)); done; for i in $(seq 1 120); do echo "tick $i"; sleep 0.25; done'
`

// loopWorkflow loops over five items, each a body of two steps, and
// its review sends the run back once.
const loopWorkflow = `name: loop
steps:
  - id: prepare
    run: echo prepare
  - id: items
    needs: [prepare]
    for_each: ["a", "b", "c", "d", "e"]
    steps:
      - id: build
        run: sleep 0.3; echo build
      - id: test
        needs: [build]
        run: echo test
  - id: review
    needs: [items]
    run: 'test -f reviewed || { touch reviewed; exit 1; }'
    max_attempts: 1
    loop_back_to: prepare
  - id: ship
    needs: [review, prepare]
    run: echo ship
`

// greetWorkflow has vars for the start form; attempts must be a number.
const greetWorkflow = `name: greet
vars:
  greeting: hello
  attempts: "1"
steps:
  - id: hello
    run: echo "{{ vars.greeting }} from the start page"
    max_attempts: vars.attempts
`

// retryWorkflow's step fails its first attempt after two seconds and
// prints slowly in its second.
const retryWorkflow = `name: retry
steps:
  - id: flaky
    run: 'if [ "$FLOW_ATTEMPT" = 1 ]; then echo first attempt; sleep 2; exit 1; fi; for i in 1 2 3; do echo second attempt $i; sleep 0.5; done'
    max_attempts: 2
`

// flowBinary makes the test binary callable as flow (testscript.Main
// runs main when it is invoked under that name) in a directory that it
// returns, for PATH.
func flowBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "flow")); err != nil {
		t.Fatal(err)
	}
	return bin
}

// chromium finds the browser, or skips (fails with
// FLOW_REQUIRE_BROWSER=1).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("FLOW_REQUIRE_BROWSER") == "1" {
		t.Fatal("no Chromium installed (Debian: apt-get install chromium), and FLOW_REQUIRE_BROWSER=1")
	}
	t.Skip("no Chromium installed (Debian: apt-get install chromium); the browser test of flow serve is skipped")
	return ""
}

// mission is a repository, the flow command line over it, a flow serve
// of it and a browser.
type mission struct {
	t     *testing.T
	bin   string
	repo  string
	env   []string
	base  string
	lines *bufio.Reader
	ctx   context.Context
	shots string
}

// newMission makes a repository with the workflows given (by path in
// it) and a browser, without a server yet.
func newMission(t *testing.T, files map[string]string) *mission {
	t.Helper()
	browser := chromium(t)
	m := &mission{t: t, bin: flowBinary(t), repo: t.TempDir()}
	m.env = append(os.Environ(), "PATH="+m.bin+string(os.PathListSeparator)+os.Getenv("PATH"), "FLOW_USER=", "FLOW_TEMPORAL_ADDRESS=")
	for name, src := range files {
		path := filepath.Join(m.repo, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m.shots = os.Getenv("FLOW_SCREENSHOTS")
	if m.shots == "" {
		m.shots = t.TempDir()
	} else if err := os.MkdirAll(m.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	m.ctx = m.browser(browser)
	return m
}

// browser starts a Chromium of its own (its own profile: another
// person's browser) and returns its context.
func (m *mission) browser(path string) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true), chromedp.WindowSize(1400, 1000))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	m.t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	m.t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 1000)); err != nil {
		m.t.Fatalf("start the browser: %v", err)
	}
	return ctx
}

// flow returns the command flow args in the repository.
func (m *mission) flow(args ...string) *exec.Cmd {
	c := exec.Command(filepath.Join(m.bin, "flow"), args...)
	c.Dir, c.Env = m.repo, m.env
	return c
}

// start starts a flow command that runs on, and stops it when the test
// ends.
func (m *mission) start(args ...string) *exec.Cmd {
	m.t.Helper()
	c := m.flow(args...)
	c.Stdout, c.Stderr = io.Discard, io.Discard
	if err := c.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c
}

// serve starts flow serve with args on a free loopback port and reads
// the address it prints.
func (m *mission) serve(args ...string) {
	m.t.Helper()
	srv := m.flow(append([]string{"serve", "--addr", "127.0.0.1:0", "--repo", m.repo}, args...)...)
	out, err := srv.StdoutPipe()
	if err != nil {
		m.t.Fatal(err)
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	m.lines = bufio.NewReader(out)
	m.base = strings.TrimPrefix(m.line(), "flow serve: ")
}

// line reads the next line flow serve printed.
func (m *mission) line() string {
	m.t.Helper()
	l, err := m.lines.ReadString('\n')
	if err != nil {
		m.t.Fatalf("flow serve printed no more: %v", err)
	}
	return strings.TrimSpace(l)
}

func (m *mission) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	m.t.Helper()
	if err := chromedp.Do(m.ctx, actions...); err != nil {
		m.t.Fatalf("%s: %v", what, err)
	}
}

// text waits for the first element sel matches and returns its text.
// It finds and reads the element in one evaluation: a live update may
// replace a part of the page at any moment, and a node found in one
// call and read in the next may be gone by then.
func (m *mission) text(sel string) string {
	m.t.Helper()
	q, err := json.Marshal(sel)
	if err != nil {
		m.t.Fatal(err)
	}
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e ? JSON.stringify(e.innerText) : ""; })()`, q)
	for {
		s, err := chromedp.Run(m.ctx, chromedp.Evaluate[string](js))
		if err != nil && !navigating(err) {
			m.t.Fatalf("text of %s: %v", sel, err)
		}
		if s != "" {
			var text string
			if err := json.Unmarshal([]byte(s), &text); err != nil {
				m.t.Fatalf("text of %s: %v", sel, err)
			}
			return text
		}
		select {
		case <-m.t.Context().Done():
			m.t.Fatalf("waiting for %s", sel)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// click clicks the first element sel matches, as a person would (the
// mouse, at its place). Finding it takes calls of its own, and a live
// update may replace the part of the page it is in between them: then
// it finds the element again. The click itself is not repeated: it is
// sent once the element's place is known.
func click(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for {
			v, err := chromedp.Click(chromedp.CSS(sel))(ctx, t)
			if err == nil || !replaced(err) {
				return v, err
			}
			select {
			case <-ctx.Done():
				return v, err
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// replaced reports whether err says a node found was no longer in the
// page when it was used.
func replaced(err error) bool {
	s := err.Error()
	return strings.Contains(s, "No node with given id") || strings.Contains(s, "Could not find node with given id") ||
		strings.Contains(s, "Could not compute box model") || strings.Contains(s, "Node is detached")
}

// navigating reports whether err says the page was being replaced by
// another (a form's answer loading) while the browser was asked.
func navigating(err error) bool {
	s := err.Error()
	return strings.Contains(s, "navigated") || strings.Contains(s, "context was destroyed") || strings.Contains(s, "Cannot find context")
}

func (m *mission) eval(js string) string {
	m.t.Helper()
	s, err := chromedp.Run(m.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		m.t.Fatalf("evaluate %s: %v", js, err)
	}
	return s
}

// poll waits until js is true in the page.
func (m *mission) poll(what, js string) {
	m.t.Helper()
	for {
		_, err := chromedp.Run(m.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(0), chromedp.WithPollingInterval(100*time.Millisecond)))
		if err == nil {
			return
		}
		if navigating(err) {
			// A form's answer is loading: wait on the page it brings.
			continue
		}
		page, _ := chromedp.Run(m.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		m.t.Fatalf("waiting for %s: %v\npage: %s", what, err, page)
	}
}

// shot saves the page at 1400 and at 400 px wide.
func (m *mission) shot(name string) {
	m.t.Helper()
	for _, w := range []int64{1400, 400} {
		m.do("resize the viewport", chromedp.EmulateViewport(w, 900))
		b, err := chromedp.Run(m.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			m.t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(m.shots, fmt.Sprintf("%s-%d.png", name, w)), b, 0o644); err != nil {
			m.t.Fatal(err)
		}
	}
	m.do("restore the viewport", chromedp.EmulateViewport(1400, 1000))
}

// marked marks the page, to tell later whether it was reloaded.
func (m *mission) mark() { m.eval(`(window.flowMarker = "kept", "")`) }

// kept reports whether the page marked is still the one shown.
func (m *mission) kept() bool { return m.eval(`String(window.flowMarker)`) == "kept" }

// waitFile waits until cond holds of the file at path (in the
// repository).
func (m *mission) waitFile(what, path string, cond func([]byte) bool) {
	m.t.Helper()
	for {
		if b, err := os.ReadFile(filepath.Join(m.repo, path)); err == nil && cond(b) {
			return
		}
		select {
		case <-m.t.Context().Done():
			m.t.Fatalf("waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitStatus waits until a run's record says it has status.
func (m *mission) waitStatus(id, status string) {
	m.t.Helper()
	for runStatus(m.t, m.repo, id) != status {
		select {
		case <-m.t.Context().Done():
			m.t.Fatalf("waiting for run %s to be %s", id, status)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestBrowserMissionControl(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts Chromium")
	}
	m := newMission(t, map[string]string{"workflows/release.yaml": browserWorkflow, "workflows/flaky.yaml": failingWorkflow,
		"workflows/slow.yaml": slowWorkflow, "workflows/loop.yaml": loopWorkflow, "workflows/greet.yaml": greetWorkflow,
		"retry.yaml": retryWorkflow})
	// r1 and r2 wait on a human with their runners alive; r5 waits with
	// none (--no-wait); r3 fails; d1's runner is killed mid-session.
	m.start("run", "workflows/release.yaml", "--run-id", "r1")
	m.start("run", "workflows/release.yaml", "--run-id", "r2")
	if out, err := m.flow("run", "workflows/release.yaml", "--run-id", "r5", "--no-wait").CombinedOutput(); err == nil {
		t.Fatalf("r5 should stop at its human step:\n%s", out)
	}
	if out, err := m.flow("run", "workflows/flaky.yaml", "--run-id", "r3").CombinedOutput(); err == nil {
		t.Fatalf("r3 should fail:\n%s", out)
	}
	d1 := m.start("run", "workflows/slow.yaml", "--run-id", "d1")
	m.waitFile("d1's session to print", ".agents/runs/d1/logs/work.0.1.log", func(b []byte) bool { return len(b) > 0 })
	if err := d1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d1.Wait()
	m.waitStatus("r1", "waiting_on_human")
	m.waitStatus("r2", "waiting_on_human")
	m.serve()
	tokenLine := m.line()
	apiToken := tokenLine[strings.LastIndex(tokenLine, " ")+1:]

	// The runs: the failed run's step and reason, the dead run's badge,
	// the count of runs waiting for a decision.
	m.do("open the runs", chromedp.Navigate(m.base), chromedp.WaitVisible(chromedp.CSS("table.runs")))
	// The list is read in one evaluation: a live update may replace it
	// at any moment (d1 turning dead, the durations growing), and a
	// node read across a replacement reads empty.
	var list struct{ Note, Badge, Waiting string }
	if err := json.Unmarshal([]byte(m.eval(`(() => {
		const text = sel => { const e = document.querySelector(sel); return e ? e.textContent.trim() : ""; };
		return JSON.stringify({Note: text('tr[data-run="r3"] td.note'), Badge: text('tr[data-run="d1"] .badge'), Waiting: text('#waiting-count')});
	})()`)), &list); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(list.Note, "check:") {
		t.Errorf("the failed run's row says %q, want its failed step", list.Note)
	}
	if list.Badge != "dead" {
		t.Errorf("the dead run's badge says %q", list.Badge)
	}
	if list.Waiting != "3" {
		t.Errorf("%s runs waiting for you, want 3 (r1, r2, r5)", list.Waiting)
	}
	m.shot("runs")

	// A run started with the list open appears on it, without a reload.
	m.mark()
	m.start("run", "workflows/loop.yaml", "--run-id", "l1")
	m.poll("the new run l1 on the list", `!!document.querySelector('tr[data-run="l1"]')`)
	if !m.kept() {
		t.Error("the list reloaded instead of updating live")
	}

	// The loop's page: its graph is drawn with the body's edge and the
	// loop-back, no edge crosses a box, and the loop's count follows the
	// run live.
	m.do("open l1", chromedp.Navigate(m.base+"runs/0/l1"), chromedp.WaitVisible(chromedp.CSS("svg.graph")))
	m.mark()
	m.poll("the loop's graph box to count all five items", `(document.querySelector('svg.graph g[data-key="items"] .state') || {}).textContent === "COMPLETED · 5/5"`)
	m.poll("l1 to complete", `document.getElementById("run-status").textContent.trim() === "completed"`)
	if !m.kept() {
		t.Error("l1's page reloaded instead of updating live")
	}
	var crossing struct {
		Edges  []string `json:"edges"`
		Across []string `json:"across"`
	}
	if err := json.Unmarshal([]byte(m.eval(edgesAcrossBoxes)), &crossing); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"build, then test", "review loops back to prepare", "prepare, then ship"} {
		if !strings.Contains(strings.Join(crossing.Edges, "\n"), want) {
			t.Errorf("the graph has no edge %q: %q", want, crossing.Edges)
		}
	}
	if len(crossing.Across) > 0 {
		t.Errorf("edges cross boxes: %q", crossing.Across)
	}
	if n := m.eval(`String(document.querySelectorAll('svg.gantt path.loopback').length)`); n != "1" {
		t.Errorf("the timeline draws %s loop-backs, want 1", n)
	}
	m.shot("loop")

	// r1: the question above the form; approving it, the page follows
	// the run to its end live, the timeline's bar of the running deploy
	// growing.
	m.do("open r1", chromedp.Navigate(m.base+"runs/0/r1"), chromedp.WaitVisible(chromedp.CSS("section.decide")))
	if q := m.text(`blockquote.question`); q != "Ship 1.2 to production? (run r1)" {
		t.Errorf("the question reads %q", q)
	}
	if d := m.text(`section.decide .description`); !strings.Contains(d, "signs the release off") {
		t.Errorf("the step's description reads %q", d)
	}
	m.shot("waiting")
	m.do("approve r1", chromedp.SendKeys(chromedp.CSS(`input[name="in.ticket"]`), "OPS-7"),
		click(`section.decide form.approve button`), chromedp.WaitVisible(chromedp.CSS(`p.notice`)))
	m.mark()
	m.poll("deploy's bar on the timeline", `!!document.querySelector('svg.gantt rect.open[data-key="deploy"]')`)
	w0 := m.eval(`document.querySelector('svg.gantt rect.open[data-key="deploy"]').getAttribute("width")`)
	m.poll("deploy's bar to grow", fmt.Sprintf(`(() => { const r = document.querySelector('svg.gantt rect[data-key="deploy"]'); return !!r && (r.classList.contains("open") ? parseFloat(r.getAttribute("width")) > %s : true); })()`, w0))
	m.poll("the run to complete without a reload", `document.getElementById("run-status").textContent.trim() === "completed"`)
	if !m.kept() {
		t.Error("the page reloaded instead of updating live")
	}
	// The loop's instances, unknown when the page was made, were added
	// after its row as they appeared, linked to their logs.
	m.poll("the loop's instances to show", `(() => { const b = document.querySelector('tr[data-key="regions[1].push"] [data-col="status"]'); return !!b && b.textContent.trim() === "COMPLETED"; })()`)
	if got := m.eval(`Array.from(document.querySelectorAll("#steps tbody tr")).map(r => r.dataset.key).join(" ")`); got != "build approve deploy regions regions[0].push regions[1].push" {
		t.Errorf("rows %q after the loop ran", got)
	}
	if got := m.eval(`(document.querySelector('tr[data-key="regions[0].push"] a') || {}).href || ""`); !strings.HasSuffix(got, "/runs/0/r1/logs/regions%5B0%5D.push") {
		t.Errorf("the added instance links %q", got)
	}
	if m.eval(`String(!document.querySelector("section.decide"))`) != "true" {
		t.Error("the question still shows after the step was decided")
	}
	if s := m.text(`tr[data-key="approve"] [data-col="verdict"]`); !regexp.MustCompile(`^Approved by local at .+Z with ticket=OPS-7$`).MatchString(s) {
		t.Errorf("the decision reads %q", s)
	}
	if a := m.eval(`Array.from(document.querySelectorAll("#part-actions button")).map(b => b.textContent).join(",")`); a != "" {
		t.Errorf("a completed run offers actions: %s", a)
	}
	m.shot("run")

	// r5, which no runner holds: the decision is recorded and the page
	// offers Resume in its place; resumed, the run completes live.
	m.do("open r5", chromedp.Navigate(m.base+"runs/0/r5"), chromedp.WaitVisible(chromedp.CSS("section.decide")))
	m.do("approve r5", chromedp.SendKeys(chromedp.CSS(`input[name="in.ticket"]`), "OPS-9"),
		click(`section.decide form.approve button`), chromedp.WaitVisible(chromedp.CSS(`p.notice`)))
	if s := m.text("p.notice"); !strings.Contains(s, "No runner holds this run") {
		t.Errorf("after approving r5 the page says %q", s)
	}
	if s := m.text("section.decide p.decided"); !strings.Contains(s, "with ticket=OPS-9") || !strings.Contains(s, "goes on once resumed") {
		t.Errorf("the decision on r5 reads %q", s)
	}
	if m.eval(`String(!!document.querySelector('section.decide input[name="in.ticket"]'))`) != "false" {
		t.Error("the approval form still shows after the decision")
	}
	m.shot("decided")
	m.do("resume r5", click(`section.decide button[data-action="resume"]`))
	m.poll("Resume's answer", `location.search === "?done=resume" && document.readyState === "complete"`)
	m.mark()
	m.poll("r5 to complete", `document.getElementById("run-status").textContent.trim() === "completed"`)
	if !m.kept() {
		t.Error("r5's page reloaded instead of updating live")
	}

	// A long step's log opens at its end and follows it; scrolled up,
	// it stops following.
	m.start("run", "workflows/slow.yaml", "--run-id", "s1")
	m.waitFile("s1's warm-up", ".agents/runs/s1/logs/work.0.1.log", func(b []byte) bool { return strings.Contains(string(b), "tick 1\n") })
	m.do("open s1's log", chromedp.Navigate(m.base+"runs/0/s1/logs/work"), chromedp.WaitVisible(chromedp.CSS("pre#log")))
	if s := m.text("#log-state"); s != "live" {
		t.Errorf("the log's state is %q, want live", s)
	}
	atEnd := `(() => { const l = document.getElementById("log"); return l.scrollHeight > l.clientHeight + 100 && l.scrollTop + l.clientHeight >= l.scrollHeight - 8; })()`
	m.poll("the log to open at its end", atEnd)
	n := m.eval(`String(document.getElementById("log").textContent.length)`)
	m.poll("the log to grow and stay at its end", fmt.Sprintf(`document.getElementById("log").textContent.length > %s && %s`, n, atEnd))
	if m.eval(`String(document.getElementById("follow").checked)`) != "true" {
		t.Error("the follow box is not ticked while the log follows")
	}
	m.shot("log")
	m.eval(`(() => { const l = document.getElementById("log"); l.scrollTop = 0; l.dispatchEvent(new Event("scroll")); return ""; })()`)
	m.poll("the follow box to untick", `!document.getElementById("follow").checked`)
	n = m.eval(`String(document.getElementById("log").textContent.length)`)
	m.poll("the log to grow", fmt.Sprintf(`document.getElementById("log").textContent.length > %s`, n))
	if top := m.eval(`String(document.getElementById("log").scrollTop)`); top != "0" {
		t.Errorf("the log scrolled to %s after the reader scrolled up", top)
	}

	// Cancel stops s1 through its engine: it ends interrupted, and the
	// log's page says the session ended.
	m.do("cancel s1", chromedp.Navigate(m.base+"runs/0/s1"), chromedp.WaitVisible(chromedp.CSS(`button[data-action="cancel"]`)),
		click(`button[data-action="cancel"]`), chromedp.WaitVisible(chromedp.CSS("p.notice")))
	m.poll("s1 to be interrupted", `document.getElementById("run-status").textContent.trim() === "interrupted"`)
	m.waitStatus("s1", "interrupted")

	// The dead run: its own badge, and Resume first among its actions.
	m.do("open d1", chromedp.Navigate(m.base+"runs/0/d1"), chromedp.WaitVisible(chromedp.CSS("#steps")))
	if s := m.text("#run-status"); s != "dead" {
		t.Errorf("d1's badge says %q", s)
	}
	if s := m.text(`#part-actions button.primary`); s != "Resume" {
		t.Errorf("d1's first action is %q, want Resume", s)
	}
	if s := m.eval(`document.querySelector('tr[data-key="work"]').className`); s != "s-dead" {
		t.Errorf("d1's running step's row is %q, want s-dead", s)
	}
	m.shot("dead")

	// Pause r2 from its page: control.json changes, and the page offers
	// Continue instead.
	if out, err := m.flow("approve", "r2", "approve", "--input", "ticket=OPS-8").CombinedOutput(); err != nil {
		t.Fatalf("approve r2: %v\n%s", err, out)
	}
	m.do("pause r2", chromedp.Navigate(m.base+"runs/0/r2"), chromedp.WaitVisible(chromedp.CSS(`button[data-action="control/pause"]`)),
		click(`button[data-action="control/pause"]`), chromedp.WaitVisible(chromedp.CSS("p.notice")))
	var control struct {
		Desired string `json:"desired_state"`
	}
	b, err := os.ReadFile(filepath.Join(m.repo, ".agents/runs/r2/control.json"))
	if err != nil || json.Unmarshal(b, &control) != nil || control.Desired != "pause" {
		t.Errorf("control.json after pause: %s (%v)", b, err)
	}
	m.poll("Continue to be offered", `!!document.querySelector('button[data-action="control/continue"]')`)

	// Retry r3 from its page once its cause is fixed: it completes.
	if err := os.WriteFile(filepath.Join(m.repo, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m.do("retry r3", chromedp.Navigate(m.base+"runs/0/r3"), chromedp.WaitVisible(chromedp.CSS("#steps")),
		click(`button[data-action="retry"]`), chromedp.WaitVisible(chromedp.CSS("p.notice")))
	m.poll("r3 to complete", `document.getElementById("run-status").textContent.trim() === "completed"`)
	m.waitStatus("r3", "completed")

	// A hidden tab closes its stream and, shown again, opens a new one
	// from the last event it had.
	opened := m.eval(`(() => {
		const Real = window.EventSource, urls = [];
		window.EventSource = function (u) { urls.push(u); return new Real(u); };
		let state = "visible";
		Object.defineProperty(document, "visibilityState", {configurable: true, get: () => state});
		state = "hidden"; document.dispatchEvent(new Event("visibilitychange"));
		const whileHidden = urls.length;
		state = "visible"; document.dispatchEvent(new Event("visibilitychange"));
		return whileHidden + " " + urls.join(" ");
	})()`)
	if !regexp.MustCompile(`^0 /runs/0/r3/events\?after=[1-9][0-9]*$`).MatchString(opened) {
		t.Errorf("hiding and showing r3's page opened %q; want no stream while hidden, then one from the last event", opened)
	}

	// A step's log page follows it into its next session: r4's step
	// fails its first attempt, and the page shows the second's log
	// without a reload by hand; then its picker has both.
	m.start("run", "retry.yaml", "--run-id", "r4")
	m.waitFile("r4's first attempt to print", ".agents/runs/r4/logs/flaky.0.1.log", func(b []byte) bool { return len(b) > 0 })
	m.do("open r4's log", chromedp.Navigate(m.base+"runs/0/r4/logs/flaky"), chromedp.WaitVisible(chromedp.CSS("pre#log")))
	if first := m.text("pre#log"); !strings.Contains(first, "first attempt") {
		t.Errorf("r4's log page shows %q, want the first attempt's log", first)
	}
	m.poll("the page to show the second attempt's log", `(document.querySelector("pre#log") || {}).textContent.includes("second attempt 3")`)
	m.poll("the session to end", `document.getElementById("log-state").textContent === "ended"`)
	m.do("reload r4's log", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("nav.sessions")))
	if s := m.text("nav.sessions"); !strings.Contains(s, "iteration 0, attempt 1") || !strings.Contains(s, "iteration 0, attempt 2") {
		t.Errorf("the picker offers %q", s)
	}
	m.do("pick the first attempt", click(`nav.sessions a`), chromedp.WaitVisible(chromedp.CSS("pre#log")))
	if s := m.text("pre#log"); !strings.Contains(s, "first attempt") || strings.Contains(s, "second") {
		t.Errorf("the first attempt's log shows %q", s)
	}
	if s := m.text("#log-state-text"); !strings.Contains(s, "exit 1") {
		t.Errorf("the first attempt's state reads %q, want its exit code", s)
	}

	// Start a run from the page: a bad var is refused before anything
	// starts, with the place in the workflow it breaks; a good one starts
	// the run, whose page opens and follows it.
	m.do("open the start page", chromedp.Navigate(m.base+"start"), chromedp.WaitVisible(chromedp.CSS("table.workflows")))
	m.do("pick greet", click(`a[href$="workflow=workflows%2Fgreet.yaml"]`), chromedp.WaitVisible(chromedp.CSS("form.start-form")))
	m.do("start with a bad var", chromedp.SetValue(chromedp.CSS(`input[name="var.attempts"]`), "zero"),
		click(`form.start-form button`), chromedp.WaitVisible(chromedp.CSS(".field-error")))
	if s := m.text(`.field-error[data-var="attempts"]`); !strings.Contains(s, "greet.yaml:8:") || !strings.Contains(s, "not a number") {
		t.Errorf("the bad var's error reads %q", s)
	}
	if s := m.text(".field-error pre.source"); !strings.Contains(s, "max_attempts: vars.attempts") || !strings.Contains(s, "^") {
		t.Errorf("the error's place reads %q", s)
	}
	// A run is a directory there; hidden names (the runs index) are not
	// runs.
	entries, _ := os.ReadDir(filepath.Join(m.repo, ".agents/runs"))
	entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), ".") })
	if len(entries) != 8 {
		t.Errorf("%d runs after a refused start, want 8: a run started", len(entries))
	}
	m.shot("start")
	m.do("start with a good var", chromedp.SetValue(chromedp.CSS(`input[name="var.attempts"]`), "2"),
		chromedp.SetValue(chromedp.CSS(`input[name="var.greeting"]`), "bonjour"),
		click(`form.start-form button`), chromedp.WaitVisible(chromedp.CSS("#steps")))
	m.poll("the started run to complete", `document.getElementById("run-status").textContent.trim() === "completed"`)
	started := m.eval(`location.pathname`)
	m.do("open its log", chromedp.Navigate(m.base+strings.TrimPrefix(started, "/")+"/logs/hello"), chromedp.WaitVisible(chromedp.CSS("pre#log")))
	if s := m.text("pre#log"); !strings.Contains(s, "bonjour from the start page") {
		t.Errorf("the started run printed %q", s)
	}

	// The JSON API: reads as flow --json does; a change needs the API
	// token as a Bearer header, never a browser's cookie.
	api := func(method, path, token, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, m.base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Origin", strings.TrimSuffix(m.base, "/"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	if code, v := api("GET", "api/runs/0/r1", "", ""); code != 200 || v["status"] != "completed" {
		t.Errorf("GET /api/runs/0/r1: %d %v", code, v["status"])
	}
	if code, _ := api("POST", "api/runs/0/r2/control/continue", "", `{}`); code != http.StatusUnauthorized {
		t.Errorf("a change without a token: %d, want 401", code)
	}
	if code, v := api("POST", "api/runs/0/r2/control/continue", apiToken, `{"note": "from a script"}`); code != 200 || v["desired_state"] != "continuous" || v["by"] != "api" {
		t.Errorf("a change with the API token: %d %v", code, v)
	}
	if code, v := api("GET", "api/runs/0/r4/logs/flaky", "", ""); code != 200 || !strings.Contains(fmt.Sprint(v["text"]), "second attempt 3") {
		t.Errorf("GET the logs of r4: %d %v", code, v)
	}
}

// edgesAcrossBoxes lists the graph's edges by title, and the places
// where one passes through a step's box (not the box of a loop, which
// holds its body's edges).
const edgesAcrossBoxes = `(() => {
	const svg = document.querySelector("svg.graph");
	const boxes = Array.from(svg.querySelectorAll("g.node:not(.loop) > rect")).map(r => r.getBBox());
	const edges = [], across = [];
	svg.querySelectorAll("path.edge").forEach(p => {
		const title = p.querySelector("title").textContent;
		edges.push(title);
		const n = p.getTotalLength();
		for (let l = 2; l < n - 2; l += 2) {
			const pt = p.getPointAtLength(l);
			const hit = boxes.find(b => pt.x > b.x + 1 && pt.x < b.x + b.width - 1 && pt.y > b.y + 1 && pt.y < b.y + b.height - 1);
			if (hit) { across.push(title + " at " + Math.round(pt.x) + "," + Math.round(pt.y)); return; }
		}
	});
	return JSON.stringify({edges, across});
})()`

// TestBrowserReadOnlyAndTokens: --read-only shows no actions and refuses
// them; a server off loopback shows nothing without a token, says how
// to log in, and its login link signs in a second browser too.
func TestBrowserReadOnlyAndTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts Chromium")
	}
	m := newMission(t, map[string]string{"flaky.yaml": failingWorkflow})
	_ = m.flow("run", "flaky.yaml", "--run-id", "r1").Run()
	body := func(ctx context.Context, url string) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	m.serve("--read-only")
	page := body(m.ctx, m.base+"runs/0/r1")
	if !strings.Contains(page, "r1") || strings.Contains(page, "Retry") {
		t.Errorf("a read-only run page shows actions, or not the run:\n%s", page)
	}
	// Off loopback (every address of the machine), without a token: the
	// server makes one and prints a login link.
	off := newMission(t, nil)
	off.repo = m.repo
	off.serve("--addr", "0.0.0.0:0")
	link := off.line()
	code := link[strings.Index(link, "login?code=")+len("login?code="):]
	u, err := url.Parse(off.base)
	if err != nil {
		t.Fatal(err)
	}
	local := "http://127.0.0.1:" + u.Port() + "/"
	if page := body(m.ctx, local+"runs/0/r1"); strings.Contains(page, "flaky") || !strings.Contains(page, "login link") {
		t.Errorf("without a token the page shows the run, or not how to log in:\n%s", page)
	}
	m.shot("login")
	if page := body(m.ctx, local+"login?code="+code); !strings.Contains(page, "r1") {
		t.Errorf("after logging in the runs do not show:\n%s", page)
	}
	// A second browser (a phone) signs in with the same link.
	phone := off.ctx
	if page := body(phone, local+"login?code="+code); !strings.Contains(page, "r1") {
		t.Errorf("the second browser is not signed in by the login link:\n%s", page)
	}
	if page := body(m.ctx, local+"runs/0/r1"); !strings.Contains(page, "check") {
		t.Errorf("the first browser was signed out:\n%s", page)
	}
}

// runStatus reads a run's status from its record with flow's own reader
// (flow status --json would need the binary; the snapshot lags, so the
// events are read too).
func runStatus(t *testing.T, repo, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, ".agents/runs", id, "events.jsonl"))
	if err != nil {
		return ""
	}
	status := ""
	for _, l := range strings.Split(string(b), "\n") {
		var e struct {
			Type string `json:"type"`
			Data struct {
				Status string `json:"status"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(l), &e) != nil {
			continue
		}
		switch e.Type {
		case "run_waiting":
			status = "waiting_on_human"
		case "run_finished":
			status = e.Data.Status
		case "interrupted":
			status = "interrupted"
		case "step_started", "human_input", "runner_started":
			status = "running"
		}
	}
	return status
}

// TestBrowserTemporal: flow serve --temporal-address lists a Temporal
// server's runs beside the repository's, marked, and its pages act on
// them through the Temporal engine: the question of a waiting run,
// approved from the page, then the run completing live. It runs
// against a real dev server when TEMPORAL_CLI names a temporal binary
// and the test is built with -tags temporal (as flow-temporal).
func TestBrowserTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts Chromium")
	}
	cli := os.Getenv("TEMPORAL_CLI")
	if cli == "" || temporalHooks == nil {
		t.Skip("Mission Control against a real Temporal server: go test -tags temporal with TEMPORAL_CLI set to a temporal binary " +
			"(GOBIN=DIR go install github.com/temporalio/cli/cmd/temporal@v1.5.1)")
	}
	m := newMission(t, map[string]string{"release.yaml": browserWorkflow})
	// The dev server, on a free port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	dev := exec.Command(cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", port, "--log-level", "error")
	dev.Stdout, dev.Stderr = io.Discard, io.Discard
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dev.Process.Kill(); _ = dev.Wait() })
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the dev server did not start")
		case <-time.After(100 * time.Millisecond):
		}
	}
	m.env = append(m.env, "FLOW_TEMPORAL_ADDRESS="+addr, "FLOW_TEMPORAL_TASK_QUEUE=browser")
	m.start("worker", "--repo", m.repo)
	// A local run beside the Temporal one.
	if out, err := m.flow("run", "release.yaml", "--run-id", "l1", "--no-wait", "--engine", "local").CombinedOutput(); err == nil {
		t.Fatalf("l1 should stop at its human step:\n%s", out)
	}
	if out, err := m.flow("run", "release.yaml", "--run-id", "t1", "--detach").CombinedOutput(); err != nil {
		t.Fatalf("start t1 on Temporal: %v\n%s", err, out)
	}
	m.serve("--temporal-address", addr, "--temporal-task-queue", "browser")
	m.do("open the runs", chromedp.Navigate(m.base), chromedp.WaitVisible(chromedp.CSS("table.runs")))
	m.poll("t1 waiting on the list", `(() => { const r = document.querySelector('tr[data-run="t1"]'); return !!r && r.textContent.includes("waiting_on_human") && r.textContent.includes("temporal"); })()`)
	if n := m.eval(`String(document.querySelectorAll('tr[data-run="t1"]').length)`); n != "1" {
		t.Errorf("t1 is listed %s times, want once (the worker's mirror is not listed)", n)
	}
	if s := m.text(`tr[data-run="t1"] td.note`); s != "approve waits for a decision" {
		t.Errorf("t1's row says %q: its workflow waits on the server, which is its runner", s)
	}
	if !strings.Contains(m.text(`tr[data-run="l1"]`), "waiting_on_human") {
		t.Error("the local run is not listed beside the Temporal one")
	}
	m.shot("temporal-runs")
	href := m.eval(`document.querySelector('tr[data-run="t1"] a').getAttribute("href")`)
	m.do("open t1", chromedp.Navigate(m.base+strings.TrimPrefix(href, "/")), chromedp.WaitVisible(chromedp.CSS("section.decide")))
	if q := m.text(`blockquote.question`); !strings.Contains(q, "Ship") {
		t.Errorf("t1's question reads %q", q)
	}
	m.do("approve t1", chromedp.SendKeys(chromedp.CSS(`input[name="in.ticket"]`), "OPS-11"),
		click(`section.decide form.approve button`))
	m.poll("the approval's answer", `location.search === "?done=approve" && document.readyState === "complete"`)
	m.mark()
	m.poll("t1 to complete live", `document.getElementById("run-status").textContent.trim() === "completed"`)
	if !m.kept() {
		t.Error("t1's page reloaded instead of updating live")
	}
	m.shot("temporal-run")
}

// TestServeBaseURL: the links flow serve prints use --public-url, else
// the address it was asked to listen on, with the port it got.
func TestServeBaseURL(t *testing.T) {
	for _, tt := range []struct{ asked, got, public, want string }{
		{"127.0.0.1:0", "127.0.0.1:41234", "", "http://127.0.0.1:41234/"},
		{"localhost:8080", "127.0.0.1:8080", "", "http://localhost:8080/"},
		{"192.168.1.5:8080", "192.168.1.5:8080", "", "http://192.168.1.5:8080/"},
		{"0.0.0.0:8081", "0.0.0.0:8081", "", "http://vm:8081/"},
		{":8081", "[::]:8081", "", "http://vm:8081/"},
		{"0.0.0.0:8081", "0.0.0.0:8081", "https://flow.example.com", "https://flow.example.com/"},
	} {
		t.Run(tt.asked+" "+tt.public, func(t *testing.T) {
			if got := baseURL(tt.asked, tt.got, tt.public, "vm"); got != tt.want {
				t.Errorf("baseURL(%q, %q, %q) = %q, want %q", tt.asked, tt.got, tt.public, got, tt.want)
			}
		})
	}
}
