package local

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// TestRetentionOnRunEnd: a run that ends writes its line in the history
// and removes the completed runs of its workflow that defaults.retention
// lets go — never itself, a live run, a failed one, one that waits, or
// a run of another workflow.
func TestRetentionOnRunEnd(t *testing.T) {
	const src = `name: wf
vars: {ask: "no"}
defaults:
  retention: {keep: 1}
steps:
  - {id: a, run: x}
  - id: h
    when: vars.ask == "yes"
    human: {message: go}
`
	e := newEnv(t, src)
	// Runs whose lock names pid 999 are live.
	runner := func() *Runner {
		r := e.runner(e.fs, &scripted{fs: e.fs, fn: func(c call) reply {
			if strings.Contains(c.Command, "fail") {
				return reply{Exit: 1}
			}
			return reply{}
		}})
		r.Alive = func(h runlock.Holder) bool { return h.PID == 999 }
		return r
	}
	run := func(id string, opts spec.Options) spec.Result {
		t.Helper()
		e.clock.Advance(time.Minute)
		opts.Workflow, opts.Repo, opts.RunID = e.wf, repo, id
		res, err := runner().Run(context.Background(), opts)
		if err != nil {
			t.Fatalf("run %s: %v\n%s", id, err, e.out.String())
		}
		return res
	}
	runs := func() string {
		t.Helper()
		ids, err := record.RunIDs(e.fs, repo)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		return strings.Join(ids, " ")
	}
	history := func() string {
		t.Helper()
		h, err := record.ReadHistory(e.fs, repo)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, l := range h {
			s = append(s, l.RunID+":"+string(l.Status))
		}
		return strings.Join(s, " ")
	}

	// a0 completes, and a runner that is alive takes it again.
	run("a0", spec.Options{})
	if _, err := runlock.Acquire(e.fs, filepath.Join(record.RunDir(repo, "a0"), record.LockFile), runlock.Holder{PID: 999, Host: "test"}, func(runlock.Holder) bool { return false }); err != nil {
		t.Fatal(err)
	}
	// w1 waits on a human: it has not ended, and leaves no line.
	if res := run("w1", spec.Options{Vars: map[string]string{"ask": "yes"}, NoWait: true}); res.Status != core.RunWaitingOnHuman {
		t.Fatalf("w1: %s", res.Status)
	}
	if got := history(); got != "a0:completed" {
		t.Errorf("history after a run that waits: %q", got)
	}
	e.setWorkflow(strings.Replace(src, "run: x", "run: fail", 1))
	if res := run("f1", spec.Options{}); res.Status != core.RunFailed {
		t.Fatalf("f1: %s", res.Status)
	}
	e.setWorkflow(src)
	run("c1", spec.Options{})
	e.setWorkflow(strings.Replace(src, "name: wf", "name: other", 1))
	run("o1", spec.Options{})
	run("o2", spec.Options{})
	e.setWorkflow(src)
	if got := runs(); got != "a0 c1 f1 o2 w1" {
		t.Errorf("runs after o2: %q", got)
	}
	run("c2", spec.Options{})
	if got := runs(); got != "a0 c2 f1 o2 w1" {
		t.Errorf("runs after c2: %q", got)
	}
	// w1 is decided and ends: it is not the newest run of wf, and is
	// kept all the same, being the run that ends.
	decision := `{"approved": true, "at": "` + core.Time{Time: e.clock.Now()}.String() + `"}`
	if err := afero.WriteFile(e.fs, record.RunDir(repo, "w1")+"/manual_inputs/w1__h.json", []byte(decision), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := run("w1", spec.Options{Resume: true, NoWait: true}); res.Status != core.RunCompleted {
		t.Fatalf("w1 resumed: %s", res.Status)
	}
	if got := runs(); got != "a0 c2 f1 o2 w1" {
		t.Errorf("runs after w1 ended: %q", got)
	}
	if got, want := history(), "a0:completed f1:failed c1:completed o1:completed o2:completed c2:completed w1:completed"; got != want {
		t.Errorf("history %q\nwant %q", got, want)
	}
	out := e.out.String()
	for _, want := range []string{"retention: removed run c1 (not one of the 1 newest completed runs of wf)", "retention: removed run o1", "retention: kept run a0: live: its runner (pid 999 on test) holds it"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "the run that is ending") {
		t.Errorf("the ending run is reported:\n%s", out)
	}
}
