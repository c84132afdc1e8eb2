package local

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
	"github.com/spf13/afero"
)

const storiesWorkflow = `
name: stories
steps:
  - id: breakdown
    run: make-stories
  - id: stories
    for_each: read_json("stories.json").stories
    as: story
    key: story.id
    max_parallel: 2
    steps:
      - id: implement
        run: implement "{{ story.title }}" {{ index }}
      - id: review
        run: review {{ story.id }} after {{ steps.implement.status }}
        gate: {pass: verdict == "PASS", loop_back_to: implement, max_iterations: 3}
  - id: integrate
    run: integrate {{ len(steps.stories.items) }} {{ steps.stories.items[1].key }} {{ steps.stories.items[1].review.verdict }}
`

// storiesScript writes three stories when breakdown runs; the review of
// "signup" fails once.
func storiesScript(fsys afero.Fs) *scripted {
	var mu sync.Mutex
	reviews := map[string]int{}
	return &scripted{fn: func(c call) reply {
		switch c.Step {
		case "breakdown":
			_ = afero.WriteFile(fsys, repo+"/stories.json", []byte(`{"stories":[{"id":"login","title":"Log in"},{"id":"signup","title":"Sign up"},{"id":"reset pw","title":"Reset"}]}`), 0o644)
		case "review":
			mu.Lock()
			defer mu.Unlock()
			reviews[c.Key]++
			if c.Key == "stories[signup].review" && reviews[c.Key] == 1 {
				return reply{Out: "missing tests\nFAIL\n"}
			}
			return reply{Out: "PASS\n"}
		}
		return reply{Out: "done\n"}
	}}
}

// TestLoopRun runs a loop through the real driver: the list comes from
// a file the first step wrote, each instance gets its item in its
// templates and environment, one item loops back inside itself, and
// the step after the loop reads the items' facts.
func TestLoopRun(t *testing.T) {
	e := newEnv(t, storiesWorkflow)
	s := storiesScript(e.fs)
	res := e.run(s, spec.Options{})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s\n%s", res.ExitCode, res.Reason, e.out.String())
	}
	st := e.state(e.fs)
	var impl []string
	for _, c := range s.calls {
		switch c.Step {
		case "implement":
			impl = append(impl, c.Key)
			item := map[string]string{"stories[login].implement": `{"id":"login","title":"Log in"}`,
				"stories[signup].implement": `{"id":"signup","title":"Sign up"}`, "stories[reset_pw].implement": `{"id":"reset pw","title":"Reset"}`}[c.Key]
			if c.Env["FLOW_ITEM"] != item || !strings.HasPrefix(c.Key, "stories["+c.Env["FLOW_ITEM_KEY"]+"]") {
				t.Errorf("%s: FLOW_ITEM %s FLOW_ITEM_KEY %s", c.Key, c.Env["FLOW_ITEM"], c.Env["FLOW_ITEM_KEY"])
			}
		case "integrate":
			if c.Command != "integrate 3 signup PASS" {
				t.Errorf("integrate ran %q", c.Command)
			}
		}
		if c.Key == "stories[reset_pw].implement" && (c.Command != `implement "Reset" 2` || c.Env["FLOW_ITEM_INDEX"] != "2") {
			t.Errorf("reset_pw: %q index %s", c.Command, c.Env["FLOW_ITEM_INDEX"])
		}
		if c.Key == "stories[login].review" && c.Command != "review login after COMPLETED" {
			t.Errorf("login review: %q", c.Command)
		}
	}
	slices.Sort(impl)
	if want := []string{"stories[login].implement", "stories[reset_pw].implement", "stories[signup].implement", "stories[signup].implement"}; !slices.Equal(impl, want) {
		t.Errorf("implement sessions %v", impl)
	}
	if s := st.Steps[keytest.K("stories[signup].implement")]; s.IterationCount != 1 || s.Status != core.Completed {
		t.Errorf("signup.implement %s at %d", s.Status, s.IterationCount)
	}
	if s := st.Steps[keytest.K("stories[login].implement")]; s.IterationCount != 0 {
		t.Errorf("the loop-back of signup touched login: iteration %d", s.IterationCount)
	}
	ls := st.Steps[keytest.K("stories")]
	if ls.Status != core.Completed || *ls.LoopIndex != 3 || !*ls.LoopCompleted || len(ls.LoopItems) != 3 {
		t.Errorf("loop: %+v", ls)
	}
	for _, name := range []string{"stories.signup.implement.0.1.log", "stories.signup.implement.1.1.log", "stories.reset_pw.review.0.1.log"} {
		if ok, _ := afero.Exists(e.fs, filepath.Join(record.RunDir(repo, "r1"), record.LogsDir, name)); !ok {
			t.Errorf("no log %s", name)
		}
	}
}

