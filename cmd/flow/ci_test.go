package main

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
)

func TestDetectCI(t *testing.T) {
	tests := []struct {
		name string
		flag string
		env  map[string]string
		want ciMode
		bad  bool
	}{
		{name: "nothing", want: ciOff},
		{name: "github", env: map[string]string{"GITHUB_ACTIONS": "true", "CI": "true"}, want: ciGitHub},
		{name: "gitlab", env: map[string]string{"GITLAB_CI": "true", "CI": "true"}, want: ciGitLab},
		{name: "github wins over gitlab", env: map[string]string{"GITHUB_ACTIONS": "true", "GITLAB_CI": "true"}, want: ciGitHub},
		{name: "github false", env: map[string]string{"GITHUB_ACTIONS": "false", "CI": "1"}, want: ciPlain},
		{name: "plain CI", env: map[string]string{"CI": "yes"}, want: ciPlain},
		{name: "CI false", env: map[string]string{"CI": "false"}, want: ciOff},
		{name: "flag off wins", flag: "off", env: map[string]string{"GITHUB_ACTIONS": "true"}, want: ciOff},
		{name: "flag github", flag: "github", want: ciGitHub},
		{name: "flag gitlab", flag: "GitLab", env: map[string]string{"GITHUB_ACTIONS": "true"}, want: ciGitLab},
		{name: "flag plain", flag: "plain", want: ciPlain},
		{name: "flag bad", flag: "jenkins", want: ciOff, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := detectCI(tt.flag, func(k string) string { return tt.env[k] })
			if got != tt.want || (err != nil) != tt.bad {
				t.Errorf("detectCI(%q) = %q, %v; want %q, error %v", tt.flag, got, err, tt.want, tt.bad)
			}
		})
	}
}

func TestGitHubEscaping(t *testing.T) {
	tests := []struct{ in, data, prop string }{
		{"plain", "plain", "plain"},
		{"50%", "50%25", "50%25"},
		{"a\nb\r\nc", "a%0Ab%0D%0Ac", "a%0Ab%0D%0Ac"},
		{"flow: a, b", "flow: a, b", "flow%3A a%2C b"},
		{"%0A", "%250A", "%250A"},
		{"::x::", "::x::", "%3A%3Ax%3A%3A"},
	}
	for _, tt := range tests {
		if got := ghData(tt.in); got != tt.data {
			t.Errorf("ghData(%q) = %q, want %q", tt.in, got, tt.data)
		}
		if got := ghProp(tt.in); got != tt.prop {
			t.Errorf("ghProp(%q) = %q, want %q", tt.in, got, tt.prop)
		}
	}
	got := ghCommand("error", "bad\nline", "file", "a,b.yaml", "line", "3")
	if want := "::error file=a%2Cb.yaml,line=3::bad%0Aline\n"; got != want {
		t.Errorf("ghCommand = %q, want %q", got, want)
	}
	if got := ghCommand("endgroup", ""); got != "::endgroup::\n" {
		t.Errorf("ghCommand(endgroup) = %q", got)
	}
}

