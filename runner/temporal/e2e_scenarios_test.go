package temporal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
	"go.temporal.io/sdk/client"

	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/internal/syncbuf"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/spec"
)

// scene is one engine's side of a scenario: a repository of its own,
// the engine (ops.Engine), and what the scenario did, line by line —
// each operation's exit code and the run's status — which must read
// the same on both engines.
type scene struct {
	t    *testing.T
	ctx  context.Context
	eng  ops.Engine
	svc  *ops.Service
	repo string
	out  syncbuf.Buffer
	log  []string
	// cancel interrupts the local run in flight (what SIGTERM does to
	// its runner); set while one runs.
	mu     sync.Mutex
	cancel context.CancelFunc
	// mark is the run's last seq before the last decision or control.
	mark int64
}

// write writes a file of the repository.
func (s *scene) write(name, src string) {
	s.t.Helper()
	if err := os.WriteFile(filepath.Join(s.repo, name), []byte(src), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// exists reports whether a file of the repository is there.
func (s *scene) exists(name string) bool {
	_, err := os.Stat(filepath.Join(s.repo, name))
	return err == nil
}

// note records an operation's end: its exit code, and the run's
// status when it ran one.
func (s *scene) note(op string, res spec.Result, err error) {
	line := fmt.Sprintf("%s: exit %d", op, res.ExitCode)
	if err != nil {
		line = fmt.Sprintf("%s: error exit %d", op, ops.CodeOf(err))
		if errors.Is(err, ops.ErrUnsupported) {
			line += " (unsupported)"
		}
	} else if res.Status != "" {
		line += " " + string(res.Status)
	}
	s.add(line)
}

// add records a line; the runs in the background record theirs too.
func (s *scene) add(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, line)
}

// lines returns what the scenario recorded.
func (s *scene) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// exec runs a launch on the engine, as flow run and flow resume do.
func (s *scene) exec(l *ops.Launch) (spec.Result, error) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	res, err := s.svc.Start(ctx, l, ops.Attach{Output: &s.out})
	return spec.Result{RunID: res.RunID, Status: res.Status, ExitCode: res.ExitCode}, err
}

// run starts a run of file: flow run FILE --run-id ID [--no-wait].
func (s *scene) run(file, id string, noWait bool) spec.Result {
	s.t.Helper()
	l, err := s.svc.PrepareRun(ops.RunRequest{Workflow: filepath.Join(s.repo, file), Repo: s.repo, RunID: id, NoWait: noWait})
	if err != nil {
		s.t.Fatal(err)
	}
	res, err := s.exec(l)
	s.note("run "+id, res, err)
	return res
}

// runAsync is run in the background; the result comes on the channel.
func (s *scene) runAsync(file, id string) <-chan spec.Result {
	done := make(chan spec.Result, 1)
	go func() { done <- s.run(file, id, false) }()
	return done
}

// restart makes a recorded run go on (flow resume, flow retry, --start-at-step).
func (s *scene) restart(op string, req ops.RestartRequest) spec.Result {
	s.t.Helper()
	req.Repo = s.repo
	l, err := s.eng.Restart(s.ctx, req)
	if err != nil {
		s.note(op, spec.Result{}, err)
		return spec.Result{}
	}
	if l.Plan != nil {
		for _, m := range l.Plan.Missing {
			s.add(fmt.Sprintf("%s: missing %s (artifact of %s)", op, m.Path, m.Step))
		}
	}
	res, err := s.exec(l)
	s.note(op, res, err)
	return res
}

// goOn lets a run go on once it was decided or steered: locally a
// runner takes it again (flow resume); on Temporal its workflow goes on
// by itself, and this waits until it has recorded something since the
// decision and is over (done or stopped). It records the run's status.
func (s *scene) goOn(op, id string, noWait bool) {
	s.t.Helper()
	if s.eng.Name() == "local" {
		req := ops.RestartRequest{Repo: s.repo, RunID: id, NoWait: noWait}
		l, err := s.eng.Restart(s.ctx, req)
		if err != nil {
			s.note(op, spec.Result{}, err)
			return
		}
		res, err := s.exec(l)
		if err != nil {
			s.note(op, res, err)
			return
		}
		s.add(fmt.Sprintf("%s: %s", op, res.Status))
		return
	}
	var st ops.Status
	await(s.t, op, func() bool {
		var err error
		st, err = s.eng.Status(s.ctx, s.repo, id)
		return err == nil && st.State.Seq > s.mark && st.Over()
	})
	s.add(fmt.Sprintf("%s: %s", op, st.State.Status))
}

