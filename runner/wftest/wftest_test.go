package wftest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/wftest"
)

const workflow = `name: wf
agents: {a: {run: agent}}
defaults: {agent: a, max_attempts: 2}
steps:
  - id: coding
    prompt: "code {{ feedback.reason }}"
  - id: tests
    run: go test
    retry: {backoff: 1m}
    gate:
      check: make check
      loop_back_to: coding
  - id: review
    prompt: review
    gate: {loop_back_to: coding}
  - id: approve
    when: steps.review.metrics.severity != "none"
    human: {message: ship}
  - id: merge
    run: git merge
`

// load loads a test file written against workflow.
func load(t *testing.T, tests string) *config.TestFile {
	t.Helper()
	fs := afero.NewMemMapFs()
	_ = afero.WriteFile(fs, "/w/wf.yaml", []byte(workflow), 0o644)
	_ = afero.WriteFile(fs, "/w/wf.test.yaml", []byte("workflow: wf.yaml\ntests:\n"+tests), 0o644)
	tf, err := config.LoadTests(fs, "/w/wf.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return tf
}

func TestRun(t *testing.T) {
	tests := []struct {
		name, src string
		passed    bool
		failures  []string
	}{
		{"loop-backs from the check and the review, a retry, an approval", `
  - name: t
    files: {go.mod: "module x"}
    sessions:
      coding: {writes: {main.go: "package main"}}
      tests: [{exit_code: 1}, {exit_code: 0, duration: 5m}]
      review: [{output: "FAIL"}, {output: "PASS", report: {metrics: {severity: minor}}}]
    checks: {tests: [{exit_code: 2, output: "--- FAIL: TestX"}, {exit_code: 0}]}
    human: {approve: {approved: true, input: {ticket: OPS-1}}}
    expect:
      exit_code: 0
      status: completed
      path: [coding, tests, tests, coding, tests, review, coding, tests, review, approve, merge]
      steps:
        coding: {iteration: 2, status: COMPLETED}
        review: {verdict: PASS}
        approve: {status: COMPLETED}
      files: {main.go: "package main", go.mod: "module x"}
      prompt_contains: {coding: "TestX"}
`, true, nil},
		{"a rejection fails the run", `
  - name: t
    sessions: {review: {output: PASS}}
    human: {approve: [{approved: false, reason: not today}]}
    expect: {exit_code: 1, status: failed, path_contains: [review, approve], steps: {approve: {status: FAILED, last_error: not today}}}
`, true, nil},
		{"no decision: the run waits", `
  - name: t
    sessions: {review: {output: PASS}}
    expect: {exit_code: 3, status: waiting_on_human, steps: {merge: {status: PENDING}}}
`, true, nil},
		{"failures are positioned and explained", `
  - name: t
    sessions: {review: {output: PASS}}
    human: {approve: {approved: true}}
    expect:
      exit_code: 1
      path: [coding, tests, review, merge]
      path_contains: [merge, coding]
      steps: {review: {attempts: 2, last_error: x}}
      files: {main.go: ""}
      prompt_contains: {review: nothing}
`, false, []string{
			"/w/wf.test.yaml:8:18: exit_code: got 0, want 1",
			"/w/wf.test.yaml:9:13: path differs at step 4: want merge, got approve\n    want: coding tests review merge\n    got:  coding tests review approve merge",
			"/w/wf.test.yaml:10:22: path_contains: coding (item 2) does not occur after merge\n    want in order: merge coding\n    got:  coding tests review approve merge",
			"/w/wf.test.yaml:11:34: steps.review.attempts: got 1, want 2",
			`/w/wf.test.yaml:11:49: steps.review.last_error: "" does not match /x/`,
			"/w/wf.test.yaml:12:15: files: main.go is not in the repository",
			`/w/wf.test.yaml:13:33: prompt_contains: no prompt of review contains "nothing"; its last prompt was "review"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := wftest.Run(context.Background(), load(t, tt.src), wftest.Options{})
			if len(res) != 1 {
				t.Fatalf("%d results", len(res))
			}
			r := res[0]
			if r.Passed != tt.passed || strings.Join(r.Failures, "\n") != strings.Join(tt.failures, "\n") {
				t.Errorf("passed %v, failures:\n%s\nwant %v:\n%s\npath %v", r.Passed, strings.Join(r.Failures, "\n"), tt.passed, strings.Join(tt.failures, "\n"), r.Path)
			}
		})
	}
}

func TestCover(t *testing.T) {
	tf := load(t, `
  - name: loops
    sessions:
      tests: [{exit_code: 1}, {exit_code: 0}]
      review: [{output: "FAIL"}, {output: "PASS", report: {metrics: {severity: minor}}}]
    checks: {tests: [{exit_code: 2}, {exit_code: 0}]}
    human: {approve: {approved: true}}
  - name: skip
    sessions: {review: {output: PASS, report: {metrics: {severity: none}}}}
`)
	c := wftest.Cover(tf.Workflow, wftest.Run(context.Background(), tf, wftest.Options{}))
	if got := strings.Join(c.Missing(), "|"); got != "human approve rejected" {
		t.Errorf("missing %q; items %+v", got, c.Items)
	}
	if c.Total != 15 || c.Covered != 14 || c.Retries["tests"] != 1 {
		t.Errorf("coverage %+v", c)
	}
}

// TestScriptedControl: a test scripts what a person sets in control.json
// while a step's first session runs, and how the run goes on each time
// it stops paused.
func TestScriptedControl(t *testing.T) {
	tests := []struct {
		name, src string
		exit      int
		path      string
	}{
		{"paused after coding, continued", `
  - name: t
    sessions: {review: {output: PASS}, tests: {exit_code: 0}}
    control: {coding: [pause, continue]}
    human: {approve: {approved: true}}
`, 0, "coding tests review approve merge"},
		{"paused after coding, left paused", `
  - name: t
    control: {coding: pause}
`, 4, "coding"},
		{"run once, then continue", `
  - name: t
    sessions: {review: {output: PASS}}
    control: {coding: [run_once, continue]}
    human: {approve: {approved: true}}
`, 0, "coding tests review approve merge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := wftest.Run(context.Background(), load(t, tt.src), wftest.Options{})
			if len(res) != 1 || res[0].ExitCode != tt.exit || strings.Join(res[0].Path, " ") != tt.path {
				t.Fatalf("exit %d, path %v, failures %v; want exit %d, path %s", res[0].ExitCode, res[0].Path, res[0].Failures, tt.exit, tt.path)
			}
		})
	}
	// An unknown state is a positioned load error with a did-you-mean.
	fs := afero.NewMemMapFs()
	_ = afero.WriteFile(fs, "/w/wf.yaml", []byte(workflow), 0o644)
	_ = afero.WriteFile(fs, "/w/wf.test.yaml", []byte("workflow: wf.yaml\ntests:\n  - name: t\n    control: {coding: paws}\n"), 0o644)
	if _, err := config.LoadTests(fs, "/w/wf.test.yaml"); err == nil || !strings.Contains(err.Error(), `4:23: control.coding: unknown state "paws"`) {
		t.Errorf("unknown state: %v", err)
	}
}

// TestDefaults: a file's defaults: say what an unscripted session does.
func TestDefaults(t *testing.T) {
	fs := afero.NewMemMapFs()
	_ = afero.WriteFile(fs, "/w/wf.yaml", []byte("name: d\nsteps:\n  - {id: a, run: x}\n  - {id: b, run: y, max_attempts: 1}\n"), 0o644)
	_ = afero.WriteFile(fs, "/w/wf.test.yaml", []byte("workflow: wf.yaml\ndefaults: {exit_code: 3}\ntests:\n  - name: t\n    sessions: {a: {exit_code: 0}}\n    expect: {exit_code: 1, steps: {b: {status: FAILED}}}\n"), 0o644)
	tf, err := config.LoadTests(fs, "/w/wf.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res := wftest.Run(context.Background(), tf, wftest.Options{})
	if len(res) != 1 || !res[0].Passed {
		t.Fatalf("%+v", res)
	}
}

// TestHumanTimeout: a human step nobody decides fails once its
// human.timeout passes in fake time.
func TestHumanTimeout(t *testing.T) {
	fs := afero.NewMemMapFs()
	_ = afero.WriteFile(fs, "/w/wf.yaml", []byte("name: h\nsteps:\n  - {id: ok, human: {message: go, timeout: 24h}}\n  - {id: b, run: x}\n"), 0o644)
	_ = afero.WriteFile(fs, "/w/wf.test.yaml", []byte("workflow: wf.yaml\ntests:\n  - name: nobody decides\n    expect: {exit_code: 1, path: [ok], steps: {ok: {status: FAILED, last_error: human.timeout}}}\n"), 0o644)
	tf, err := config.LoadTests(fs, "/w/wf.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if res := wftest.Run(context.Background(), tf, wftest.Options{}); len(res) != 1 || !res[0].Passed {
		t.Fatalf("%+v", res)
	}
}

const loopWorkflow = `name: loops
steps:
  - id: stories
    for_each: [{id: a, title: A}, {id: b, title: B}]
    as: story
    key: story.id
    max_parallel: 1
    steps:
      - id: implement
        run: implement {{ story.title }}
      - id: review
        run: review
        gate: {pass: verdict == "PASS", loop_back_to: implement}
      - id: signoff
        human: {message: "sign off {{ story.title }}"}
  - id: integrate
    run: integrate
`

// TestRunLoop: a test scripts a loop's instances by body step (every
// item) or by instance key (one item), decides each item's human step,
// and expects the path and an instance's state.
func TestRunLoop(t *testing.T) {
	fs := afero.NewMemMapFs()
	_ = afero.WriteFile(fs, "/w/wf.yaml", []byte(loopWorkflow), 0o644)
	_ = afero.WriteFile(fs, "/w/wf.test.yaml", []byte(`workflow: wf.yaml
tests:
  - name: b loops back once
    sessions:
      review: {output: PASS}
      "stories[b].review": [{output: FAIL}, {output: PASS}]
    human: {signoff: {approved: true}}
    expect:
      exit_code: 0
      path: [stories, "stories[a].implement", "stories[a].review", "stories[a].signoff", "stories[b].implement", "stories[b].review",
        "stories[b].implement", "stories[b].review", "stories[b].signoff", integrate]
      steps:
        "stories[b].implement": {iteration: 1, status: COMPLETED}
        stories: {status: COMPLETED}
`), 0o644)
	tf, err := config.LoadTests(fs, "/w/wf.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range wftest.Run(context.Background(), tf, wftest.Options{}) {
		if !r.Passed {
			t.Errorf("%s: %v (path %v)", r.Name, r.Failures, r.Path)
		}
	}
	cov := wftest.Cover(tf.Workflow, wftest.Run(context.Background(), tf, wftest.Options{}))
	for _, it := range cov.Items {
		if (it.Name == "loop review -> implement" || it.Name == "run signoff") && !it.Covered {
			t.Errorf("coverage: %s not covered", it.Name)
		}
	}
	// A body step in expectations is ambiguous: name an instance.
	_ = afero.WriteFile(fs, "/w/bad.test.yaml", []byte("workflow: wf.yaml\ntests:\n  - name: t\n    expect: {steps: {review: {status: COMPLETED}}}\n"), 0o644)
	if _, err := config.LoadTests(fs, "/w/bad.test.yaml"); err == nil || !strings.Contains(err.Error(), `name an instance, stories[KEY].review`) {
		t.Errorf("a body step in expect.steps: %v", err)
	}
}

// TestParallelPathIsFixed: with items (or steps) in parallel, a test
// takes the same path every time: sessions end in the order they
// started.
func TestParallelPathIsFixed(t *testing.T) {
	fs := afero.NewMemMapFs()
	_ = afero.WriteFile(fs, "/w/wf.yaml", []byte(strings.Replace(loopWorkflow, "max_parallel: 1", "max_parallel: 2", 1)), 0o644)
	_ = afero.WriteFile(fs, "/w/wf.test.yaml", []byte(`workflow: wf.yaml
tests:
  - name: t
    sessions: {review: [{output: FAIL}, {output: PASS}]}
    human: {signoff: {approved: true}}
    expect:
      path: [stories, "stories[a].implement", "stories[b].implement", "stories[a].review", "stories[b].review", "stories[a].implement",
        "stories[a].review", "stories[b].signoff", "stories[a].signoff", integrate]
`), 0o644)
	tf, err := config.LoadTests(fs, "/w/wf.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		for _, r := range wftest.Run(context.Background(), tf, wftest.Options{}) {
			if !r.Passed {
				t.Fatalf("run %d: %v", i, r.Failures)
			}
		}
	}
}

// TestRunPresets: a test of preset agents simulates their tools' JSON:
// the scripted output is the final text (a FAIL verdict loops back),
// the re-entered coder continues its conversation with the feedback,
// and the scripted usage spends a budget (exit 6).
func TestRunPresets(t *testing.T) {
	fs := afero.NewMemMapFs()
	_ = afero.WriteFile(fs, "/w/wf.yaml", []byte(`name: presets
agents:
  coder: {preset: claude}
  reviewer: {preset: codex}
budget: {cost_usd: 5}
steps:
  - {id: code, agent: coder, prompt: write it}
  - id: review
    agent: reviewer
    prompt: review it
    gate: {pass: verdict == "PASS", loop_back_to: code}
`), 0o644)
	_ = afero.WriteFile(fs, "/w/wf.test.yaml", []byte(`workflow: wf.yaml
tests:
  - name: a review loop
    sessions:
      code: {output: DONE, usage: {cost_usd: 1, tokens_in: 100, tokens_out: 10}}
      review: [{output: "FAIL"}, {output: "PASS"}]
    expect:
      exit_code: 0
      path: [code, review, code, review]
      steps: {code: {iteration: 1}}
      prompt_contains: {code: "Your previous work was sent back by review"}
  - name: the budget runs out
    sessions:
      code: {output: DONE, usage: {cost_usd: 3}}
      review: {output: FAIL}
    expect:
      exit_code: 6
      status: budget_exceeded
      path: [code, review, code]
`), 0o644)
	tf, err := config.LoadTests(fs, "/w/wf.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range wftest.Run(context.Background(), tf, wftest.Options{}) {
		if !r.Passed {
			t.Errorf("%s: %v (path %v)", r.Name, r.Failures, r.Path)
		}
	}
}
