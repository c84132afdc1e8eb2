package main

import (
	"os"
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
