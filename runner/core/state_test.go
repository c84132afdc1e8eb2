package core

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"testing"
	"time"
)

// encodingState returns a state whose steps fill most fields of
// StepState, with StepOrder in the order encoding/json sorts map keys,
// so that json.MarshalIndent of the plain struct is what the
// step-by-step encoders must write.
func encodingState() *State {
	at := &Time{Time: time.Date(2025, 1, 15, 14, 30, 0, 123456000, time.UTC)}
	s := &State{SchemaVersion: SchemaVersion, RunID: "r1", WorkflowName: "wf <&>", CreatedAt: at, UpdatedAt: at,
		Status: RunRunning, Vars: map[string]string{"b": "2", "a": "1"}, VarOverrides: map[string]string{},
		Runner: &RunnerInfo{PID: 7, Host: "h", StartedAt: at, HeartbeatAt: at}, Seq: 42,
		StepOrder: []string{"a", "b", "c[x].d"}, Steps: map[string]*StepState{}}
	a := newStepState()
	a.Status, a.Attempts, a.ReportPath, a.StartedAt, a.EndedAt = Completed, 2, strp("/r/a.json"), at, at
	a.ExitCode, a.Signals, a.LogPath = intp(0), map[string]bool{"PASS": true, "DONE": false}, "/l/a.log"
	a.Metrics = map[string]string{"k": "v\n\"quoted\""}
	a.More().Feedback = &Feedback{Step: "b", Reason: "gate <failed>", Report: json.RawMessage(`{"x": [1, 2]}`)}
	a.More().Usage = &AgentUsage{TokensIn: 3, CostUSD: 0.25, Sessions: 1}
	b := newStepState()
	b.LastError, b.Wait().WaitingGates = strp("exit 1 & more"), []string{"g1"}
	b.More().LoopItems, b.More().LoopIndex, b.More().LoopCompleted = []json.RawMessage{json.RawMessage(`"i"`)}, intp(1), boolp(false)
	b.More().Items = []Item{{Key: "x", Status: Running}}
	s.Steps["a"], s.Steps["b"], s.Steps["c[x].d"] = a, b, newStepState()
	return s
}

