// Command flow runs declarative workflows of agent and command sessions.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run())
}

// run is main without the exit, so that tests can register it as the
// flow command of their scripts.
func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal stops the run gracefully (sessions get SIGTERM and
	// 10 s); a second one, with the handler gone, ends flow at once. The
	// sessions die with it, and flow resume recovers the run.
	go func() {
		<-ctx.Done()
		stop()
	}()
	return Run(ctx, os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}
