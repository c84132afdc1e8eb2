package local

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
	"github.com/spf13/afero"
)

// TestRetry: flow retry puts a failed run's failed steps and what depends
// on them back to PENDING, keeps the rest and the iterations, and runs in
// a new generation, whose logs overwrite nothing.
func TestRetry(t *testing.T) {
	e := newEnv(t, "name: t\nsteps:\n  - {id: a, run: x}\n  - {id: b, run: x, max_attempts: 1}\n  - {id: c, run: x}\n  - {id: side, needs: [], run: x}\n")
	first := &scripted{fn: func(c call) reply {
		if c.Step == "b" {
			return reply{Exit: 1, Out: "broken\n"}
		}
		return reply{Out: "ok\n"}
	}}
	if res := e.run(first, spec.Options{}); res.ExitCode != 1 {
		t.Fatalf("first run: exit %d", res.ExitCode)
	}
	_, err := e.tryRun(e.fs, &scripted{fn: ok}, spec.Options{Resume: true})
	if !errors.Is(err, core.ErrRefused) || !strings.Contains(err.Error(), "flow retry r1") || !strings.Contains(err.Error(), "--start-at-step") {
		t.Fatalf("resume of a failed run: %v", err)
	}
	p := core.PlanRetry(e.wf, e.state(e.fs))
	if !slices.Equal(p.Failed, keytest.Keys("b")) || !slices.Equal(p.Rerun, keytest.Keys("b", "c", "side")) || !slices.Equal(p.Reset, keytest.Keys("b", "c")) || !slices.Equal(p.Kept, keytest.Keys("a")) {
		t.Fatalf("plan %+v", p)
	}
	second := &scripted{fn: func(c call) reply { return reply{Out: "fixed\n"} }}
	res := e.run(second, spec.Options{Resume: true, Retry: true})
	st := e.state(e.fs)
	// side never ran: the failure stopped the run before it.
	if res.ExitCode != 0 || second.count("a") != 0 || second.count("side") != 1 || second.count("b") != 1 || second.count("c") != 1 {
		t.Fatalf("retry: exit %d, ran %v", res.ExitCode, second.calls)
	}
	if st.Generation != 1 {
		t.Errorf("generation %d", st.Generation)
	}
	logs := record.RunDir(repo, "r1") + "/logs/"
	for name, want := range map[string]string{"b.0.1.log": "broken\n", "b.g1.0.1.log": "fixed\n", "a.0.1.log": "ok\n"} {
		if b, _ := afero.ReadFile(e.fs, logs+name); string(b) != want {
			t.Errorf("%s = %q; want %q", name, b, want)
		}
	}
	if _, err := e.tryRun(e.fs, &scripted{fn: ok}, spec.Options{Resume: true, Retry: true}); !errors.Is(err, core.ErrRefused) {
		t.Errorf("retry of a completed run: %v", err)
	}
}

// TestRetryAtTheIterationCap: a step that failed at its iteration budget
// is retried only with a higher one, which then wins over the gate's own.
func TestRetryAtTheIterationCap(t *testing.T) {
	e := newEnv(t, "name: t\nsteps:\n  - {id: code, run: x}\n  - {id: test, run: x, max_attempts: 1, gate: {loop_back_to: code, max_iterations: 2}}\n")
	failing := &scripted{fn: func(c call) reply {
		if c.Step == "test" {
			return reply{Exit: 1}
		}
		return reply{}
	}}
	if res := e.run(failing, spec.Options{}); res.ExitCode != 5 {
		t.Fatalf("first run: exit %d", res.ExitCode)
	}
	_, err := e.tryRun(e.fs, &scripted{fn: ok}, spec.Options{Resume: true, Retry: true})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "--max-iterations") {
		t.Fatalf("retry without a higher budget: %v", err)
	}
	// Fails once more, then passes: within the raised budget of 4.
	n := 0
	second := &scripted{fn: func(c call) reply {
		if c.Step == "test" {
			if n++; n == 1 {
				return reply{Exit: 1}
			}
		}
		return reply{}
	}}
	res := e.run(second, spec.Options{Resume: true, Retry: true, Budgets: spec.Budgets{MaxIterations: 4, ForceMaxIterations: true}})
	if res.ExitCode != 0 || second.count("test") != 2 {
		t.Fatalf("retry with --max-iterations 4: exit %d, test ran %d times\n%s", res.ExitCode, second.count("test"), e.out.String())
	}
	if it := e.state(e.fs).Steps[keytest.K("code")].IterationCount; it != 2 {
		t.Errorf("code iteration %d; want 2 (kept, then one more loop-back)", it)
	}
}

// TestRetryRejectedHumanStep: a rejected human step waits for a new
// decision when retried.
func TestRetryRejectedHumanStep(t *testing.T) {
	e := newEnv(t, "name: t\nsteps:\n  - {id: a, run: x}\n  - {id: ok, human: {message: go}}\n  - {id: b, run: x}\n")
	e.run(&scripted{fn: ok}, spec.Options{NoWait: true})
	if _, err := record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("ok"), core.HumanInput{Approved: false, Reason: "not yet"}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if res := e.run(&scripted{fn: ok}, spec.Options{Resume: true, NoWait: true}); res.ExitCode != 1 {
		t.Fatalf("after the rejection: exit %d", res.ExitCode)
	}
	res := e.run(&scripted{fn: ok}, spec.Options{Resume: true, Retry: true, NoWait: true})
	if res.ExitCode != 3 || e.state(e.fs).Steps[keytest.K("ok")].Status != core.WaitingOnHuman {
		t.Fatalf("retry: exit %d, ok is %s", res.ExitCode, e.state(e.fs).Steps[keytest.K("ok")].Status)
	}
}

