package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
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

// Ask implements ops.Attach.Ask. After an approval it asks for each
// input the step declares, showing its description and default: an
// empty answer leaves an optional input to its default and asks again
// for a required one. A rejection asks for a reason and no inputs. The
// end of the input is no answer.
func (k *asker) Ask(q ops.Question) (core.HumanInput, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if q.Message != "" {
		fmt.Fprintf(k.out, "\n%s\n", q.Message)
	}
	for {
		fmt.Fprintf(k.out, "Approve %s of run %s? [y]es, [n]o (or wait for flow approve): ", q.Step, q.RunID)
		line, ok := k.line()
		if !ok {
			return core.HumanInput{}, false
		}
		switch strings.ToLower(line) {
		case "y", "yes":
			input, ok := k.inputs(q.Inputs)
			if !ok {
				return core.HumanInput{}, false
			}
			return core.HumanInput{Approved: true, By: k.by, Input: input}, true
		case "n", "no":
			fmt.Fprint(k.out, "Reason: ")
			reason, _ := k.line()
			return core.HumanInput{Approved: false, By: k.by, Reason: reason}, true
		}
	}
}

// inputs asks for each declared input in turn; ok is false when the
// input ends first.
func (k *asker) inputs(declared []config.Input) (map[string]any, bool) {
	given := map[string]any{}
	for _, in := range declared {
		for {
			fmt.Fprintf(k.out, "  %s: ", inputPrompt(in))
			v, ok := k.line()
			if !ok {
				return nil, false
			}
			if v != "" {
				given[in.Name] = v
				break
			}
			if !in.Required {
				break // the default is filled in by the operations layer
			}
			fmt.Fprintf(k.out, "  %s is required\n", in.Name)
		}
	}
	return given, true
}

// inputPrompt describes an input in its question: its name, then its
// description and whether it is required or what its default is.
func inputPrompt(in config.Input) string {
	var notes []string
	if in.Description != "" {
		notes = append(notes, in.Description)
	}
	switch {
	case in.Required:
		notes = append(notes, "required")
	case in.Default != "":
		notes = append(notes, "default "+in.Default)
	default:
		notes = append(notes, "optional")
	}
	return fmt.Sprintf("%s (%s)", in.Name, strings.Join(notes, "; "))
}

// line reads one line, trimmed; ok is false at the end of the input
// with nothing read.
func (k *asker) line() (string, bool) {
	s, err := k.in.ReadString('\n')
	if err != nil && s == "" {
		return "", false
	}
	return strings.TrimSpace(s), true
}