// markRun notes the seq of the last event of the run, before an
// operation that makes it go on.
func (s *scene) markRun(id string) {
	s.t.Helper()
	st, err := s.eng.Status(s.ctx, s.repo, id)
	if err != nil {
		s.t.Fatalf("status %s: %v", id, err)
	}
	s.mark = st.State.Seq
}

// decide approves or rejects a step: flow approve, flow reject.
func (s *scene) decide(id, step string, approve bool) {
	s.t.Helper()
	s.markRun(id)
	_, err := s.eng.Decide(s.ctx, ops.DecideRequest{Repo: s.repo, RunID: id, Step: core.Key(step), Approve: approve, By: "ann", Reason: "not yet"})
	s.note(fmt.Sprintf("decide %s approve=%v", step, approve), spec.Result{}, err)
}

// control sets the desired state: flow pause, continue, run-once, cleanup.
func (s *scene) control(id string, state core.ControlState) {
	s.t.Helper()
	s.markRun(id)
	_, err := s.eng.Control(s.ctx, ops.ControlRequest{Repo: s.repo, RunID: id, State: state, By: "ann"})
	s.note("control "+string(state), spec.Result{}, err)
}

// steps records the run's steps and their status.
func (s *scene) steps(id string) {
	s.t.Helper()
	st, err := s.eng.Status(s.ctx, s.repo, id)
	if err != nil {
		s.t.Fatalf("status %s: %v", id, err)
	}
	var parts []string
	for _, k := range st.State.StepOrder {
		if ss := st.State.Steps[k]; ss != nil {
			parts = append(parts, fmt.Sprintf("%s=%s", k, strings.ToLower(string(ss.Status))))
		}
	}
	s.add("steps: " + strings.Join(parts, " "))
}

// await waits, by looking, until a file of the repository is there.
func (s *scene) await(name string) {
	await(s.t, name, func() bool { return s.exists(name) })
}

