package core_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/spec"
)

func intp(n int) *int { return &n }

func boolp(b bool) *bool { return &b }

// TestSessionOutcomes drives the core with the facts a driver observes
// of one session, for every rule of docs/concepts.md, "Sessions",
// "Gates" and "Budgets: attempts and iterations" that decides what
// the session means: the driver reports, the core decides.
func TestSessionOutcomes(t *testing.T) {
	const plain = "name: p\nsteps:\n  - {id: a, run: x, max_attempts: 2}\n  - {id: b, run: x}\n"
	const gated = "name: g\nsteps:\n  - {id: a, run: x}\n  - {id: r, run: x, max_attempts: 1, gate: {loop_back_to: a}}\n"
	const direct = "name: d\nsteps:\n  - {id: a, run: x}\n  - {id: r, run: x, max_attempts: 1, loop_back_to: a}\n"
	const agents = "name: ag\nagents: {c: {run: c}}\nsteps:\n  - {id: a, agent: c, prompt: p, max_attempts: 2}\n  - {id: r, agent: c, prompt: p, max_attempts: 1, gate: {loop_back_to: a}}\n"
	const signals = "name: s\nsignals: {fail: NOPE}\nsteps:\n  - {id: a, run: x, max_attempts: 2}\n  - {id: b, run: x}\n"
	const review = "name: rv\nagents: {c: {run: c}}\nsteps:\n  - {id: a, agent: c, prompt: p}\n  - {id: r, agent: c, prompt: p, max_attempts: 1, gate: {loop_back_to: a, check: make test}}\n"
	fail := core.SessionFacts{Verdict: core.VerdictFail, Output: "x_test.go:12: want 3\nFAIL"}
	mixed := core.SessionFacts{Verdict: core.VerdictMixed, VerdictWhy: "both PASS and FAIL"}
	tests := []struct {
		name, src, step string
		done            core.SessionDone
		// want is the event the session's end records, and why (a
		// prefix of last_error).
		want, why string
	}{
		{"exit 0", plain, "a", core.SessionDone{}, core.EvStepCompleted, ""},
		{"non-zero exit retried", plain, "a", core.SessionDone{Facts: core.SessionFacts{ExitCode: 2}}, core.EvAttemptFailed, "exit code 2"},
		{"retry_if false", plain, "a", core.SessionDone{Facts: core.SessionFacts{ExitCode: 2}, RetryIf: boolp(false)}, core.EvStepFailed, "exit code 2"},
		{"retry_if true", plain, "a", core.SessionDone{Facts: core.SessionFacts{ExitCode: 2}, RetryIf: boolp(true)}, core.EvAttemptFailed, "exit code 2"},
		{"exit with the report's error", plain, "a", core.SessionDone{Facts: core.SessionFacts{ExitCode: 1, Report: &core.ReportFacts{Error: "disk full"}}}, core.EvAttemptFailed, "exit code 1: disk full"},
		{"report status failed", plain, "a", core.SessionDone{Facts: core.SessionFacts{Report: &core.ReportFacts{Status: "failed", Error: "no"}}}, core.EvAttemptFailed, "report status failed: no"},
		{"unreadable report", plain, "a", core.SessionDone{Facts: core.SessionFacts{ReportErr: "not JSON"}}, core.EvAttemptFailed, "unreadable report: not JSON"},
		{"timeout", plain, "a", core.SessionDone{Facts: core.SessionFacts{ExitCode: -1, Timeout: 30 * time.Minute}}, core.EvAttemptFailed, "timed out after 30m0s"},
		{"idle", plain, "a", core.SessionDone{Facts: core.SessionFacts{ExitCode: -1, IdleTimeout: time.Minute}}, core.EvAttemptFailed, "no output for 1m0s (idle_timeout)"},
		{"spawn failed", plain, "a", core.SessionDone{Facts: core.SessionFacts{Err: "start session: no sh"}}, core.EvAttemptFailed, "session: start session: no sh"},
		{"invalid expression, not retried", plain, "a", core.SessionDone{Invalid: "wf.yaml:3:5: when: boom"}, core.EvStepFailed, "wf.yaml:3:5: when: boom"},
		{"a command's FAIL line decides nothing", plain, "a", core.SessionDone{Facts: fail}, core.EvStepCompleted, ""},
		{"a command's FAIL line decides with signals:", signals, "a", core.SessionDone{Facts: fail}, core.EvAttemptFailed, "the session's verdict is FAIL"},
		{"an agent's FAIL verdict without a gate", agents, "a", core.SessionDone{Facts: fail}, core.EvAttemptFailed, "the session's verdict is FAIL"},
		{"an agent's MIXED verdict without a gate", agents, "a", core.SessionDone{Facts: mixed}, core.EvAttemptFailed, "the session's verdict is MIXED (both PASS and FAIL)"},
		{"an agent's silence without a gate", agents, "a", core.SessionDone{}, core.EvStepCompleted, ""},
		{"review: final PASS", agents, "r", core.SessionDone{Facts: core.SessionFacts{Verdict: core.VerdictPass}, Gate: &core.GateFacts{}}, core.EvStepCompleted, ""},
		{"review: silence never passes", agents, "r", core.SessionDone{Facts: core.SessionFacts{VerdictWhy: "no final PASS/FAIL line"}, Gate: &core.GateFacts{}}, core.EvGateFailed, "gate failed: no verdict: no final PASS/FAIL line"},
		{"review: text after PASS", agents, "r", core.SessionDone{Facts: core.SessionFacts{VerdictWhy: "text after the final signal"}, Gate: &core.GateFacts{}}, core.EvGateFailed, "gate failed: no verdict: text after the final signal"},
		{"review: MIXED", agents, "r", core.SessionDone{Facts: mixed, Gate: &core.GateFacts{}}, core.EvGateFailed, "gate failed: the verdict is MIXED (both PASS and FAIL)"},
		{"review: report gate_failure false is a verdict", agents, "r", core.SessionDone{Facts: core.SessionFacts{Report: &core.ReportFacts{GateFailureGiven: true}}, Gate: &core.GateFacts{}}, core.EvStepCompleted, ""},
		{"review: a FAIL beats gate_failure false", agents, "r", core.SessionDone{Facts: core.SessionFacts{Verdict: core.VerdictFail, Report: &core.ReportFacts{GateFailureGiven: true}}, Gate: &core.GateFacts{}}, core.EvGateFailed, "gate failed: the verdict is FAIL"},
		{"review with a check: the check is the evidence", review, "r", core.SessionDone{Gate: &core.GateFacts{Check: intp(0)}}, core.EvStepCompleted, ""},
		{"review with a check: a FAIL still fails", review, "r", core.SessionDone{Facts: fail, Gate: &core.GateFacts{Check: intp(0)}}, core.EvGateFailed, "gate failed: the verdict is FAIL"},
		{"review with a failing check", review, "r", core.SessionDone{Facts: core.SessionFacts{Verdict: core.VerdictPass}, Gate: &core.GateFacts{Check: intp(2), CheckOutput: "--- FAIL: TestX"}}, core.EvGateFailed, "gate failed: gate.check exited 2"},
		{"command gate: a FAIL line fails it", gated, "r", core.SessionDone{Facts: fail, Gate: &core.GateFacts{}}, core.EvGateFailed, "gate failed: the verdict is FAIL"},
		{"command gate: silence passes", gated, "r", core.SessionDone{Gate: &core.GateFacts{}}, core.EvStepCompleted, ""},
		{"loop_back_to on the step: FAIL", direct, "r", core.SessionDone{Facts: fail}, core.EvGateFailed, "gate failed: the verdict is FAIL"},
		{"report gate_failure", gated, "r", core.SessionDone{Facts: core.SessionFacts{Report: &core.ReportFacts{GateFailure: true, GateFailureGiven: true, Error: "tests red"}}, Gate: &core.GateFacts{}}, core.EvGateFailed, "gate failed: the report says gate_failure: tests red"},
		{"gate.check non-zero", gated, "r", core.SessionDone{Gate: &core.GateFacts{Check: intp(3)}}, core.EvGateFailed, "gate failed: gate.check exited 3"},
		{"gate.check zero", gated, "r", core.SessionDone{Gate: &core.GateFacts{Check: intp(0)}}, core.EvStepCompleted, ""},
		{"gate.pass false", gated, "r", core.SessionDone{Gate: &core.GateFacts{Pass: &core.ExprValue{Src: "signals.PASS"}}}, core.EvGateFailed, "gate failed: gate.pass is false: signals.PASS"},
		{"a failing check fails even when gate.pass is true", gated, "r", core.SessionDone{Gate: &core.GateFacts{Check: intp(1), Pass: &core.ExprValue{Value: true}}}, core.EvGateFailed, "gate failed: gate.check exited 1"},
		{"gate.pass true decides without a verdict", agents, "r", core.SessionDone{Gate: &core.GateFacts{Pass: &core.ExprValue{Value: true}}}, core.EvStepCompleted, ""},
		{"gate.fail true", gated, "r", core.SessionDone{Gate: &core.GateFacts{Fail: &core.ExprValue{Value: true, Src: "signals.FAIL"}}}, core.EvGateFailed, "gate failed: gate.fail is true: signals.FAIL"},
		{"a failing command with a loop-back loops back", gated, "r", core.SessionDone{Facts: core.SessionFacts{ExitCode: 1, Output: "--- FAIL: TestLogin"}}, core.EvGateFailed, "gate failed: exit code 1"},
		{"loop_back_to on a command step: a failing exit loops back", direct, "r", core.SessionDone{Facts: core.SessionFacts{ExitCode: 1}}, core.EvGateFailed, "gate failed: exit code 1"},
		{"a timeout is no gate failure", gated, "r", core.SessionDone{Facts: core.SessionFacts{ExitCode: -1, Timeout: time.Minute}}, core.EvStepFailed, "timed out"},
		{"an agent's failing exit is no gate failure", agents, "r", core.SessionDone{Facts: core.SessionFacts{ExitCode: 1}}, core.EvStepFailed, "exit code 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newCoreHarness(t, tt.src, spec.Budgets{})
			for _, id := range h.plan.IDs() {
				if id == tt.step {
					break
				}
				h.ok(id)
			}
			in := tt.done
			in.Step = keytest.K(tt.step)
			in.Outcome.Attempt = h.st.Steps[keytest.K(tt.step)].Attempts
			if in.Facts.ExitCode == 0 && in.Facts.Timeout == 0 && in.Facts.IdleTimeout == 0 {
				in.Outcome.ExitCode = intp(0)
			}
			before := len(h.events)
			h.decide(in)
			var got []string
			for _, e := range h.events[before:] {
				if e.Step == keytest.K(tt.step) {
					got = append(got, e.Type)
				}
			}
			if len(got) == 0 || got[0] != tt.want {
				t.Fatalf("events for %s: %v; want %s first", tt.step, got, tt.want)
			}
			le := deref(h.st.Steps[keytest.K(tt.step)].LastError)
			if tt.want == core.EvAttemptFailed {
				// The next attempt started at once; the failure is in
				// the event.
				le = string(h.events[before].Data)
			}
			if !strings.Contains(le, tt.why) {
				t.Errorf("last error %q; want it to contain %q", le, tt.why)
			}
			h.replayed()
		})
	}
}

