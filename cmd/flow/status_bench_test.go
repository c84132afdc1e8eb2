package main

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// BenchmarkPrintStatus prints the table of a finished run of 5,000
// steps, as flow status does.
func BenchmarkPrintStatus(b *testing.B) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := &core.State{RunID: "r1", WorkflowName: "seq", Status: core.RunCompleted, Steps: map[core.StepKey]*core.StepState{}}
	for i := range 5000 {
		id := fmt.Sprintf("s%d", i+1)
		start, end := core.Time{Time: t0.Add(time.Duration(i) * time.Millisecond)}, core.Time{Time: t0.Add(time.Duration(i+1) * time.Millisecond)}
		st.StepOrder = append(st.StepOrder, keytest.K(id))
		st.Steps[keytest.K(id)] = &core.StepState{Status: core.Completed, Attempts: 1, StartedAt: &start, EndedAt: &end}
	}
	v := ops.Status{State: st, Liveness: record.Liveness{State: record.LiveDone, Reason: "the run completed"}, At: t0}
	for b.Loop() {
		printStatus(io.Discard, v, false)
	}
}
