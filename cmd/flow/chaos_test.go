package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chaosWorkflow has steps that each append their name to trace, then
// take a little while, so that kills land inside sessions as well as
// between them.
const chaosWorkflow = `name: chaos
steps:
%s`

const chaosSteps = 20

// TestKillNine kills the real flow with SIGKILL at random instants of a
// multi-step run, up to 25 times, resuming after each kill, until the run
// completes. Then every step has appended its line exactly once, except
// a step that was in flight at a kill, which may have run again; a
// completed step never runs twice. It has no deadline of its own: after
// 25 kills the next runner is left to finish, and the test binary's
// -timeout bounds a run that never does.
func TestKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes for several seconds")
	}
	flow, err := exec.LookPath("flow") // installed by TestMain
	if err != nil {
		t.Fatalf("flow is not on PATH: %v", err)
	}
	dir := t.TempDir()
	var steps strings.Builder
	for i := 1; i <= chaosSteps; i++ {
		fmt.Fprintf(&steps, "  - id: s%d\n    run: echo s%d >> trace; sleep 0.0%d\n", i, i, i%4+1)
	}
	if err := os.WriteFile(filepath.Join(dir, "wf.yaml"), []byte(fmt.Sprintf(chaosWorkflow, steps.String())), 0o644); err != nil {
		t.Fatal(err)
	}

	// Under -race, every flow would otherwise sleep a second as it exits.
	t.Setenv("GORACE", "atexit_sleep_ms=0")

	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)

	inFlight := map[string]bool{} // steps RUNNING in the record after a kill
	kills, done := 0, false
	for !done {
		args := []string{"resume", "c"}
		if !chaosRunExists(dir) {
			args = []string{"run", "wf.yaml", "--run-id", "c"}
		}
		events := filepath.Join(dir, ".agents", "runs", "c", "events.jsonl")
		cmd := exec.Command(flow, args...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()

		// One kill in four lands at any instant from the start, start-up
		// included; the others once this runner has appended to the
		// log, within the next few sessions (start-up is slow under
		// -race, and kills there would leave the steps untouched).
		var kill <-chan time.Time
		if kills < 25 {
			if rng.Intn(4) > 0 {
				chaosAwaitGrowth(events, exited)
			}
			kill = time.After(time.Duration(rng.Intn(60)) * time.Millisecond)
		}
		select {
		case err := <-exited:
			var ee *exec.ExitError
			switch {
			case err == nil:
				done = true
			case errors.As(err, &ee):
				t.Fatalf("flow %s exited %d after %d kills:\n%s", strings.Join(args, " "), ee.ExitCode(), kills, out.Bytes())
			default:
				t.Fatal(err)
			}
		case <-kill:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			kills++
			for _, id := range chaosRunning(t, flow, dir) {
				inFlight[id] = true
			}
		}
	}
	t.Logf("%d kills; steps in flight at a kill: %v", kills, inFlight)

	// Give any session that escaped its runner time to show itself.
	time.Sleep(200 * time.Millisecond)
	b, err := os.ReadFile(filepath.Join(dir, "trace"))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		count[l]++
	}
	for i := 1; i <= chaosSteps; i++ {
		id := fmt.Sprintf("s%d", i)
		switch n := count[id]; {
		case n == 0:
			t.Errorf("step %s never ran", id)
		case n > 1 && !inFlight[id]:
			t.Errorf("step %s ran %d times but was never in flight at a kill", id, n)
		}
	}
	if t.Failed() {
		t.Logf("trace:\n%s", b)
	}
}

// chaosRunExists reports whether the run's record has begun.
func chaosRunExists(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, ".agents", "runs", "c", "events.jsonl"))
	return err == nil && fi.Size() > 0
}

// chaosRunning returns the steps the record shows RUNNING, as flow
// status --json reads them.
func chaosRunning(t *testing.T, flow, dir string) []string {
	t.Helper()
	if !chaosRunExists(dir) {
		return nil
	}
	cmd := exec.Command(flow, "status", "c", "--json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("flow status after a kill: %v\n%s", err, out)
	}
	var st struct {
		Steps map[string]struct {
			Status string `json:"status"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("flow status --json: %v\n%s", err, out)
	}
	var ids []string
	for id, s := range st.Steps {
		if s.Status == "RUNNING" {
			ids = append(ids, id)
		}
	}
	return ids
}

// chaosAwaitGrowth waits until the event log grows past its size when
// called, or the runner exits (its exit is put back into exited): one
// or the other always comes, so it has no deadline.
func chaosAwaitGrowth(events string, exited chan error) {
	size := func() int64 {
		fi, err := os.Stat(events)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	initial := size()
	for size() <= initial {
		select {
		case err := <-exited:
			exited <- err
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}