// TestStartAtKeepsOldLogs: --start-at-step starts a new generation; the
// logs of the earlier one stay.
func TestStartAtKeepsOldLogs(t *testing.T) {
	e := newEnv(t, "name: t\nsteps:\n  - {id: one, run: x}\n  - {id: two, run: x}\n")
	e.run(&scripted{fn: func(call) reply { return reply{Out: "first\n"} }}, spec.Options{})
	e.run(&scripted{fn: func(call) reply { return reply{Out: "second\n"} }}, spec.Options{Resume: true, StartAt: core.Key("two")})
	logs := record.RunDir(repo, "r1") + "/logs/"
	for name, want := range map[string]string{"two.0.1.log": "first\n", "two.g1.0.1.log": "second\n"} {
		if b, _ := afero.ReadFile(e.fs, logs+name); string(b) != want {
			t.Errorf("%s = %q; want %q", name, b, want)
		}
	}
	got, err := record.StepLogs(e.fs, record.RunDir(repo, "r1"), keytest.K("two"))
	if err != nil || len(got) != 2 || got[1].Generation != 1 {
		t.Errorf("StepLogs = %+v, %v", got, err)
	}
}

// TestFeedbackInPrompt: a re-entered agent step's prompt ends with why it
// was sent back, with the evidence; feedback: none leaves it out.
func TestFeedbackInPrompt(t *testing.T) {
	for _, none := range []bool{false, true} {
		fb := ""
		if none {
			fb = ", feedback: none"
		}
		e := newEnv(t, "name: t\nagents: {c: {run: c}}\nsteps:\n  - {id: code, agent: c, prompt: Write it."+fb+"}\n  - {id: test, run: x, max_attempts: 1, loop_back_to: code}\n")
		var prompts []string
		n := 0
		s := &scripted{fn: func(c call) reply {
			switch c.Step {
			case "code":
				b, _ := afero.ReadFile(e.fs, c.Env["FLOW_PROMPT_FILE"])
				prompts = append(prompts, string(b))
			case "test":
				if n++; n == 1 {
					return reply{Exit: 1, Out: "--- FAIL: TestLogin\n"}
				}
			}
			return reply{}
		}}
		if res := e.run(s, spec.Options{}); res.ExitCode != 0 || len(prompts) != 2 {
			t.Fatalf("exit %d, %d prompts", res.ExitCode, len(prompts))
		}
		has := strings.Contains(prompts[1], "sent back by test: exit code 1") && strings.Contains(prompts[1], "--- FAIL: TestLogin")
		if has == none || strings.Contains(prompts[0], "sent back") {
			t.Errorf("feedback: none %v; prompts %q", none, prompts)
		}
	}
}

// TestHandWrittenDecisionDefaults: an approval written by hand (dated,
// as flow dates its own) gets the defaults of the inputs it leaves out.
func TestHandWrittenDecisionDefaults(t *testing.T) {
	e := newEnv(t, "name: t\nsteps:\n  - id: ok\n    human:\n      message: go\n      inputs: [{name: env, default: staging}, {name: ticket}]\n  - {id: b, run: 'deploy {{ steps.ok.input.env }}'}\n")
	e.run(&scripted{fn: ok}, spec.Options{NoWait: true})
	path := record.RunDir(repo, "r1") + "/manual_inputs/r1__ok.json"
	if err := afero.WriteFile(e.fs, path, []byte(`{"approved": true, "input": {"ticket": "T-1"}, "at": "2025-01-15T14:31:00Z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &scripted{fn: ok}
	if res := e.run(s, spec.Options{Resume: true}); res.ExitCode != 0 || s.calls[0].Command != "deploy staging" {
		t.Fatalf("exit %d, calls %+v", res.ExitCode, s.calls)
	}
}

// TestFindNewestRun: the newest run (of a workflow) is found from the
// heads of the runs' logs, and only it is read.
func TestFindNewestRun(t *testing.T) {
	e := newEnv(t, "name: alpha\nsteps:\n  - {id: a, run: x}\n")
	e.run(&scripted{fn: ok}, spec.Options{RunID: "zz-old"})
	e.clock.Advance(time.Minute)
	e.run(&scripted{fn: ok}, spec.Options{RunID: "aa-new"})
	e.setWorkflow("name: beta\nsteps:\n  - {id: b, run: x}\n")
	e.clock.Advance(time.Minute)
	e.run(&scripted{fn: ok}, spec.Options{RunID: "mm-beta"})
	// A run directory with a broken log is passed over.
	_ = afero.WriteFile(e.fs, record.RunDir(repo, "broken")+"/events.jsonl", []byte("not json\n"), 0o644)
	for wf, want := range map[string]string{"": "mm-beta", "alpha": "aa-new", "beta": "mm-beta"} {
		ref, err := record.FindRun(e.fs, repo, "", wf)
		if err != nil || ref.ID != want || ref.State == nil {
			t.Errorf("FindRun(%q) = %s, %v; want %s", wf, ref.ID, err, want)
		}
	}
	if _, err := record.FindRun(e.fs, repo, "", "gamma"); !errors.Is(err, record.ErrNoRun) {
		t.Errorf("FindRun(gamma): %v", err)
	}
}
