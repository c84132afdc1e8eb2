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
		StepOrder: []StepKey{Key("a"), Key("b"), Instance("c", "x", "d")}, Steps: map[StepKey]*StepState{}}
	a := newStepState()
	a.Status, a.Attempts, a.ReportPath, a.StartedAt, a.EndedAt = Completed, 2, strp("/r/a.json"), at, at
	a.ExitCode, a.Signals, a.LogPath = intp(0), map[string]bool{"PASS": true, "DONE": false}, "/l/a.log"
	a.Metrics = map[string]string{"k": "v\n\"quoted\""}
	a.Feedback = &Feedback{Step: "b", Reason: "gate <failed>", Report: json.RawMessage(`{"x": [1, 2]}`)}
	a.Usage = &AgentUsage{TokensIn: 3, CostUSD: 0.25, Sessions: 1}
	b := newStepState()
	b.LastError, b.WaitingGates = strp("exit 1 & more"), []string{"g1"}
	b.LoopItems, b.LoopIndex, b.LoopCompleted = []json.RawMessage{json.RawMessage(`"i"`)}, intp(1), boolp(false)
	b.Items = []Item{{Key: "x", Status: Running}}
	s.Steps[Key("a")], s.Steps[Key("b")], s.Steps[Instance("c", "x", "d")] = a, b, newStepState()
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
	s.StepOrder = []StepKey{Key("b")}
	got, _ = json.Marshal(s)
	var back struct {
		Steps json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal(got, &back); err != nil || !bytes.HasPrefix(back.Steps, []byte(`{"b":`)) ||
		bytes.Index(back.Steps, []byte(`"a":`)) > bytes.Index(back.Steps, []byte(`"c[x].d":`)) {
		t.Errorf("order: %v %s", err, back.Steps)
	}
	empty := &State{Steps: map[StepKey]*StepState{}}
	if got, _ := empty.Indented(); !bytes.HasSuffix(got, []byte(`"steps": {}`+"\n}")) {
		t.Errorf("empty: %s", got)
	}
}

// TestCloneSharesNothing: a clone shares no memory with its original:
// whatever is changed in place in the original, through any pointer,
// slice or map, leaves the clone as it was.
func TestCloneSharesNothing(t *testing.T) {
	s := encodingState()
	a := s.Steps[Key("a")]
	a.Human = &HumanInput{Approved: true, Input: map[string]any{"list": []any{"x", map[string]any{"k": "v"}}}}
	a.ConversationUsage, a.LoopIndex, a.LoopCompleted = &AgentUsage{Turns: 1}, intp(0), boolp(true)
	t0 := Key("t")
	a.WaitingFor, a.ManualInputPath, a.BlockedByLoop = &t0, strp("/m"), strp("l")
	a.LoopItems, a.RemovedItems, a.Artifacts, a.Logs = []json.RawMessage{json.RawMessage(`"v"`)}, []string{"r"}, []string{"x"}, []string{"l"}
	s.Usage, s.BudgetRaised = &AgentUsage{Turns: 2}, &Budget{Tokens: 5}
	c := s.Clone()
	if !reflect.DeepEqual(c, s) {
		t.Fatalf("clone differs:\n%+v\n%+v", c, s)
	}
	want, err := c.Indented()
	if err != nil {
		t.Fatal(err)
	}
	scribble(reflect.ValueOf(s))
	if got, _ := s.Indented(); bytes.Equal(got, want) {
		t.Fatal("the original did not change")
	}
	if got, _ := c.Indented(); !bytes.Equal(got, want) {
		t.Errorf("the clone changed with the original:\n%s\nwas\n%s", got, want)
	}
}

// scribble changes in place every value v reaches: through pointers,
// slices, maps and interfaces, each string, number, bool and time.
func scribble(v reflect.Value) {
	if v.Type() == reflect.TypeFor[Time]() {
		if v.CanSet() {
			v.Set(reflect.ValueOf(Time{Time: v.Interface().(Time).Add(time.Second)}))
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			// A map's values are not addressable: change a copy and
			// store it.
			x := reflect.New(v.Type().Elem()).Elem()
			x.Set(v.MapIndex(k))
			if x.Kind() == reflect.Interface && !x.IsNil() && x.Elem().Kind() != reflect.Map && x.Elem().Kind() != reflect.Slice {
				x.Set(reflect.ValueOf("changed"))
			} else {
				scribble(x)
			}
			v.SetMapIndex(k, x)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(v.String() + "!")
		}
	case reflect.Int, reflect.Int64:
		if v.CanSet() {
			v.SetInt(v.Int() + 1)
		}
	case reflect.Float64:
		if v.CanSet() {
			v.SetFloat(v.Float() + 1)
		}
	case reflect.Bool:
		if v.CanSet() {
			v.SetBool(!v.Bool())
		}
	case reflect.Uint8:
		if v.CanSet() {
			v.SetUint(v.Uint() ^ 1)
		}
	}
}
