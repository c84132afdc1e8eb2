package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/flow-run/flow/runner"
)

// asker asks a person at the terminal to decide human steps, one
// question at a time.
type asker struct {
	mu  sync.Mutex
	in  *bufio.Reader
	out io.Writer
	// by names the person who answers.
	by string
}

// Ask implements ops.Attach.Ask.
func (k *asker) Ask(runID, step, message string) (runner.HumanInput, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if message != "" {
		fmt.Fprintf(k.out, "\n%s\n", message)
	}
	for {
		fmt.Fprintf(k.out, "Approve %s of run %s? [y]es, [n]o (or wait for flow approve): ", step, runID)
		line, err := k.in.ReadString('\n')
		if err != nil && line == "" {
			return runner.HumanInput{}, false
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return runner.HumanInput{Approved: true, By: k.by}, true
		case "n", "no":
			fmt.Fprint(k.out, "Reason: ")
			reason, _ := k.in.ReadString('\n')
			return runner.HumanInput{Approved: false, By: k.by, Reason: strings.TrimSpace(reason)}, true
		}
	}
}