func TestGitHubOutput(t *testing.T) {
	tests := []struct{ key, value, want string }{
		{"run_id", "r", "run_id=r\n"},
		{"waiting_step", "", "waiting_step=\n"},
		{"waiting_step", "a\nb", "waiting_step<<FLOW_EOF\na\nb\nFLOW_EOF\n"},
		{"x", "FLOW_EOF\nb", "x<<FLOW_EOF_\nFLOW_EOF\nb\nFLOW_EOF_\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		ghOutput(&b, tt.key, tt.value)
		if b.String() != tt.want {
			t.Errorf("ghOutput(%q, %q) = %q, want %q", tt.key, tt.value, b.String(), tt.want)
		}
	}
}

func TestGitLabName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"flow_build_0_1", "flow_build_0_1"},
		{"flow_items[2]_0_1", "flow_items_2__0_1"},
		{"a.b-c d:é", "a.b-c_d__"},
	}
	for _, tt := range tests {
		if got := gitlabName(tt.in); got != tt.want {
			t.Errorf("gitlabName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestGitHubSummaryRows: a loop's row says how far its items got, and
// a run whose agents reported usage has a usage line. (A failed step's
// evidence, as a run records it, is tested end to end by the ci_github
// script.)
func TestGitHubSummaryRows(t *testing.T) {
	one := 1
	st := &core.State{
		WorkflowName: "wf",
		StepOrder:    keytest.Keys("build", "items"),
		Steps: map[core.StepKey]*core.StepState{
			keytest.K("build"): {Status: core.Completed, Attempts: 1},
			keytest.K("items"): {Status: core.Running, LoopIndex: &one, Items: []core.Item{{Key: "a", Status: core.Completed}, {Key: "b", Status: core.Running}}},
		},
	}
	got := ghSummary(ops.Status{State: st}, ops.RunResult{RunID: "r1", Status: "running"})
	if !strings.Contains(got, "| items | RUNNING | 0 | 0 |  | 1/2 items, 1 running |\n") {
		t.Errorf("no loop progress:\n%s", got)
	}
	if strings.Contains(got, "- usage:") {
		t.Errorf("a run without usage has a usage line:\n%s", got)
	}
	st.Usage = &core.AgentUsage{Sessions: 2, Turns: 5, TokensIn: 1000, TokensCached: 400, TokensOut: 90, CostUSD: 0.031, CostEstimated: true}
	got = ghSummary(ops.Status{State: st}, ops.RunResult{RunID: "r1", Status: "failed", ExitCode: 1})
	if !strings.Contains(got, "- usage: 2 sessions, 5 turns, 1000 tokens in (400 cached), 90 out, ~$0.03\n") {
		t.Errorf("no usage line:\n%s", got)
	}
}

// TestGitHubSummaryOfALargeRun: GitHub refuses a step summary above
// 1 MiB; a large run's lists the steps that failed, wait or run, counts
// the others, clips notes at a character's start and shows ten steps'
// evidence, and stays under 512 KiB at worst.
func TestGitHubSummaryOfALargeRun(t *testing.T) {
	long := strings.Repeat("é|", 2048) // 6 KiB of error, every second byte escaped
	evidence := strings.Repeat(strings.Repeat("x", 800)+"\n", 20)
	st := &core.State{WorkflowName: "big", Steps: map[core.StepKey]*core.StepState{}}
	var waiting []string
	for i := range 3000 {
		id := fmt.Sprintf("step_%04d_%s", i, strings.Repeat("n", 30))
		st.StepOrder = append(st.StepOrder, keytest.K(id))
		s := &core.StepState{Status: core.Completed, Attempts: 1}
		switch {
		case i%5 == 0:
			s.Status, s.LastError = core.Failed, &long
			s.Evidence = evidence
		case i%5 == 1:
			s.Status = core.WaitingOnHuman
			waiting = append(waiting, id)
		case i >= 2500:
			s.Status = core.Pending
		}
		st.Steps[keytest.K(id)] = s
	}
	got := ghSummary(ops.Status{State: st}, ops.RunResult{RunID: "r1", Status: "failed", ExitCode: 1, Waiting: waiting})
	if len(got) > 512<<10 || !utf8.ValidString(got) {
		t.Fatalf("summary of %d bytes (valid UTF-8: %v), want at most 512 KiB", len(got), utf8.ValidString(got))
	}
	if n := strings.Count(got, "\n| step_"); n != summaryRows {
		t.Errorf("%d rows, want %d", n, summaryRows)
	}
	if strings.Contains(got, "| COMPLETED |") || strings.Contains(got, "| PENDING |") {
		t.Error("a large run's table lists completed or pending steps")
	}
	// 1,200 steps fail or wait; the first 500 (250 of each) are listed.
	if want := "2500 more steps are not listed (1500 completed, 300 pending, 350 failed, 350 waiting on a human): `flow status r1` lists every step."; !strings.Contains(got, want) {
		t.Errorf("summary lacks %q", want)
	}
	if n := strings.Count(got, "<details>"); n != summaryEvidence || !strings.Contains(got, "`flow logs r1 STEP`") {
		t.Errorf("%d steps' evidence, want %d and a pointer to the others", n, summaryEvidence)
	}
	if !strings.Contains(got, "- and 100 more steps waiting on a human: `flow status r1`") {
		t.Error("the waiting steps are not bounded")
	}
	// A run of up to summaryRows steps lists every one.
	small := &core.State{WorkflowName: "small", Steps: map[core.StepKey]*core.StepState{}}
	for i := range summaryRows {
		id := fmt.Sprintf("s%d", i)
		small.StepOrder = append(small.StepOrder, keytest.K(id))
		small.Steps[keytest.K(id)] = &core.StepState{Status: core.Completed}
	}
	got = ghSummary(ops.Status{State: small}, ops.RunResult{RunID: "r2", Status: "completed"})
	if n := strings.Count(got, "| COMPLETED |"); n != summaryRows || strings.Contains(got, "not listed") {
		t.Errorf("a run of %d steps lists %d", summaryRows, n)
	}
}

// TestCIPath: annotations and Code Quality reports name a file relative
// to the checkout, whatever directory flow ran in and however the file
// was named; a file outside it keeps its name.
func TestCIPath(t *testing.T) {
	a := &app{svc: &ops.Service{Dir: "/w/sub", Environ: []string{"GITHUB_WORKSPACE=/w/"}}}
	for _, tc := range []struct{ file, want string }{
		{"wf.yaml", "sub/wf.yaml"},
		{"../workflows/a.yaml", "workflows/a.yaml"},
		{"/w/workflows/a.yaml", "workflows/a.yaml"},
		{"/elsewhere/a.yaml", "/elsewhere/a.yaml"},
		{"../../x.yaml", "../../x.yaml"},
	} {
		if got := a.ciPath(tc.file, "GITHUB_WORKSPACE"); got != tc.want {
			t.Errorf("ciPath(%s) = %s, want %s", tc.file, got, tc.want)
		}
	}
	if got := a.ciPath("wf.yaml", "CI_PROJECT_DIR"); got != "wf.yaml" {
		t.Errorf("ciPath without its root = %s, want the name as given", got)
	}
}
