// Command flow runs declarative workflows of agent and command sessions.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/flow-run/flow/internal/sandbox"
)

// The references in docs/reference are written from the command tree
// and config's key table by TestReference (reference_test.go), which
// fails while they differ from what the code says.
//go:generate go test -run TestReference -update .

func main() {
	// flow re-executed as a session's sandbox launcher becomes it here
	// and never returns (internal/sandbox).
	sandbox.Main()
	os.Exit(run())
}

// run is main without the exit, so that tests can register it as the
// flow command of their scripts.
//
// The first SIGINT or SIGTERM stops a run gracefully (its sessions get
// SIGTERM and 10 s); a second one ends flow at once. SIGPIPE ends
// nothing (see below). The sessions die
// with it (their parent-death signal), and flow resume recovers the run
// as after a crash.
func run() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// A closed stdout or stderr (flow run wf.yaml | head -1) never kills
	// a run: with SIGPIPE notified, a write to the closed pipe fails
	// with EPIPE instead of ending flow, and flow stops writing there
	// and goes on; the run's record is the truth. The channel is never
	// read: a signal that finds it full is dropped. Sessions keep the
	// default SIGPIPE: a caught signal is reset when they start.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		cancel()
		if _, ok := <-sigs; ok {
			fmt.Fprintln(os.Stderr, "flow: interrupted again: stopping at once")
			os.Exit(ExitInterrupted)
		}
	}()
	return Run(ctx, os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}