// TestLoopListRecorded: the items are evaluated once, when the loop
// starts; a resumed run uses the recorded list even when its source
// changed.
func TestLoopListRecorded(t *testing.T) {
	e := newEnv(t, storiesWorkflow)
	s := storiesScript(e.fs)
	var once sync.Once
	stop := &scripted{fs: e.fs, fn: func(c call) reply {
		if c.Step == "review" {
			// The story file changes while the loop runs, and the runner
			// is stopped.
			interrupted := false
			once.Do(func() {
				_ = afero.WriteFile(e.fs, repo+"/stories.json", []byte(`{"stories":[{"id":"other","title":"Other"}]}`), 0o644)
				interrupted = true
			})
			if interrupted {
				return reply{Interrupted: true}
			}
			// The other item in flight may review before the runner
			// stops: as the script says.
		}
		return s.fn(c)
	}}
	res := e.run(stop, spec.Options{RunID: "r1"})
	if res.Status != core.RunInterrupted {
		t.Fatalf("status %s", res.Status)
	}
	res = e.run(storiesScript(e.fs), spec.Options{RunID: "r1", Resume: true})
	if res.ExitCode != 0 {
		t.Fatalf("resume: exit %d %s\n%s", res.ExitCode, res.Reason, e.out.String())
	}
	st := e.state(e.fs)
	if got := st.Steps[keytest.K("stories")].Items; len(got) != 3 || got[0].Key != "login" {
		t.Errorf("items after resume: %+v", got)
	}
	if st.Steps[keytest.K("stories[other].implement")] != nil {
		t.Error("resume evaluated the list again")
	}
}

const faultLoopWorkflow = `
name: faults
steps:
  - id: a
    run: x
  - id: l
    for_each: ["p", "q", "r"]
    key: item
    max_parallel: 2
    steps:
      - {id: b, run: x}
      - id: review
        run: x
        gate: {pass: verdict == "PASS", loop_back_to: b}
  - {id: c, run: x}
`

// TestLoopFaultInjection fails the k-th write, sync and rename of a run
// with a parallel loop, for every k, then resumes with a fresh runner on
// what the file system holds: the run completes like an undisturbed
// one, and no instance whose completion was recorded runs again.
func TestLoopFaultInjection(t *testing.T) {
	script := func() *scripted {
		return &scripted{fn: func(c call) reply {
			if c.Step == "review" && c.Key == "l[q].review" && c.Iteration == 0 {
				return reply{Out: "FAIL\n"}
			}
			if c.Step == "review" {
				return reply{Out: "PASS\n"}
			}
			return reply{}
		}}
	}
	// q's b and review run again by its own loop-back.
	faultInjection(t, faultLoopWorkflow, script, []bool{true}, func(key string) bool { return strings.HasPrefix(key, "l[q].") })
}

// TestLoopRetryRerunsFailedItems: flow retry re-runs the failed item's
// failed instance only, and the items that never started.
func TestLoopRetryRerunsFailedItems(t *testing.T) {
	src := strings.Replace(faultLoopWorkflow, "max_parallel: 2", "max_parallel: 1", 1)
	e := newEnv(t, src)
	first := &scripted{fn: func(c call) reply {
		if c.Key == "l[q].b" {
			return reply{Exit: 1}
		}
		if c.Step == "review" {
			return reply{Out: "PASS\n"}
		}
		return reply{}
	}}
	res := e.run(first, spec.Options{RunID: "r1"})
	if res.ExitCode != 1 || !strings.Contains(res.Reason, "1 of 3 items failed: q; the items after it did not run") {
		t.Fatalf("first run: %d %s", res.ExitCode, res.Reason)
	}
	second := &scripted{fn: func(c call) reply {
		if c.Step == "review" {
			return reply{Out: "PASS\n"}
		}
		return reply{}
	}}
	res = e.run(second, spec.Options{RunID: "r1", Resume: true, Retry: true})
	if res.ExitCode != 0 {
		t.Fatalf("retry: %d %s\n%s", res.ExitCode, res.Reason, e.out.String())
	}
	var keys []string
	for _, c := range second.calls {
		keys = append(keys, c.Key)
	}
	if want := []string{"l[q].b", "l[q].review", "l[r].b", "l[r].review", "c"}; !slices.Equal(keys, want) {
		t.Errorf("retry ran %v, want %v", keys, want)
	}
	if st := e.state(e.fs); st.Steps[keytest.K("l[q].b")].Status != core.Completed || *st.Steps[keytest.K("l")].LoopIndex != 3 {
		t.Errorf("after retry: %s, loop_index %d", st.Steps[keytest.K("l[q].b")].Status, *st.Steps[keytest.K("l")].LoopIndex)
	}
}