// scenarios are the lifecycle's scenarios, each run on both engines:
// what they record must be the same, and be want (wantTemporal, where
// the Temporal engine differs, says how and why).
var scenarios = []struct {
	name         string
	play         func(s *scene)
	want         []string
	wantTemporal []string
}{
	{
		name: "restart with an edited workflow",
		play: func(s *scene) {
			s.write("wf.yaml", "name: edit\nsteps:\n  - {id: a, run: \"echo a\"}\n")
			s.run("wf.yaml", "edit-1", false)
			s.write("wf.yaml", "name: edit\nsteps:\n  - {id: a, run: \"echo a\"}\n  - {id: c, needs: [a], run: \"echo c\"}\n")
			s.restart("resume --start-at-step c", ops.RestartRequest{RunID: "edit-1", StartAt: core.Key("c")})
			s.steps("edit-1")
		},
		want: []string{"run edit-1: exit 0 completed", "resume --start-at-step c: exit 0 completed", "steps: a=completed c=completed"},
	},
	{
		name: "start-at with artifact preflight and --force",
		play: func(s *scene) {
			s.write("wf.yaml", "name: art\nsteps:\n  - {id: a, run: \"echo a > A.txt\", artifacts: [A.txt]}\n  - {id: b, needs: [a], run: \"echo b\"}\n")
			s.run("wf.yaml", "art-1", false)
			if err := os.Remove(filepath.Join(s.repo, "A.txt")); err != nil {
				s.t.Fatal(err)
			}
			s.restart("resume --start-at-step b", ops.RestartRequest{RunID: "art-1", StartAt: core.Key("b")})
			s.restart("resume --start-at-step b --force", ops.RestartRequest{RunID: "art-1", StartAt: core.Key("b"), Force: true})
			s.steps("art-1")
		},
		want: []string{"run art-1: exit 0 completed", "resume --start-at-step b: missing A.txt (artifact of a)", "resume --start-at-step b: error exit 2",
			"resume --start-at-step b --force: missing A.txt (artifact of a)", "resume --start-at-step b --force: exit 0 completed",
			"steps: a=completed b=completed"},
	},
	{
		name: "retry",
		play: func(s *scene) {
			s.write("wf.yaml", "name: retry\nsteps:\n  - {id: a, run: \"echo a\"}\n  - {id: b, needs: [a], run: \"test -f fixed\", max_attempts: 1}\n")
			s.run("wf.yaml", "retry-1", false)
			s.write("fixed", "")
			s.restart("retry", ops.RestartRequest{RunID: "retry-1", Retry: true})
			s.restart("retry again", ops.RestartRequest{RunID: "retry-1", Retry: true})
			s.steps("retry-1")
		},
		want: []string{"run retry-1: exit 1 failed", "retry: exit 0 completed", "retry again: error exit 8", "steps: a=completed b=completed"},
	},
	{
		name: "--move",
		play: func(s *scene) {
			s.write("wf.yaml", "name: move\nsteps:\n  - {id: a, run: \"echo a\"}\n")
			s.run("wf.yaml", "move-1", false)
			s.restart("resume --move", ops.RestartRequest{RunID: "move-1", Move: true})
		},
		// A local run goes on in its own checkout: --move is bad usage.
		want: []string{"run move-1: exit 0 completed", "resume --move: error exit 2"},
		// A run on Temporal may move, but not once it has ended.
		wantTemporal: []string{"run move-1: exit 0 completed", "resume --move: error exit 8"},
	},
	{
		name: "pause, run-once, continue, cleanup",
		play: func(s *scene) {
			s.write("wf.yaml", "name: ctl\nsteps:\n  - {id: a, run: \"touch a.up; while [ ! -f go ]; do sleep 0.05; done\"}\n"+
				"  - {id: b, needs: [a], run: \"echo b\"}\n  - {id: c, needs: [b], run: \"echo c\"}\ncleanup:\n  run: touch cleaned\n")
			done := make(chan spec.Result, 1)
			go func() {
				l, err := s.svc.PrepareRun(ops.RunRequest{Workflow: filepath.Join(s.repo, "wf.yaml"), Repo: s.repo, RunID: "ctl-1", NoWait: true})
				if err != nil {
					s.t.Error(err)
					done <- spec.Result{}
					return
				}
				res, err := s.exec(l)
				s.note("run ctl-1 --no-wait", res, err)
				done <- res
			}()
			s.await("a.up")
			s.control("ctl-1", core.Pause)
			s.write("go", "")
			<-done
			s.steps("ctl-1")
			s.control("ctl-1", core.RunOnce)
			s.goOn("go on", "ctl-1", true)
			s.steps("ctl-1")
			s.control("ctl-1", core.Continuous)
			s.goOn("go on", "ctl-1", false)
			s.control("ctl-1", core.RunCleanup)
			if !s.exists("cleaned") && s.eng.Name() == "local" {
				s.t.Error("the cleanup session did not run")
			}
		},
		want: []string{"control pause: exit 0", "run ctl-1 --no-wait: exit 4 paused", "steps: a=completed b=pending c=pending",
			"control run_once: exit 0", "go on: paused", "steps: a=completed b=completed c=pending",
			"control continuous: exit 0", "go on: completed", "control run_cleanup: exit 0"},
		// A finished run's workflow has ended on Temporal: its cleanup
		// session is refused as unsupported.
		wantTemporal: []string{"control pause: exit 0", "run ctl-1 --no-wait: exit 4 paused", "steps: a=completed b=pending c=pending",
			"control run_once: exit 0", "go on: paused", "steps: a=completed b=completed c=pending",
			"control continuous: exit 0", "go on: completed", "control run_cleanup: error exit 2 (unsupported)"},
	},
	{
		name: "budgets",
		play: func(s *scene) {
			s.write("wf.yaml", "name: budget\nbudget: {sessions: 1}\nsteps:\n  - {id: a, run: \"echo a\"}\n  - {id: b, needs: [a], run: \"echo b\"}\n")
			s.run("wf.yaml", "budget-1", false)
			s.steps("budget-1")
			s.restart("resume --budget-sessions 2", ops.RestartRequest{RunID: "budget-1", Budgets: spec.Budgets{Raise: core.Budget{Sessions: 2}}})
			s.steps("budget-1")
		},
		want: []string{"run budget-1: exit 6 budget_exceeded", "steps: a=completed b=pending",
			"resume --budget-sessions 2: exit 0 completed", "steps: a=completed b=completed"},
	},
	{
		name: "human approve, reject, timeout",
		play: func(s *scene) {
			s.write("wf.yaml", "name: human\nsteps:\n  - {id: a, run: \"echo a\"}\n  - id: ok\n    needs: [a]\n    human: {message: \"ship?\"}\n  - {id: b, needs: [ok], run: \"echo b\"}\n")
			s.run("wf.yaml", "human-1", true)
			s.decide("human-1", "ok", true)
			s.goOn("go on", "human-1", false)
			s.decide("human-1", "ok", false)
			s.steps("human-1")
			s.run("wf.yaml", "human-2", true)
			s.decide("human-2", "ok", false)
			s.goOn("go on", "human-2", false)
			s.steps("human-2")
			s.write("timeout.yaml", "name: timeout\nsteps:\n  - id: ok\n    human: {message: \"ship?\", timeout: 1s}\n  - {id: b, needs: [ok], run: \"echo b\"}\n")
			s.run("timeout.yaml", "human-3", false)
			s.steps("human-3")
		},
		want: []string{"run human-1: exit 3 waiting_on_human", "decide ok approve=true: exit 0", "go on: completed",
			"decide ok approve=false: error exit 8", "steps: a=completed ok=completed b=completed",
			"run human-2: exit 3 waiting_on_human", "decide ok approve=false: exit 0", "go on: failed", "steps: a=completed ok=failed b=pending",
			"run human-3: exit 1 failed", "steps: ok=failed b=pending"},
	},
	{
		name: "cancel",
		play: func(s *scene) {
			s.write("wf.yaml", "name: cancel\nsteps:\n  - {id: a, run: \"touch a.up; while :; do sleep 0.05; done\"}\n")
			done := s.runAsync("wf.yaml", "cancel-1")
			s.await("a.up")
			_, err := s.eng.Cancel(s.ctx, ops.CancelRequest{Repo: s.repo, RunID: "cancel-1", By: "ann"})
			s.note("cancel", spec.Result{}, err)
			<-done
			s.steps("cancel-1")
		},
		want: []string{"cancel: exit 0", "run cancel-1: exit 130 interrupted", "steps: a=pending"},
	},
	{
		name: "for_each with a loop-back inside an item",
		play: func(s *scene) {
			s.write("items.json", `{"items": [{"id": "s1"}, {"id": "s2"}]}`)
			s.write("wf.yaml", `name: items
steps:
  - id: stories
    for_each: read_json("items.json").items
    as: story
    key: story.id
    max_parallel: 2
    steps:
      - id: implement
        run: echo implement
      - id: review
        run: "if [ {{ story.id }} = s2 ] && [ $FLOW_ITERATION = 0 ]; then echo FAIL; else echo PASS; fi"
        gate:
          pass: verdict == "PASS"
          loop_back_to: implement
          max_iterations: 3
  - {id: after, needs: [stories], run: echo after}
`)
			s.run("wf.yaml", "items-1", false)
			st, err := s.eng.Status(s.ctx, s.repo, "items-1")
			if err != nil {
				s.t.Fatal(err)
			}
			for _, k := range []string{"stories[s1].review", "stories[s2].review"} {
				if ss := st.State.Steps[keytest.K(k)]; ss != nil {
					s.add(fmt.Sprintf("%s: %s, iteration %d", k, strings.ToLower(string(ss.Status)), ss.IterationCount))
				}
			}
		},
		want: []string{"run items-1: exit 0 completed", "stories[s1].review: completed, iteration 0", "stories[s2].review: completed, iteration 1"},
	},
}

