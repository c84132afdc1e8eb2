package core

import (
	"bytes"
	"encoding/json"
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
	a.Metrics["k"] = "v\n\"quoted\""
	a.Feedback = &Feedback{Step: "b", Reason: "gate <failed>", Report: json.RawMessage(`{"x": [1, 2]}`)}
	a.Usage = &AgentUsage{TokensIn: 3, CostUSD: 0.25, Sessions: 1}
	b := newStepState()
	b.LastError, b.WaitingGates = strp("exit 1 & more"), []string{"g1"}
	b.LoopItems, b.LoopIndex, b.LoopCompleted = []json.RawMessage{json.RawMessage(`"i"`)}, intp(1), boolp(false)
	b.Items = []Item{{Key: "x", Status: Running}}
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