// TestLoopStartAtInstance restarts one item of an ended run at one of
// its instances: that item runs from there, and then what follows the
// loop; the other items are kept.
func TestLoopStartAtInstance(t *testing.T) {
	e := newEnv(t, faultLoopWorkflow)
	pass := func() *scripted {
		return &scripted{fn: func(c call) reply {
			if c.Step == "review" {
				return reply{Out: "PASS\n"}
			}
			return reply{}
		}}
	}
	if res := e.run(pass(), spec.Options{RunID: "r1"}); res.ExitCode != 0 {
		t.Fatalf("first run: %d %s", res.ExitCode, res.Reason)
	}
	again := pass()
	res := e.run(again, spec.Options{RunID: "r1", Resume: true, StartAt: core.StepKey{Loop: "l", Item: "q", Step: keytest.K("review").String()}})
	if res.ExitCode != 0 {
		t.Fatalf("restart: %d %s\n%s", res.ExitCode, res.Reason, e.out.String())
	}
	var keys []string
	for _, c := range again.calls {
		keys = append(keys, c.Key)
	}
	if want := []string{"l[q].review", "c"}; !slices.Equal(keys, want) {
		t.Errorf("restart ran %v, want %v", keys, want)
	}
	st := e.state(e.fs)
	if st.Generation != 1 || st.Steps[keytest.K("l")].Status != core.Completed {
		t.Errorf("generation %d, loop %s", st.Generation, st.Steps[keytest.K("l")].Status)
	}
	if ok, _ := afero.Exists(e.fs, filepath.Join(record.RunDir(repo, "r1"), record.LogsDir, "l.q.review.g1.0.1.log")); !ok {
		t.Error("the restarted instance's log is not named in generation 1")
	}
}

// TestLoopItemsOfAnyList: for_each takes any list an expression gives
// (1..3 is a list of ints); a value that is not a list fails the loop
// step with its type and the expression's position.
func TestLoopItemsOfAnyList(t *testing.T) {
	e := newEnv(t, "name: r\nsteps:\n  - id: l\n    for_each: 1..3\n    steps:\n      - {id: a, run: 'n {{ item * 10 }}'}\n")
	s := &scripted{fn: func(call) reply { return reply{} }}
	if res := e.run(s, spec.Options{}); res.ExitCode != 0 {
		t.Fatalf("exit %d %s", res.ExitCode, res.Reason)
	}
	var cmds []string
	for _, c := range s.calls {
		cmds = append(cmds, c.Command)
	}
	if !slices.Equal(cmds, []string{"n 10", "n 20", "n 30"}) {
		t.Errorf("ran %v", cmds)
	}
	e = newEnv(t, "name: r\nsteps:\n  - id: l\n    for_each: '{\"a\": 1}'\n    steps:\n      - {id: a, run: x}\n")
	res := e.run(&scripted{fn: func(call) reply { return reply{} }}, spec.Options{})
	if ls := e.state(e.fs).Steps[keytest.K("l")]; res.ExitCode != 1 || ls.Status != core.Failed || !strings.Contains(deref(ls.LastError), "workflow.yaml:4:15: for_each: `{\"a\": 1}` is a map, not a list") {
		t.Errorf("exit %d, loop %s: %s", res.ExitCode, ls.Status, deref(ls.LastError))
	}
}

// TestLoopEditedBody: a body edited between runs applies to the items
// not yet started; a started item keeps the body it started with.
func TestLoopEditedBody(t *testing.T) {
	src := `
name: edit
steps:
  - id: l
    for_each: [x, y]
    key: item
    steps:
      - {id: build, run: build}
      - {id: signoff, human: {message: ok}}
`
	e := newEnv(t, src)
	s := &scripted{fn: func(call) reply { return reply{} }}
	if res := e.run(s, spec.Options{NoWait: true}); res.Status != core.RunWaitingOnHuman {
		t.Fatalf("status %s", res.Status)
	}
	e.setWorkflow(src + "      - {id: extra, run: extra}\n")
	if _, err := record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("l[x].signoff"), core.HumanInput{Approved: true, By: "t"}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	res := e.run(s, spec.Options{Resume: true, NoWait: true})
	if res.Status != core.RunWaitingOnHuman {
		t.Fatalf("status %s: %s", res.Status, res.Reason)
	}
	st := e.state(e.fs)
	if st.Steps[keytest.K("l[x].extra")] != nil || st.Steps[keytest.K("l[y].extra")] == nil {
		t.Errorf("extra: x %v, y %v", st.Steps[keytest.K("l[x].extra")], st.Steps[keytest.K("l[y].extra")])
	}
	want := []string{"l", "l[x].build", "l[x].signoff", "l[y].build", "l[y].signoff", "l[y].extra"}
	if !slices.Equal(core.KeyStrings(st.StepOrder), want) {
		t.Errorf("order %v", st.StepOrder)
	}
	if _, err := record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("l[y].signoff"), core.HumanInput{Approved: true, By: "t"}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if res := e.run(s, spec.Options{Resume: true}); res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Reason)
	}
	if n := s.count("extra"); n != 1 {
		t.Errorf("extra ran %d times, want once (item y)", n)
	}
}
