package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/sandbox"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as the flow command inside scripts.
func TestMain(m *testing.M) {
	// A test that runs flow in this process (a worker, in the Temporal
	// end-to-end tests) starts its sessions' launchers as this binary.
	sandbox.Main()
	testscript.Main(m, map[string]func(){
		"flow": func() { sandbox.Main(); os.Exit(run()) },
	})
}

// TestScripts runs the end-to-end scripts in testdata/script: the real
// flow binary against real processes.
func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams("../../testdata/script"))
}

// TestHostile runs the hostile-input corpus in testdata/hostile: one
// script per kind of hostile or careless input, each of which must end
// in a clear, positioned error or a failed step, within bounded time
// and memory (the bounded command), losing no finished step.
func TestHostile(t *testing.T) {
	testscript.Run(t, scriptParams("../../testdata/hostile"))
}

func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":   cmdExits,
			"waitfor": cmdWaitFor,
			"alive":   cmdAlive,
			"bounded": cmdBounded,
		},
		Setup: func(env *testscript.Env) error {
			// Scripts reach the shipped workflows and fake agents here.
			root, err := os.Getwd()
			if err != nil {
				return err
			}
			env.Setenv("FLOW_SRC", root+"/../..")
			env.Setenv("USER", "tester")
			// Under -race, every flow would otherwise sleep a second as
			// it exits.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond != "sandbox" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			return sandboxWorks()
		},
	}
}

// sandboxWorks reports whether sessions can be sandboxed on this
// machine, for the scripts' [sandbox] condition. Where they cannot and
// FLOW_REQUIRE_SANDBOX=1 (as CI sets it), that is an error, not a skip.
var sandboxWorks = sync.OnceValues(func() (bool, error) {
	exe, err := os.Executable()
	if err != nil {
		return false, err
	}
	// The launcher is this test binary started under the name flow, as
	// the scripts' flow command is.
	dir, err := os.MkdirTemp("", "flow-sandbox-cond-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	self := filepath.Join(dir, "flow")
	if err := os.Symlink(exe, self); err != nil {
		return false, err
	}
	perr := sandbox.Launcher{Self: self}.Probe(true)
	if perr != nil && os.Getenv("FLOW_REQUIRE_SANDBOX") == "1" {
		return false, fmt.Errorf("FLOW_REQUIRE_SANDBOX=1, but sessions cannot be sandboxed here: %v", perr)
	}
	return perr == nil, nil
})

// cmdBounded runs a program and checks its exit code, like exits, and
// its peak resident memory (512 MiB unless -mem says otherwise; the
// race detector's own overhead fits well within it). It waits for the
// program without a deadline of its own — a program that never ends is
// bounded by the test binary's -timeout — and reports how long it took.
// Its output goes to bounded.stdout and bounded.stderr in the work
// directory. -t SECONDS is accepted, and ignored, for older scripts.
//
//	bounded [-mem MIB] CODE PROGRAM [ARGS...]
func cmdBounded(ts *testscript.TestScript, neg bool, args []string) {
	memMiB := int64(512)
	for len(args) >= 2 && strings.HasPrefix(args[0], "-") {
		n, err := strconv.ParseFloat(args[1], 64)
		if err != nil {
			ts.Fatalf("bounded: bad %s %q", args[0], args[1])
		}
		switch args[0] {
		case "-t":
		case "-mem":
			memMiB = int64(n)
		default:
			ts.Fatalf("bounded: unknown flag %s", args[0])
		}
		args = args[2:]
	}
	if neg || len(args) < 2 {
		ts.Fatalf("usage: bounded [-mem MIB] CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("bounded: bad code %q", args[0])
	}
	path := ""
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if p := filepath.Join(dir, args[1]); fileExists(p) {
			path = p
			break
		}
	}
	if path == "" {
		ts.Fatalf("bounded: %s is not on the script's PATH", args[1])
	}
	cmd := exec.Command(path, args[2:]...)
	cmd.Dir = ts.Getenv("WORK")
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "WORK", "USER", "FLOW_SRC", "GORACE"} {
		cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	ts.Logf("%s took %v", args[1], time.Since(start).Round(time.Millisecond))
	ts.Check(os.WriteFile(ts.MkAbs("bounded.stdout"), stdout.Bytes(), 0o644))
	ts.Check(os.WriteFile(ts.MkAbs("bounded.stderr"), stderr.Bytes(), 0o644))
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		ts.Fatalf("bounded: %v", err)
	}
	if got := cmd.ProcessState.ExitCode(); got != want {
		ts.Fatalf("%s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", args[1], got, want, stdout.Bytes(), stderr.Bytes())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > memMiB<<10 {
		ts.Fatalf("%s peaked at %d MiB of memory, over %d MiB", args[1], ru.Maxrss>>10, memMiB)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// cmdExits runs a program and checks its exit code:
//
//	exits 3 flow run --no-wait wf.yaml
//
// Its stdout and stderr are kept for the stdout and stderr commands.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// cmdWaitFor polls until a file exists and, when a pattern is given, its
// content matches it:
//
//	waitfor FILE [REGEXP]
//
// It has no deadline of its own: what never comes is bounded by the test
// binary's -timeout (-t SECONDS is accepted, and ignored, for older
// scripts). Scripts use it to wait for a background run to reach a point
// instead of sleeping.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) >= 2 && args[0] == "-t" {
		args = args[2:]
	}
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfor FILE [REGEXP]")
	}
	var re *regexp.Regexp
	if len(args) == 2 {
		var err error
		if re, err = regexp.Compile("(?m)" + args[1]); err != nil {
			ts.Fatalf("waitfor: %v", err)
		}
	}
	path := ts.MkAbs(args[0])
	for {
		b, err := os.ReadFile(path)
		if err == nil && (re == nil || re.Match(b)) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdAlive checks that the processes whose ids the files hold are alive,
// or with ! that none is: it waits, without a deadline of its own, for
// them to end, for deaths the kernel delivers asynchronously (a
// parent-death signal, a kill of a group); what never ends is bounded by
// the test binary's -timeout. A zombie (exited but not yet reaped, as
// orphans reparented to an init that reaps slowly are) counts as gone.
// -t SECONDS is accepted, and ignored, for older scripts.
//
//	alive session.pid
//	! alive session.pid child.pid
func cmdAlive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) >= 2 && args[0] == "-t" {
		args = args[2:]
	}
	if len(args) == 0 {
		ts.Fatalf("usage: alive PIDFILE...")
	}
	for _, f := range args {
		b, err := os.ReadFile(ts.MkAbs(f))
		ts.Check(err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			ts.Fatalf("alive: %s holds %q, not a pid", f, b)
		}
		live := processLive(pid)
		for neg && live {
			time.Sleep(20 * time.Millisecond)
			live = processLive(pid)
		}
		if !neg && !live {
			ts.Fatalf("process %d (%s) is not running", pid, f)
		}
	}
}

// processLive reports whether pid is a process that has not exited.
func processLive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}