// TestReplayProperty feeds the core random sequences of what a driver
// may report — sessions ending every way, gates, humans, control,
// timers, interrupts — and checks after each decision that folding the
// emitted events into a fresh state reproduces the core's state.
func TestReplayProperty(t *testing.T) {
	const src = `
name: prop
max_parallel: 2
steps:
  - {id: plan, run: x, max_attempts: 3}
  - {id: code, run: x, max_attempts: 2}
  - {id: test, run: x, loop_back_to: code, max_iterations: 3}
  - {id: side, needs: [], run: x}
  - {id: ok, needs: [test], human: {message: go}, loop_back_to: code}
  - {id: ship, run: x}
`
	total, shipped := 0, 0
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		h := newCoreHarness(t, src, spec.Budgets{})
		for range 60 {
			var running, waiting []string
			for _, id := range h.plan.IDs() {
				switch h.st.Steps[keytest.K(id)].Status {
				case core.Running:
					running = append(running, id)
				case core.WaitingOnHuman:
					waiting = append(waiting, id)
				}
			}
			var in core.Input
			switch r := rng.IntN(10); {
			case r < 6 && len(running) > 0:
				id := running[rng.IntN(len(running))]
				d := core.SessionDone{Step: keytest.K(id), Outcome: core.Outcome{Attempt: h.st.Steps[keytest.K(id)].Attempts}}
				switch rng.IntN(20) {
				case 0, 1:
					d.Facts.ExitCode = 1 + rng.IntN(3)
				case 2, 3, 4:
					d.Facts.Verdict = core.VerdictFail
				case 5:
					d.Interrupted = true
				}
				if rng.IntN(3) == 0 {
					d.RetryIf = boolp(rng.IntN(2) == 0)
				}
				d.Gate = &core.GateFacts{}
				in = d
			case r < 8 && len(waiting) > 0:
				in = core.HumanDecision{Step: keytest.K(waiting[0]), Input: core.HumanInput{Approved: rng.IntN(3) > 0, By: "p"}}
			case r == 8:
				in = core.ControlChanged{Desired: []core.ControlState{core.Continuous, core.Pause, core.RunOnce}[rng.IntN(3)]}
			default:
				in = core.TimerFired{Step: keytest.K(h.plan.IDs()[rng.IntN(len(h.plan.IDs()))])}
			}
			h.decide(in)
			h.replayed()
		}
		total += len(h.events)
		if h.st.Steps[core.Key("ship")].Status == core.Completed {
			shipped++
		}
	}
	// The walks must get somewhere: loops, retries, and some to the end.
	if total < 200*15 || shipped == 0 {
		t.Errorf("the random walks recorded only %d events, %d of them shipped", total, shipped)
	}
}
