package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/runner/agents"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// runLocal runs src on the local engine with the same scripted sessions
// and returns its run's event lines and state.
func runLocal(t *testing.T, file, src string, files map[string]string, fn func(call) reply) ([]string, *core.State) {
	t.Helper()
	fsys := repoFS(t, file, src, files)
	wf, err := config.Load(fsys, path.Join(repo, file))
	if err != nil {
		t.Fatal(err)
	}
	r := &local.Runner{FS: fsys, Clock: clock.NewFake(start), Starter: &scripted{fs: fsys, fn: fn}, Host: "local", PID: 1, Serial: true}
	res, err := r.Run(context.Background(), spec.Options{Workflow: wf, Repo: repo, RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("local run: %+v", res)
	}
	st, _, err := record.LoadState(fsys, record.RunDir(repo, "r1"), false, start)
	if err != nil {
		t.Fatal(err)
	}
	return eventLines(t, fsys, record.RunDir(repo, "r1")), st
}

// demoSessions plays the shipped demo's agents: the first review
// fails, the second passes.
func demoSessions() func(call) reply {
	reviews := 0
	return func(c call) reply {
		switch c.Step {
		case "review":
			reviews++
			if reviews == 1 {
				return reply{Out: "the greeting is rude\nFAIL\n", Report: `{"status": "Success", "metrics": {"severity": "high"}}`}
			}
			return reply{Out: "PASS\n", Report: `{"status": "Success", "metrics": {"severity": "none"}}`}
		}
		return reply{Out: "DONE\n"}
	}
}

// TestEnginesDecideAlike runs every shipped workflow on both engines
// with the same scripted sessions: the events are the same, in the same
// order, and flow status --json has the same shape.
func TestEnginesDecideAlike(t *testing.T) {
	renamed := func(from, to string) func() func(call) reply {
		return func() func(call) reply {
			f := demoSessions()
			return func(c call) reply {
				if c.Step == from {
					c.Step = to
				}
				return f(c)
			}
		}
	}
	prompts, err := os.ReadFile("../../workflows/prompts/coding.md")
	if err != nil {
		t.Fatal(err)
	}
	type engineCase struct {
		name     string
		files    map[string]string
		sessions func() func(call) reply
	}
	cases := []engineCase{
		{name: "demo.yaml", sessions: demoSessions},
		{name: "review-loop.yaml", sessions: renamed("code", "coding")},
		// The gate's check finds 1 at the end of the file on the fourth
		// round.
		{name: "hailstone.yaml", sessions: func() func(call) reply {
			checks := 0
			return func(c call) reply {
				if c.Step == "check" {
					if checks++; checks < 4 {
						return reply{Exit: 1}
					}
				}
				return reply{}
			}
		}},
		// Two reviewers in parallel; the strict one fails the first round.
		{name: "pair.yaml", sessions: func() func(call) reply {
			return func(c call) reply {
				switch {
				case c.Step == "claude_review" && c.Iteration == 0:
					return reply{Out: "not yet\nFAIL\n"}
				case strings.HasSuffix(c.Step, "_review"):
					return reply{Out: "PASS\n"}
				}
				return reply{Out: "DONE\n"}
			}
		}},
		// Two stories, two at a time; the second's first review fails
		// and loops back inside its item.
		{name: "stories.yaml", files: map[string]string{"stories.json": `{"stories": [{"id": "s1", "title": "sign up"}, {"id": "s2", "title": "log in"}]}`},
			sessions: func() func(call) reply {
				return func(c call) reply {
					switch c.Step {
					case "stories[s2].review":
						if c.Iteration == 0 {
							return reply{Out: "FAIL\n"}
						}
						return reply{Out: "PASS\n"}
					case "stories[s1].review":
						return reply{Out: "PASS\n"}
					}
					return reply{Out: "DONE\n"}
				}
			}},
		// A clean review: the approval is not needed.
		{name: "sdlc.yaml", files: map[string]string{"prompts/coding.md": string(prompts), "PLAN.md": "# plan"},
			sessions: func() func(call) reply {
				// The agents are presets: their sessions print their
				// tools' JSON, as flow test's do.
				return func(c call) reply {
					session := fmt.Sprintf("s-%s-%d", c.Step, c.Iteration)
					switch c.Step {
					case "code_review":
						return reply{Out: agents.Simulate("codex", "PASS", session, agents.Usage{}), Report: `{"status": "Success", "metrics": {"severity": "none"}}`}
					case "planning", "coding":
						return reply{Out: agents.Simulate("claude", "DONE", session, agents.Usage{})}
					}
					return reply{}
				}
			}},
	}
	shipped, err := filepath.Glob("../../workflows/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range shipped {
		// A workflow with worktrees runs on the local engine only (the
		// Temporal engine refuses it: TestWorktreesRefused).
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "\nworkspace: worktree") {
			continue
		}
		if name := filepath.Base(f); !strings.HasSuffix(name, ".test.yaml") && !slices.ContainsFunc(cases, func(c engineCase) bool { return c.name == name }) {
			t.Errorf("shipped workflow %s is not run on both engines here", name)
		}
	}
	// Each workflow and its HCL twin.
	type run struct {
		engineCase
		file string
	}
	var runs []run
	for _, tc := range cases {
		runs = append(runs, run{tc, tc.name})
		if twin := strings.TrimSuffix(tc.name, ".yaml") + ".hcl"; fileExists("../../workflows/" + twin) {
			runs = append(runs, run{tc, twin})
		}
	}
	if len(runs) <= len(cases) {
		t.Fatal("no HCL twin was found")
	}
	for _, tc := range runs {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile("../../workflows/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			src, file := string(b), "workflow"+path.Ext(tc.file)
			local, localSt := runLocal(t, file, src, tc.files, tc.sessions())
			h := newHarnessWith(t, file, src, tc.files, tc.sessions())
			if res := h.run(); res.ExitCode != 0 {
				t.Fatalf("temporal run: %+v", res)
			}
			if remote := h.events(); !sameDecisions(local, remote) {
				t.Errorf("the engines' events differ\nlocal:\n%s\ntemporal:\n%s", strings.Join(local, "\n"), strings.Join(remote, "\n"))
			}
			v, err := h.env.QueryWorkflow(QueryStatus)
			if err != nil {
				t.Fatal(err)
			}
			var reply StatusReply
			if err := v.Get(&reply); err != nil {
				t.Fatal(err)
			}
			lk := jsonKeys(t, ops.Status{State: localSt, Liveness: record.Liveness{State: record.LiveDone}})
			rk := jsonKeys(t, ops.Status{State: reply.State, Liveness: reply.Liveness})
			if !slices.Equal(lk, rk) {
				t.Errorf("status keys differ\nlocal:    %v\ntemporal: %v", lk, rk)
			}
		})
	}
}

