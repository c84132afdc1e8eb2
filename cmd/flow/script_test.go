package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

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
			"exits": cmdExits,
		},
		Setup: func(env *testscript.Env) error {
			// Scripts reach the shipped workflows and fake agents here.
			root, err := os.Getwd()
			if err != nil {
				return err
			}
			env.Setenv("FLOW_SRC", root+"/../..")
			env.Setenv("USER", "tester")
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
