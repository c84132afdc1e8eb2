package temporal

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

const gatedFlow = `
name: gated
steps:
  - id: build
    run: make
  - id: deploy
    needs: [build]
    run: deploy
    external_gates: [ci]
`

// TestWorkflowGateStateFile: a step with external_gates waits, polled
// on workflow timers, until the gate-state file on the worker opens
// its gates; a file that cannot be read is warned of once and changes
// nothing.
func TestWorkflowGateStateFile(t *testing.T) {
	var opened time.Time
	h := newHarness(t, gatedFlow, func(c call) reply { return reply{} })
	gatesFile := repo + "/gates.json"
	h.in.Invocation.GateStateFile = "gates.json"
	write := func(s string) {
		if err := afero.WriteFile(h.fs, gatesFile, []byte(s), 0o644); err != nil {
			t.Error(err)
		}
	}
	write(`{"ci": "pending"}`)
	var waiting, broken StatusReply
	h.env.RegisterDelayedCallback(func() { waiting = h.query(QueryStatus) }, 5*time.Minute)
	h.env.RegisterDelayedCallback(func() { write(`{"ci": `) }, 10*time.Minute)
	h.env.RegisterDelayedCallback(func() { broken = h.query(QueryStatus) }, 20*time.Minute)
	h.env.RegisterDelayedCallback(func() { write(`{"gates": {"ci": "open"}}`); opened = h.env.Now() }, 30*time.Minute)
	res := h.run()
	if res.Status != core.RunCompleted {
		t.Fatalf("result %+v", res)
	}
	for name, s := range map[string]StatusReply{"5m": waiting, "20m": broken} {
		st := s.State
		if st == nil || st.Steps[keytest.K("deploy")].Status != core.Pending || !slices.Equal(st.Steps[keytest.K("deploy")].WaitingGates, []string{"ci"}) {
			t.Errorf("status at %s: deploy is not waiting for ci: %+v", name, st)
		}
		// It waits, as a local run does: not busy (a start step may
		// interrupt it), nor done.
		if l := s.Liveness; l.State != record.LiveStopped || l.Hook != keytest.K("deploy") || l.Reason != "waiting for gates to open: ci (gates.json)" {
			t.Errorf("liveness at %s: %+v", name, l)
		}
	}
	if got := h.starter.steps(); !slices.Equal(got, []string{"build.0.1", "deploy.0.1"}) {
		t.Errorf("sessions %v", got)
	}
	if d := h.env.Now().Sub(opened); opened.IsZero() || d < 0 || d > DefaultGatePoll+time.Second {
		t.Errorf("the run ended %s after the gate opened, want within a poll (%s)", d, DefaultGatePoll)
	}
	ev := strings.Join(h.events(), "\n")
	if n := strings.Count(ev, "warning"); n != 1 {
		t.Errorf("%d warnings, want one for the malformed file:\n%s", n, ev)
	}
	if !strings.Contains(ev, "gates_waiting deploy") {
		t.Errorf("events lack gates_waiting deploy:\n%s", ev)
	}
}

// TestWorkflowGatesOpenAtStart: gates already open as the run starts
// are taken with its Begin: the gated step does not wait for a poll.
func TestWorkflowGatesOpenAtStart(t *testing.T) {
	h := newHarness(t, gatedFlow, func(c call) reply { return reply{} })
	h.in.Invocation.GateStateFile = repo + "/gates.json"
	if err := afero.WriteFile(h.fs, repo+"/gates.json", []byte(`{"ci": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := h.run(); res.Status != core.RunCompleted {
		t.Fatalf("result %+v", res)
	}
	if d := h.env.Now().Sub(start); d >= DefaultGatePoll {
		t.Errorf("the run took %s of workflow time, want no poll", d)
	}
	if ev := strings.Join(h.events(), "\n"); strings.Contains(ev, "gates_waiting") {
		t.Errorf("deploy waited for open gates:\n%s", ev)
	}
}

// TestWorkflowGatesContinueAsNew: a run whose polls of the gate-state
// file fill its history continues as new while its step waits, and the
// continued run polls on until the gate opens.
func TestWorkflowGatesContinueAsNew(t *testing.T) {
	h := newHarness(t, gatedFlow, func(c call) reply { return reply{} })
	h.in.Invocation.GateStateFile = repo + "/gates.json"
	h.env.RegisterDelayedCallback(func() { h.env.SetCurrentHistoryLength(DefaultHistoryLimit) }, 5*time.Minute)
	h.env.ExecuteWorkflow(WorkflowName, h.in)
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the run did not continue as new: %v", err)
	}
	var in Input
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	if in.Carried == nil || len(in.Carried.Core.Gated["deploy"]) == 0 {
		t.Fatalf("continued without deploy waiting for its gates: %+v", in.Carried)
	}
	h.newEnv()
	h.in = in
	h.env.RegisterDelayedCallback(func() {
		if err := afero.WriteFile(h.fs, repo+"/gates.json", []byte(`{"ci": "open"}`), 0o644); err != nil {
			t.Error(err)
		}
	}, time.Hour)
	if res := h.run(); res.Status != core.RunCompleted {
		t.Fatalf("continued run: %+v", res)
	}
	if got := h.starter.steps(); !slices.Equal(got, []string{"build.0.1", "deploy.0.1"}) {
		t.Errorf("sessions %v", got)
	}
}

// TestWorkflowGatesOrchestratorFile: a workflow in agent_orchestrator's
// format reads the gate-state file by that format's rules on a worker
// too, as a local run does (record.ReadGateFileAs): 1 and a non-empty
// object are open there, and not values flow's own format knows.
func TestWorkflowGatesOrchestratorFile(t *testing.T) {
	src := "name: gated\nsteps:\n  - id: build\n    agent: builder\n    prompt: build.md\n  - id: deploy\n    agent: deployer\n    prompt: deploy.md\n    needs: [build]\n    gates: [\"ci.tests: passed\", \"change window\"]\n"
	h := newHarnessWith(t, "gated.yaml", src, map[string]string{"build.md": "build", "deploy.md": "deploy"}, func(c call) reply {
		return reply{Report: `{"schema": "run_report@v0", "run_id": "r1", "step_id": "` + c.Step + `", "agent": "a", "status": "success",` +
			` "started_at": "2025-01-15T14:30:00Z", "ended_at": "2025-01-15T14:30:01Z"}`}
	})
	if h.wf.Compat != config.CompatOrchestrator {
		t.Fatalf("the workflow reads as %q, want agent_orchestrator's format", h.wf.Compat)
	}
	h.in.Invocation.CommandTemplate = "agent {prompt_file}"
	h.in.Invocation.GateStateFile = repo + "/gates.json"
	if err := afero.WriteFile(h.fs, repo+"/gates.json", []byte(`{"ci.tests: passed": 1, "change window": {"from": "09:00"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Read by flow's rules the file is malformed, and the run would
	// wait for ever: an hour of workflow time ends it instead.
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Hour)
	if res := h.run(); res.Status != core.RunCompleted {
		t.Fatalf("result %+v", res)
	}
	if ev := strings.Join(h.events(), "\n"); strings.Contains(ev, "gates_waiting") || strings.Contains(ev, "warning") {
		t.Errorf("deploy waited for gates the file opens:\n%s", ev)
	}
}
