package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser test drives Mission Control (flow serve) in Debian's
// headless Chromium, as a person would: it reads runs, a run's graph and
// its waiting step, approves with an input and watches the run complete
// without reloading, watches a running step's log grow, pauses another
// run and retries a failed one from the page. Its screenshots go to
// $FLOW_SCREENSHOTS when set (the README's comes from there), else to
// the test's temporary directory.
//
// It skips when no Chromium is installed, unless FLOW_REQUIRE_BROWSER=1
// (set by .ci/run), when a missing browser fails it.

const browserWorkflow = `name: release
steps:
  - id: build
    run: echo built
  - id: approve
    human:
      message: Ship it?
      inputs: [{name: ticket, required: true}]
  - id: deploy
    run: 'for i in 1 2 3 4 5 6; do echo "deploy {{ steps.approve.input.ticket }} line $i"; sleep 0.4; done'
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

func TestBrowserMissionControl(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts Chromium")
	}
	browser := chromium(t)
	bin := flowBinary(t)
	repo := t.TempDir()
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "FLOW_USER=")
	flow := func(args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, "flow"), args...)
		c.Dir, c.Env = repo, env
		return c
	}
	for name, src := range map[string]string{"release.yaml": browserWorkflow, "flaky.yaml": failingWorkflow} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// r1 waits on a human with its runner alive; r2 waits too (to be
	// paused); r3 fails.
	var runners []*exec.Cmd
	for _, id := range []string{"r1", "r2"} {
		c := flow("run", "release.yaml", "--run-id", id)
		c.Stdout, c.Stderr = io.Discard, io.Discard
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		runners = append(runners, c)
	}
	t.Cleanup(func() {
		for _, c := range runners {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	if out, err := flow("run", "flaky.yaml", "--run-id", "r3").CombinedOutput(); err == nil {
		t.Fatalf("r3 should fail:\n%s", out)
	}
	waitFor(t, "r1 and r2 waiting on a human", func() bool {
		return runStatus(t, repo, "r1") == "waiting_on_human" && runStatus(t, repo, "r2") == "waiting_on_human"
	})

	// flow serve on a free port.
	srv := flow("serve", "--addr", "127.0.0.1:0", "--repo", repo)
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("flow serve printed no address: %v", err)
	}
	base := strings.TrimSpace(strings.TrimPrefix(line, "flow serve: "))
	go func() { _, _ = io.Copy(io.Discard, out) }()

	shots := os.Getenv("FLOW_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true), chromedp.WindowSize(1280, 1000))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	eval := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
		return s
	}
	shot := func(name string) {
		t.Helper()
		b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	poll := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v\npage: %s", what, err, eval("document.body.innerText"))
		}
	}

	// The runs.
	do("open the runs", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("table")))
	runs := text("body")
	for _, want := range []string{"r1", "r2", "r3", "waiting_on_human", "failed"} {
		if !strings.Contains(runs, want) {
			t.Errorf("the runs page lacks %q:\n%s", want, runs)
		}
	}
	shot("runs")

	// A run: its graph names every step, and its step waits.
	do("open r1", chromedp.Navigate(base+"runs/0/r1"), chromedp.WaitVisible(chromedp.CSS("#steps")))
	svg := eval(`document.querySelector("svg") ? document.querySelector("svg").textContent : ""`)
	for _, step := range []string{"build", "approve", "deploy"} {
		if !strings.Contains(svg, step) {
			t.Errorf("the graph does not name %s: %q", step, svg)
		}
	}
	if s := text(`tr[data-key="approve"] [data-col="status"]`); s != "WAITING_ON_HUMAN" {
		t.Errorf("approve shows %q", s)
	}
	shot("waiting")
	events := eval(`String(document.querySelectorAll("#timeline li").length)`)

	// Approve with an input; the page follows the run to its end live.
	// The form posts and comes back to the run's page, which from then
	// on follows the run live: no reload until it completes.
	do("approve", chromedp.SendKeys(chromedp.CSS(`input[name="in.ticket"]`), "OPS-7"),
		chromedp.Click(chromedp.CSS(`section.decide form button`)), chromedp.WaitVisible(chromedp.CSS(`p.notice`)))
	marker := eval(`(window.flowMarker = "kept", window.flowMarker)`)
	poll("deploy to run", `(() => { const b = document.querySelector('tr[data-key="deploy"] [data-col="status"]'); return !!b && ["RUNNING", "COMPLETED"].includes(b.textContent.trim()); })()`)
	poll("the run to complete without a reload", `document.getElementById("run-status").textContent.trim() === "completed"`)
	if eval(`String(window.flowMarker)`) != marker {
		t.Error("the page reloaded instead of updating live")
	}
	// The loop's instances, unknown when the page was made, were added
	// after its row as they appeared, linked to their logs.
	poll("the loop's instances to show", `(() => { const b = document.querySelector('tr[data-key="regions[1].push"] [data-col="status"]'); return !!b && b.textContent.trim() === "COMPLETED"; })()`)
	if got := eval(`Array.from(document.querySelectorAll("#steps tbody tr")).map(r => r.dataset.key).join(" ")`); got != "build approve deploy regions regions[0].push regions[1].push" {
		t.Errorf("rows %q after the loop ran", got)
	}
	if got := eval(`(document.querySelector('tr[data-key="regions[0].push"] a') || {}).href || ""`); !strings.HasSuffix(got, "/runs/0/r1/logs/regions%5B0%5D.push") {
		t.Errorf("the added instance links %q", got)
	}
	// The form is hidden by the live update, or absent when the page
	// the post came back to was rendered after the decision was applied.
	if eval(`(() => { const s = document.querySelector("section.decide"); return String(!s || s.hidden); })()`) != "true" {
		t.Error("the approve form still shows after the step was decided")
	}
	if after := eval(`String(document.querySelectorAll("#timeline li").length)`); atoi(after) <= atoi(events) {
		t.Errorf("the timeline did not grow: %s then %s events", events, after)
	}
	shot("run")

	// A running step's log grows on its page: r2's deploy, once approved
	// from the command line.
	if out, err := flow("approve", "r2", "approve", "--input", "ticket=OPS-8").CombinedOutput(); err != nil {
		t.Fatalf("approve r2: %v\n%s", err, out)
	}
	waitFor(t, "r2's deploy to print", func() bool {
		b, _ := os.ReadFile(filepath.Join(repo, ".agents/runs/r2/logs/deploy.0.1.log"))
		return len(b) > 0
	})
	do("open r2's deploy log", chromedp.Navigate(base+"runs/0/r2/logs/deploy"), chromedp.WaitVisible(chromedp.CSS("pre")))
	first := len(text("pre"))
	poll("the log tail to grow", fmt.Sprintf(`document.querySelector("pre").textContent.length > %d`, first))

	// Pause r2 from its page: control.json changes.
	do("pause r2", chromedp.Navigate(base+"runs/0/r2"), chromedp.WaitVisible(chromedp.CSS("#steps")),
		chromedp.Click(chromedp.CSS(`form[action$="/control/pause"] button`)), chromedp.WaitVisible(chromedp.CSS("p.notice")))
	var control struct {
		Desired string `json:"desired_state"`
		By      string `json:"setBy"`
	}
	b, err := os.ReadFile(filepath.Join(repo, ".agents/runs/r2/control.json"))
	if err != nil || json.Unmarshal(b, &control) != nil || control.Desired != "pause" {
		t.Errorf("control.json after pause: %s (%v)", b, err)
	}
	shot("paused")

	// Retry r3 from its page once its cause is fixed: it completes.
	if err := os.WriteFile(filepath.Join(repo, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	do("retry r3", chromedp.Navigate(base+"runs/0/r3"), chromedp.WaitVisible(chromedp.CSS("#steps")),
		chromedp.Click(chromedp.CSS(`form[action$="/retry"] button`)), chromedp.WaitVisible(chromedp.CSS("p.notice")))
	poll("r3 to complete", `document.getElementById("run-status").textContent.trim() === "completed"`)
	waitFor(t, "r3 completed on disk", func() bool { return runStatus(t, repo, "r3") == "completed" })

	// A hidden tab closes its stream and, shown again, opens a new one
	// from the last event it had.
	opened := eval(`(() => {
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
	// without a reload by hand. The page is left for it from r3's: the
	// streams of the pages left are closed (a browser keeps six
	// connections to a server; pages kept for going back held theirs).
	if err := os.WriteFile(filepath.Join(repo, "retry.yaml"), []byte(retryWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}
	r4 := flow("run", "retry.yaml", "--run-id", "r4")
	r4.Stdout, r4.Stderr = io.Discard, io.Discard
	if err := r4.Start(); err != nil {
		t.Fatal(err)
	}
	runners = append(runners, r4)
	waitFor(t, "r4's first attempt to print", func() bool {
		b, _ := os.ReadFile(filepath.Join(repo, ".agents/runs/r4/logs/flaky.0.1.log"))
		return len(b) > 0
	})
	start := time.Now()
	do("open r4's log", chromedp.Navigate(base+"runs/0/r4/logs/flaky"), chromedp.WaitVisible(chromedp.CSS("pre")))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("opening r4's log took %v: the connections of the pages left are held", d)
	}
	if first := text("pre"); !strings.Contains(first, "first attempt") {
		t.Errorf("r4's log page shows %q, want the first attempt's log", first)
	}
	// The page reloads itself when the next session starts: read it
	// until it shows the second attempt's log.
	waitFor(t, "the page to show the second attempt's log", func() bool {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("pre") ? document.querySelector("pre").textContent : ""`))
		return err == nil && strings.Contains(s, "second attempt")
	})
}

// retryWorkflow's step fails its first attempt after two seconds and
// prints slowly in its second.
const retryWorkflow = `name: retry
steps:
  - id: flaky
    run: 'if [ "$FLOW_ATTEMPT" = 1 ]; then echo first attempt; sleep 2; exit 1; fi; for i in 1 2 3; do echo second attempt $i; sleep 0.5; done'
    max_attempts: 2
`

// TestBrowserReadOnlyAndTokens: --read-only shows no actions and refuses
// them; a server off loopback shows nothing without its token.
func TestBrowserReadOnlyAndTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test starts Chromium")
	}
	browser := chromium(t)
	bin := flowBinary(t)
	repo := t.TempDir()
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := os.WriteFile(filepath.Join(repo, "flaky.yaml"), []byte(failingWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(filepath.Join(bin, "flow"), "run", "flaky.yaml", "--run-id", "r1")
	c.Dir, c.Env = repo, env
	_ = c.Run()
	start := func(args ...string) string {
		t.Helper()
		srv := exec.Command(filepath.Join(bin, "flow"), append([]string{"serve", "--repo", repo}, args...)...)
		srv.Dir, srv.Env = repo, env
		out, err := srv.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("flow serve printed no address: %v", err)
		}
		go func() { _, _ = io.Copy(io.Discard, out) }()
		return strings.TrimSpace(strings.TrimPrefix(line, "flow serve: "))
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-quic", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	body := func(url string) string {
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
	ro := start("--addr", "127.0.0.1:0", "--read-only")
	page := body(ro + "runs/0/r1")
	if !strings.Contains(page, "r1") || strings.Contains(page, "Retry") {
		t.Errorf("a read-only run page shows actions, or not the run:\n%s", page)
	}
	// Off loopback (every address of the machine), with a token.
	open := start("--addr", "0.0.0.0:0", "--token", "alice=0123456789abcdef-s3cret")
	open = strings.Replace(open, "0.0.0.0", "127.0.0.1", 1)
	if page := body(open + "runs/0/r1"); strings.Contains(page, "flaky") || strings.Contains(page, "check") {
		t.Errorf("without the token the page shows the run:\n%s", page)
	}
	if page := body(open + "login?token=0123456789abcdef-s3cret"); !strings.Contains(page, "r1") {
		t.Errorf("after logging in the runs do not show:\n%s", page)
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
		case "step_started", "human_input", "runner_started":
			status = "running"
		}
	}
	return status
}

func atoi(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}

// waitFor polls cond until it holds, logging what it waits for. It has
// no deadline: a wait that never ends is bounded by the test binary's
// -timeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	t.Logf("waiting for %s", what)
	for !cond() {
		time.Sleep(50 * time.Millisecond)
	}
}
