package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"
)

// benchState returns a state of n finished command steps, as a large
// run's snapshot holds them: completed at the first attempt, exit code
// 0, one log, a report, no metrics and no signals.
func benchState(n int) *State {
	at := &Time{Time: time.Date(2025, 1, 15, 14, 30, 0, 123456000, time.UTC)}
	end := &Time{Time: at.Add(1500 * time.Millisecond)}
	s := &State{SchemaVersion: SchemaVersion, RunID: "r1", WorkflowName: "bench", CreatedAt: at, UpdatedAt: end,
		Status: RunRunning, Vars: map[string]string{}, VarOverrides: map[string]string{}, Steps: make(map[StepKey]*StepState, n)}
	for i := range n {
		id := fmt.Sprintf("step-%05d", i)
		st := newStepState()
		st.Status, st.Attempts, st.StartedAt, st.EndedAt = Completed, 1, at, end
		st.ReportPath = strp("/runs/r1/reports/" + id + ".json")
		st.LogPath = "/runs/r1/logs/" + id + ".log"
		st.Logs = []string{st.LogPath}
		st.ExitCode = intp(0)
		s.StepOrder = append(s.StepOrder, Key(id))
		s.Steps[Key(id)] = st
	}
	return s
}

// BenchmarkStateEncode encodes the snapshot of a run of 5,000 finished
// steps, indented as run_state.json holds it and compact as
// MarshalJSON writes it.
func BenchmarkStateEncode(b *testing.B) {
	s := benchState(5000)
	for _, indent := range []string{"  ", ""} {
		name := "indented"
		if indent == "" {
			name = "compact"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := s.encode(io.Discard, indent); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStateEncodingErrors: a step that cannot be encoded (a time
// outside years 0-9999, raw JSON that is not JSON) fails the encoding
// of its state.
func TestStateEncodingErrors(t *testing.T) {
	far := &Time{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	for name, st := range map[string]*StepState{
		"started":  {StartedAt: far},
		"raw":      {LoopItems: []json.RawMessage{json.RawMessage(`{`)}},
		"feedback": {Feedback: &Feedback{Report: json.RawMessage(`nope`)}},
	} {
		t.Run(name, func(t *testing.T) {
			s := &State{RunID: "r", StepOrder: []StepKey{Key("a")}, Steps: map[StepKey]*StepState{Key("a"): st}}
			if _, err := s.Indented(); err == nil {
				t.Error("Indented: no error")
			}
			if _, err := json.Marshal(s); err == nil {
				t.Error("MarshalJSON: no error")
			}
		})
	}
}

// FuzzDecodeSteps: whatever bytes a snapshot's steps hold, decoding
// them fails or gives steps that encode; what they encode to decodes
// and encodes again to the same bytes (a snapshot read and written
// again is stable); and a clone of the state equals it.
func FuzzDecodeSteps(f *testing.F) {
	s := encodingState()
	b, err := json.Marshal(s.Steps)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"a": {"status": null, "attempts": null, "exit_code": -0, "signals": {"A": true, "A": false}}}`))
	f.Add([]byte(`{"a": {"metrics": {"k": "1", "k": "2"}}, "a": {"logs": null}, "b": null}`))
	f.Add([]byte(`{"a": {"human": {"approved": true, "input": {"x": [1.5, {"y": null}]}}, "loop_items": [ {"k" : 1} ]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var steps map[StepKey]*StepState
		if json.Unmarshal(b, &steps) != nil {
			return
		}
		s := &State{RunID: "r", Steps: steps}
		first, err := s.Indented()
		if err != nil {
			t.Fatalf("decoded steps do not encode: %v\n%s", err, b)
		}
		var again State
		if err := json.Unmarshal(first, &again); err != nil {
			t.Fatalf("the encoding does not decode: %v\n%s", err, first)
		}
		second, err := again.Indented()
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("encoded again differently: %v\n%s\nthen\n%s", err, first, second)
		}
		if c := s.Clone(); !reflect.DeepEqual(c, s) {
			t.Fatalf("clone differs:\n%+v\n%+v", c, s)
		}
	})
}
