package core

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// stepsJSON is the "steps" object of st's snapshot, as State.Indented
// writes it.
func stepsJSON(t testing.TB, steps map[string]*StepState) []byte {
	t.Helper()
	st := &State{RunID: "r1", Steps: steps}
	for id := range steps {
		st.StepOrder = append(st.StepOrder, id)
	}
	b, err := st.Indented()
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"steps": `))
	if i < 0 {
		t.Fatalf("no steps in\n%s", b)
	}
	return bytes.TrimSuffix(bytes.TrimRight(b[i+len(`"steps": `):], "\n"), []byte("}"))
}

// decodeStepsCases are steps as runs record them: pending, running,
// finished, failed, waiting, and each field the fast path reads alone.
func decodeStepsCases(t testing.TB) map[string][]byte {
	t.Helper()
	at := Time{Time: time.Date(2025, 1, 15, 14, 30, 0, 123456000, time.UTC)}
	zero, three := 0, 3
	report, reason := "/r/reports/r1__a.json", "exit 3: make test failed"
	st := &State{}
	pending := st.newStep()
	done := &StepState{
		Status: Completed, Attempts: 1, ReportPath: &report, StartedAt: &at, EndedAt: &at, Artifacts: []string{}, Metrics: map[string]string{}, Logs: []string{}, ExitCode: &zero, Signals: map[string]bool{"DONE": false, "FAIL": false, "PASS": true}, Verdict: "PASS", LogPath: "/r/logs/a.0.1.log", PID: 4242, SessionMarker: "AJ2GDKF2IEYDZBY6IFSSTY2DAS", StepMore: &StepMore{AgentSession: "s-1"},
	}
	failed := &StepState{
		Status: Failed, Attempts: 2, IterationCount: 1, ReportPath: &report, StartedAt: &at, EndedAt: &at, LastError: &reason, Artifacts: []string{"PLAN.md", "x y.txt"}, Metrics: map[string]string{"coverage": "81%"}, Logs: []string{"/r/logs/a.0.1.log", "/r/logs/a.0.2.log"}, StepWait: &StepWait{WaitingGates: []string{"deploy"}, WaitingFor: &report}, ExitCode: &three, ManualInputPath: &report, BlockedByLoop: &reason, StepMore: &StepMore{GateFailed: true},
	}
	cases := map[string][]byte{
		"pending":   stepsJSON(t, map[string]*StepState{"a": pending, "b": pending}),
		"finished":  stepsJSON(t, map[string]*StepState{"a": done, "plan": pending}),
		"failed":    stepsJSON(t, map[string]*StepState{"a": failed}),
		"none":      []byte("{}"),
		"compact":   must(json.Marshal(map[string]*StepState{"a": done, "b": failed, "c": pending})),
		"marshaled": must(json.MarshalIndent(map[string]*StepState{"a": done, "b": failed}, "", "\t")),
		// Signals in other shapes than the default words once each.
		"signals: two words":      []byte(`{"a": {"signals": {"DONE": true, "FAIL": false}}}`),
		"signals: another order":  []byte(`{"a": {"signals": {"PASS": true, "DONE": false, "FAIL": true}}}`),
		"signals: another word":   []byte(`{"a": {"signals": {"DONE": true, "LGTM": true, "FAIL": false, "PASS": false}}}`),
		"signals: a word twice":   []byte(`{"a": {"signals": {"DONE": true, "FAIL": false, "DONE": false, "PASS": true}}}`),
		"signals: the last twice": []byte(`{"a": {"signals": {"DONE": true, "FAIL": false, "PASS": false, "PASS": true}}}`),
		"signals: none":           []byte(`{"a": {"signals": {}}, "b": {"signals": {"FAIL": true, "FAIL": false}}}`),
		"statuses": []byte(`{"a": {"status": "COMPLETED", "metrics": {}}, "b": {"status": "WAITING_ON_HUMAN"},
			"c": {"status": "DONE", "metrics": {"k": "v"}}, "d": {"status": ""}, "e": {"status": "SKIPPED", "metrics": {}}}`),
	}
	typ := reflect.TypeFor[StepState]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Anonymous {
			// StepWait, StepMore: each of their fields on its own.
			for j := range f.Type.Elem().NumField() {
				var one StepState
				part := reflect.New(f.Type.Elem())
				fillValue(part.Elem().Field(j), 0)
				reflect.ValueOf(&one).Elem().Field(i).Set(part)
				cases["field "+f.Type.Elem().Field(j).Name] = stepsJSON(t, map[string]*StepState{"s": &one})
			}
			continue
		}
		var one StepState
		fillValue(reflect.ValueOf(&one).Elem().Field(i), 0)
		cases["field "+typ.Field(i).Name] = stepsJSON(t, map[string]*StepState{"s": &one})
	}
	var all StepState
	fillValue(reflect.ValueOf(&all).Elem(), 0)
	cases["every field"] = stepsJSON(t, map[string]*StepState{"s": &all})
	return cases
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// checkDecodeSteps holds DecodeSteps to json.Unmarshal on b: when it
// decodes b, encoding/json decodes b too, to the same steps.
func checkDecodeSteps(t testing.TB, b []byte) (fast bool) {
	got, ok := DecodeSteps(b)
	if !ok {
		return false
	}
	var want map[string]*StepState
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("DecodeSteps decoded what encoding/json refuses (%v):\n%s", err, b)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeSteps differs from encoding/json on\n%s\ngot  %#v\nwant %#v", b, got, want)
	}
	return true
}

// TestDecodeStepsMatchesEncodingJSON: the steps runs record are decoded
// by the fast path, to what encoding/json gives; the fields it leaves
// to encoding/json make it decline.
func TestDecodeStepsMatchesEncodingJSON(t *testing.T) {
	slow := map[string]bool{"field Feedback": true, "field Human": true, "field Usage": true,
		"field ConversationUsage": true, "field LoopItems": true, "field LoopIndex": true,
		"field LoopCompleted": true, "field Items": true, "field RemovedItems": true, "every field": true,
		// fillValue's strings hold quotes, which encoding/json escapes.
		"field Status": true, "field ReportPath": true, "field LastError": true, "field Artifacts": true,
		"field Metrics": true, "field Logs": true, "field ManualInputPath": true, "field BlockedByLoop": true,
		"field WaitingFor": true, "field WaitingGates": true, "field Verdict": true,
		"field LogPath": true, "field SessionMarker": true, "field AgentSession": true}
	for name, b := range decodeStepsCases(t) {
		if fast := checkDecodeSteps(t, b); fast == slow[name] {
			t.Errorf("%s: decoded by the fast path %v, want %v\n%s", name, fast, !slow[name], b)
		}
	}
}

// TestDecodeStepsShares: the steps a run's record decodes to share the
// maps of the default signal words and one empty metrics map, as the
// steps of a run's state do; a step with other signals has its own map.
func TestDecodeStepsShares(t *testing.T) {
	steps, ok := DecodeSteps([]byte(`{
		"a": {"status": "COMPLETED", "metrics": {}, "signals": {"DONE": true, "FAIL": false, "PASS": false}},
		"b": {"status": "COMPLETED", "metrics": {}, "signals": {"FAIL": false, "PASS": false, "DONE": true}},
		"c": {"status": "COMPLETED", "metrics": {}, "signals": {"DONE": true, "FAIL": false}}}`))
	if !ok {
		t.Fatal("the fast path declined")
	}
	same := func(x, y any) bool { return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() }
	if !same(steps["a"].Signals, steps["b"].Signals) || !same(steps["a"].Signals, sharedSignals[1]) {
		t.Error("a's and b's signals are not the shared map of DONE alone")
	}
	if same(steps["c"].Signals, steps["a"].Signals) || len(steps["c"].Signals) != 2 {
		t.Errorf("c's signals %v share a map", steps["c"].Signals)
	}
	if !same(steps["a"].Metrics, steps["b"].Metrics) || !same(steps["a"].Metrics, steps["c"].Metrics) {
		t.Error("the steps' empty metrics are not one map")
	}
	if steps["a"].Status != Completed {
		t.Errorf("status %q", steps["a"].Status)
	}
}

// TestDecodeStepsDeclines: what the fast path does not read exactly
// as encoding/json does, it leaves to encoding/json.
func TestDecodeStepsDeclines(t *testing.T) {
	for _, b := range []string{
		`{"a": {"status": "A\"B"}}`,                 // an escape
		`{"a": {"status": "\u00e9"}}`,               // an escape
		"{\"a\": {\"status\": \"\xff\"}}",           // not UTF-8
		`{"a": {"Status": "PENDING"}}`,              // a key in another case
		`{"a": {"status": "A", "status": ""}}`,      // a key twice
		`{"a": {"unknown": 1}}`,                     // a key of no field
		`{"a": {"attempts": 1.0}}`,                  // a fraction
		`{"a": {"attempts": 1e2}}`,                  // an exponent
		`{"a": {"attempts": 01}}`,                   // a leading zero
		`{"a": {"attempts": 99999999999999999999}}`, // too large
		`{"a": {"attempts": "1"}}`,                  // a string for a number
		`{"a": {"gate_failed": 1}}`,                 // a number for a bool
		`{"a": {"signals": {"DONE": 1}}}`,           // a number for a bool
		`{"a": {"metrics": {"k": 1}}}`,              // a number for a string
		`{"a": {"logs": [1]}}`,                      // a number for a string
		`{"a": {"started_at": "yesterday"}}`,        // not a time
		`{"a": {"loop_index": 1}}`,                  // a loop's field
		`{"a": {"status": nullx}}`,                  // not a literal
		`{"a": {}} x`,                               // more after the object
		`{"a": {},}`,                                // a trailing comma
		`[]`,
		`null`,
	} {
		if _, ok := DecodeSteps([]byte(b)); ok {
			t.Errorf("DecodeSteps decoded %s", b)
		}
		checkDecodeSteps(t, []byte(b))
	}
}

// FuzzDecodeSteps: whatever DecodeSteps decodes, encoding/json decodes
// to the same steps.
func FuzzDecodeSteps(f *testing.F) {
	for _, b := range decodeStepsCases(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"a": {"status": null, "attempts": null, "exit_code": -0, "signals": {"A": true, "A": false}}}`))
	f.Add([]byte(`{"a": {"metrics": {"k": "1", "k": "2"}}, "a": {"logs": null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecodeSteps(t, b)
	})
}