// TestEndToEndScenarios plays each scenario of the lifecycle on both
// engines through ops.Engine — the local engine in this process, the
// Temporal engine on a real dev server with a worker in this process —
// and checks that they record the same, as want says.
func TestEndToEndScenarios(t *testing.T) {
	c := devServer(t)
	for i, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for _, engine := range []string{"local", "temporal"} {
				s := newScene(t, c, engine, fmt.Sprintf("scenario-%d", i))
				sc.play(s)
				got := s.lines()
				want := sc.want
				if engine == "temporal" && sc.wantTemporal != nil {
					want = sc.wantTemporal
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s engine:\n  %s\nwant:\n  %s\noutput:\n%s", engine, strings.Join(got, "\n  "), strings.Join(want, "\n  "), s.out.String())
				}
			}
		})
	}
}

// newScene makes one engine's side of a scenario in a repository of its
// own; the Temporal engine's worker serves queue there.
func newScene(t *testing.T, c client.Client, engine, queue string) *scene {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	repo := t.TempDir()
	s := &scene{t: t, ctx: ctx, repo: repo}
	fsys := afero.NewOsFs()
	s.svc = &ops.Service{FS: fsys, Clock: clock.Real(), Starter: proc.OS(), Dir: repo, Host: "scenes", PID: os.Getpid(),
		Environ: os.Environ(), User: "ann", Stdout: &bytes.Buffer{}, Alive: runlock.ProcessAlive,
		// flow cancel signals the run's runner: here, the run in flight
		// in this process.
		Signal: func(pid int, sig syscall.Signal) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.cancel != nil {
				s.cancel()
			}
			return nil
		}}
	switch engine {
	case "local":
		s.eng = s.svc.Local()
	case "temporal":
		serveE2E(t, ctx, c, queue, false, e2eActivities(fsys, repo))
		s.eng = &Engine{Client: c, TaskQueue: queue, FS: fsys, PollEvery: 50 * time.Millisecond, Prepare: s.svc.PrepareRun}
		s.svc.Engine = s.eng
	}
	return s
}