// TestStateEncoding: MarshalJSON, Indented and WriteIndented write
// exactly what encoding/json writes for the whole struct (steps in
// workflow order, which here is the sorted order), so that the
// snapshot's content does not depend on how it is encoded.
func TestStateEncoding(t *testing.T) {
	s := encodingState()
	type plain State
	wantIndented, err := json.MarshalIndent((*plain)(s), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	wantCompact, _ := json.Marshal((*plain)(s))
	got, err := s.Indented()
	if err != nil || !bytes.Equal(got, wantIndented) {
		t.Errorf("Indented: %v\n%s\nwant\n%s", err, got, wantIndented)
	}
	var w bytes.Buffer
	if err := s.WriteIndented(&w); err != nil || !bytes.Equal(w.Bytes(), wantIndented) {
		t.Errorf("WriteIndented: %v\n%s", err, w.Bytes())
	}
	if got, err := json.Marshal(s); err != nil || !bytes.Equal(got, wantCompact) {
		t.Errorf("MarshalJSON: %v\n%s\nwant\n%s", err, got, wantCompact)
	}
	// Steps missing from StepOrder come last, sorted; an empty run has
	// an empty object.
	s.StepOrder = []string{"b"}
	got, _ = json.Marshal(s)
	var back struct {
		Steps json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal(got, &back); err != nil || !bytes.HasPrefix(back.Steps, []byte(`{"b":`)) ||
		bytes.Index(back.Steps, []byte(`"a":`)) > bytes.Index(back.Steps, []byte(`"c[x].d":`)) {
		t.Errorf("order: %v %s", err, back.Steps)
	}
	empty := &State{Steps: map[string]*StepState{}}
	if got, _ := empty.Indented(); !bytes.HasSuffix(got, []byte(`"steps": {}`+"\n}")) {
		t.Errorf("empty: %s", got)
	}
}

// TestInternSignals: a step's signals of the default words are one of
// eight shared maps with the same content; other signals are kept as
// they are.
func TestInternSignals(t *testing.T) {
	a := internSignals(map[string]bool{"DONE": true, "FAIL": false, "PASS": true})
	b := internSignals(map[string]bool{"PASS": true, "DONE": true, "FAIL": false})
	if len(a) != 3 || !a["DONE"] || a["FAIL"] || !a["PASS"] {
		t.Errorf("content: %v", a)
	}
	if reflect.ValueOf(a).UnsafePointer() != reflect.ValueOf(b).UnsafePointer() {
		t.Errorf("equal signals are not shared")
	}
	other := map[string]bool{"DONE": true, "FAIL": false, "OK": true}
	if got := internSignals(other); len(got) != 3 || !got["OK"] {
		t.Errorf("other words: %v", got)
	}
	if got := internSignals(nil); got != nil {
		t.Errorf("nil: %v", got)
	}
}

// TestSharedEmptiesEncodeAsBefore: the steps of a state share one empty
// map of metrics and one exit code 0, and a state whose steps share
// them encodes byte for byte as one whose every step has its own.
func TestSharedEmptiesEncodeAsBefore(t *testing.T) {
	at := time.Date(2025, 1, 15, 14, 30, 0, 123456000, time.UTC)
	s := &State{}
	zero := 0
	for _, e := range []Event{
		NewEvent(at, EvRunCreated, "", RunCreated{RunID: "r1", WorkflowName: "wf", Steps: []string{"a", "b", "c"}}),
		NewEvent(at, EvStepStarted, "a", StepStarted{Attempt: 1}),
		NewEvent(at, EvStepCompleted, "a", Outcome{Attempt: 1, ExitCode: &zero}),
		NewEvent(at, EvStepStarted, "b", StepStarted{Attempt: 1}),
		NewEvent(at, EvStepCompleted, "b", Outcome{Attempt: 1, ExitCode: &zero, Metrics: map[string]string{"k": "v"}}),
	} {
		if err := Apply(s, e); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := s.Steps["a"], s.Steps["b"], s.Steps["c"]
	if reflect.ValueOf(a.Metrics).UnsafePointer() != reflect.ValueOf(c.Metrics).UnsafePointer() || a.ExitCode != b.ExitCode {
		t.Errorf("a's metrics and c's, or a's exit code and b's, are not shared")
	}
	if len(a.Metrics) != 0 || len(c.Metrics) != 0 || b.Metrics["k"] != "v" || *a.ExitCode != 0 {
		t.Errorf("content: %v %v %v %d", a.Metrics, b.Metrics, c.Metrics, *a.ExitCode)
	}
	// The same state with every step's own values.
	own := s.Clone()
	for _, st := range own.Steps {
		st.Metrics = maps.Clone(st.Metrics)
		if st.ExitCode != nil {
			st.ExitCode = intp(*st.ExitCode)
		}
	}
	own.Steps["c"] = newStepState()
	got, err := s.Indented()
	want, _ := own.Indented()
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("shared: %v\n%s\nown:\n%s", err, got, want)
	}
	if !bytes.Contains(got, []byte(`"metrics": {},`)) || !bytes.Contains(got, []byte(`"exit_code": 0,`)) {
		t.Errorf("encoding:\n%s", got)
	}
}

// TestCloneOwnsItsParts: a clone's steps have their own StepWait and
// StepMore, which a change to the original's leaves alone.
func TestCloneOwnsItsParts(t *testing.T) {
	s := &State{Steps: map[string]*StepState{"a": newStepState()}}
	a := s.Steps["a"]
	a.Wait().WaitingGates = []string{"g"}
	a.More().GateFailed = true
	c := s.Clone()
	a.Wait().WaitingGates[0] = "changed"
	a.Wait().WaitingFor = strp("x")
	a.More().GateFailed = false
	ca := c.Steps["a"]
	if ca.WaitingGates()[0] != "g" || ca.WaitingFor() != nil || !ca.GateFailed() {
		t.Errorf("the clone changed with the original: %+v %+v", *ca.StepWait, *ca.StepMore)
	}
}
