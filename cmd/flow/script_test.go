package main

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as the flow command inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"flow": func() { os.Exit(run()) },
	})
}

// TestScripts runs the end-to-end scripts in testdata/script: the real
// flow binary against real processes.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testdata/script",
		RequireExplicitExec: true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":   cmdExits,
			"waitfor": cmdWaitFor,
			"alive":   cmdAlive,
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
	})
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
//	waitfor [-t SECONDS] FILE [REGEXP]
//
// It fails after the timeout (10 s unless given). Scripts use it to wait
// for a background run to reach a point instead of sleeping.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	timeout := 10 * time.Second
	if len(args) >= 2 && args[0] == "-t" {
		secs, err := strconv.ParseFloat(args[1], 64)
		if err != nil {
			ts.Fatalf("waitfor: bad timeout %q", args[1])
		}
		timeout = time.Duration(secs * float64(time.Second))
		args = args[2:]
	}
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfor [-t SECONDS] FILE [REGEXP]")
	}
	var re *regexp.Regexp
	if len(args) == 2 {
		var err error
		if re, err = regexp.Compile("(?m)" + args[1]); err != nil {
			ts.Fatalf("waitfor: %v", err)
		}
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(path)
		if err == nil && (re == nil || re.Match(b)) {
			return
		}
		if time.Now().After(deadline) {
			if re != nil {
				ts.Fatalf("waitfor: %s did not match %q within %v; it holds:\n%s", args[0], args[1], timeout, b)
			}
			ts.Fatalf("waitfor: %s did not appear within %v", args[0], timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdAlive checks that the processes whose ids the files hold are alive,
// or with ! that none is. A zombie (exited but not yet reaped, as
// orphans reparented to an init that reaps slowly are) counts as gone.
// With -t, ! alive gives the processes that long to end, for deaths the
// kernel delivers asynchronously (a parent-death signal).
//
//	! alive session.pid child.pid
//	! alive -t 2 session.pid
func cmdAlive(ts *testscript.TestScript, neg bool, args []string) {
	var within time.Duration
	if len(args) >= 2 && args[0] == "-t" {
		secs, err := strconv.ParseFloat(args[1], 64)
		if err != nil || !neg {
			ts.Fatalf("usage: ! alive -t SECONDS PIDFILE...")
		}
		within = time.Duration(secs * float64(time.Second))
		args = args[2:]
	}
	if len(args) == 0 {
		ts.Fatalf("usage: alive [-t SECONDS] PIDFILE...")
	}
	deadline := time.Now().Add(within)
	for _, f := range args {
		b, err := os.ReadFile(ts.MkAbs(f))
		ts.Check(err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			ts.Fatalf("alive: %s holds %q, not a pid", f, b)
		}
		live := processLive(pid)
		for neg && live && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			live = processLive(pid)
		}
		if live == neg {
			if neg {
				ts.Fatalf("process %d (%s) is still running", pid, f)
			}
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