// sameDecisions reports whether two runs' event lines ("type step")
// record the same decisions: the same lines in the same order, or, when
// sessions ran in parallel (whose ends come in either order on either
// engine), the same lines with each step's own in the same order.
func sameDecisions(a, b []string) bool {
	if slices.Equal(a, b) {
		return true
	}
	if len(a) != len(b) {
		return false
	}
	byStep := func(lines []string) map[string][]string {
		m := map[string][]string{}
		for _, l := range lines {
			_, step, _ := strings.Cut(l, " ")
			m[step] = append(m[step], l)
		}
		return m
	}
	return maps.EqualFunc(byStep(a), byStep(b), slices.Equal)
}

// jsonKeys lists the keys of a JSON object and of its steps.
func jsonKeys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	var steps map[string]map[string]json.RawMessage
	_ = json.Unmarshal(m["steps"], &steps)
	for id, s := range steps {
		for k := range s {
			keys = append(keys, id+"."+k)
		}
	}
	sort.Strings(keys)
	return keys
}

// TestWorkflowContinuesAsNew: a run whose history passes its limit in
// the middle of a loop, during a retry's backoff, continues as new once
// the session in flight has ended, carrying its state, the core's
// bookkeeping and that session's end; the continued run finishes with
// the same sessions and the same record as a run that never continued.
func TestWorkflowContinuesAsNew(t *testing.T) {
	src := strings.Replace(reviewLoop, "  - id: coding\n    run: code\n", "  - id: coding\n    run: code\n    max_attempts: 2\n    retry: {backoff: 1m}\n", 1)
	sessions := func() func(call) reply {
		review := reviewer(2)
		return func(c call) reply {
			if c.Step == "coding" && c.Iteration == 1 && c.Attempt == 1 {
				return reply{Exit: 1}
			}
			return review(c)
		}
	}
	whole := newHarness(t, src, sessions())
	if res := whole.run(); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	h := newHarness(t, src, sessions())
	h.env.RegisterDelayedCallback(func() { h.env.SetCurrentHistoryLength(DefaultHistoryLimit) }, 30*time.Second)
	in := h.in
	segments := 0
	for {
		segments++
		if segments > 5 {
			t.Fatal("the run never ended")
		}
		h.env.ExecuteWorkflow(WorkflowName, in)
		err := h.env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if !errors.As(err, &can) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		in = Input{}
		if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
			t.Fatal(err)
		}
		if in.Carried == nil || len(in.Carried.Inputs) == 0 {
			t.Fatalf("continued without carrying the run and its session's end: %+v", in.Carried)
		}
		h.newEnv()
	}
	if segments != 2 {
		t.Fatalf("%d segments, want 2", segments)
	}
	var res Result
	if err := h.env.GetWorkflowResult(&res); err != nil || res.ExitCode != 0 {
		t.Fatalf("result %+v %v", res, err)
	}
	if got, want := h.starter.steps(), whole.starter.steps(); !slices.Equal(got, want) {
		t.Errorf("sessions over %d segments %v, want %v", segments, got, want)
	}
	if got, want := h.events(), whole.events(); !slices.Equal(got, want) {
		t.Errorf("events over %d segments differ:\n%s\nwant:\n%s", segments, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// fileExists reports whether a file of this package's tree is there.
func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
