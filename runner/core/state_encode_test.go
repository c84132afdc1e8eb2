package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
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
		Status: RunRunning, Vars: map[string]string{}, VarOverrides: map[string]string{}, Steps: make(map[string]*StepState, n)}
	for i := range n {
		id := fmt.Sprintf("step-%05d", i)
		st := s.newStep()
		st.Status, st.Attempts, st.StartedAt, st.EndedAt = Completed, 1, at, end
		st.ReportPath = strp("/runs/r1/reports/" + id + ".json")
		st.LogPath = "/runs/r1/logs/" + id + ".log"
		st.Logs = []string{st.LogPath}
		st.ExitCode = s.exitCode(intp(0))
		s.StepOrder = append(s.StepOrder, id)
		s.Steps[id] = st
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

// referenceStep returns st as State.encode wrote it before stepEncoder:
// encoding/json's Encoder, indented with prefix indent+indent unless
// indent is "", without the final newline.
func referenceStep(st *StepState, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	if indent != "" {
		enc.SetIndent(indent+indent, indent)
	}
	if err := enc.Encode(st); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// referenceEncode is State.encode as it was before stepEncoder, every
// step encoded by encoding/json: the reference for the whole state.
func referenceEncode(s *State, w io.Writer, indent string) error {
	type head State // without State's methods
	h := (*head)(s)
	saved := h.Steps
	h.Steps = nil
	var b []byte
	var err error
	if indent == "" {
		b, err = json.Marshal(h)
	} else {
		b, err = json.MarshalIndent(h, "", indent)
	}
	h.Steps = saved
	if err != nil {
		return err
	}
	i := bytes.LastIndex(b, []byte("null"))
	if i < 0 {
		return fmt.Errorf("encode run state: no steps field")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if indent != "" {
		enc.SetIndent(indent+indent, indent)
	}
	buf.Write(b[:i])
	buf.WriteByte('{')
	n := 0
	write := func(id string, st *StepState) error {
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		if indent != "" {
			buf.WriteString("\n" + indent + indent)
		}
		if err := enc.Encode(id); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1)
		buf.WriteByte(':')
		if indent != "" {
			buf.WriteByte(' ')
		}
		if err := enc.Encode(st); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1)
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		buf.Reset()
		return nil
	}
	seen := make(map[string]bool, len(s.Steps))
	for _, id := range s.StepOrder {
		if st := s.Steps[id]; st != nil && !seen[id] {
			seen[id] = true
			if err := write(id, st); err != nil {
				return err
			}
		}
	}
	if len(seen) < len(s.Steps) {
		for _, id := range slices.Sorted(maps.Keys(s.Steps)) {
			if !seen[id] {
				if err := write(id, s.Steps[id]); err != nil {
					return err
				}
			}
		}
	}
	if indent != "" && n > 0 {
		buf.WriteString("\n" + indent)
	}
	buf.WriteByte('}')
	buf.Write(b[i+len("null"):])
	_, err = w.Write(buf.Bytes())
	return err
}

// The indents State.encode is called with: MarshalJSON's and
// WriteIndented's.
var testIndents = []string{"", "  "}

// awkward holds strings encoding/json escapes: quotes, backslashes,
// control characters, HTML's <, > and &, invalid UTF-8, U+2028 and
// U+2029, and multi-byte runes it leaves as they are.
var awkward = []string{
	"",
	"plain /path/to/log.log",
	`say "hi" \ back\slash`,
	"\x00\x01\b\f\n\r\t\x1f\x7f end",
	"<script>a && b</script>",
	"bad \xff\xfe utf-8 \xe2\x80 cut",
	"line\u2028sep\u2029para",
	"héllo, 世界, 😀",
	"\xed\xa0\x80 surrogate",
}

// encodingCases returns steps covering every field of StepState set
// and unset, nil and empty slices and maps, awkward strings, raw JSON
// with whitespace and the nested structs.
func encodingCases() map[string]*StepState {
	at := &Time{Time: time.Date(2025, 1, 15, 14, 30, 0, 123456789, time.FixedZone("x", 3600))}
	zero := &Time{}
	cases := map[string]*StepState{
		"zero":      {},
		"pending":   newStepState(),
		"finished":  benchState(1).Steps["step-00000"],
		"nil-empty": {Artifacts: nil, Metrics: map[string]string{}, Logs: []string{}, Signals: map[string]bool{}, StepMore: &StepMore{LoopItems: []json.RawMessage{}, Items: []Item{}, RemovedItems: []string{}}, StepWait: &StepWait{WaitingGates: []string{}}},
		"zeros": {
			Status: Failed, Attempts: -3, IterationCount: 1 << 40, ReportPath: strp(""), StartedAt: zero, EndedAt: zero, LastError: strp(""), Artifacts: []string{""}, Metrics: map[string]string{"": ""}, Logs: []string{""}, ManualInputPath: strp(""), BlockedByLoop: strp(""), StepWait: &StepWait{WaitingFor: strp("")}, ExitCode: intp(0), Signals: map[string]bool{"": false}, StepMore: &StepMore{LoopIndex: intp(0), LoopCompleted: boolp(false)},
		},
		"every field": {
			Status: WaitingOnHuman, Attempts: 3, IterationCount: 2, ReportPath: strp("/r/x.json"), StartedAt: at, EndedAt: at, LastError: strp("exit 1 & <more>"), Artifacts: []string{"a", "b"}, Metrics: map[string]string{"z": "1", "a": "2", "m": "3"}, Logs: []string{"/l/1.log", "/l/2.log"}, ManualInputPath: strp("/m/in.json"), BlockedByLoop: strp("loop"), StepWait: &StepWait{WaitingFor: strp("target"), WaitingGates: []string{"g1", "g2"}}, ExitCode: intp(-1), Verdict: "PASS", Signals: map[string]bool{"PASS": true, "DONE": false, "FAIL": true}, LogPath: "/l/x.log", PID: 4242, SessionMarker: "flow-m", StepMore: &StepMore{GateFailed: true, Feedback: &Feedback{Step: "g", Reason: "gate <failed>", Report: json.RawMessage(" {\"x\" : [ 1 ,\n 2 ], \"h\": \"<&>\" } "), Output: "tail\n"}, Human: &HumanInput{Approved: true, Input: map[string]any{"b": []any{1.5, "x", nil}, "a": map[string]any{"k": true}, "e": map[string]any{}}, By: "me", At: "now", Reason: "ok"}, Usage: &AgentUsage{TokensIn: 1, TokensOut: 2, TokensCached: 3, CostUSD: 1e-7, CostEstimated: true, Turns: 4, Sessions: 5}, AgentSession: "sess-1", ConversationUsage: &AgentUsage{CostUSD: 123456789012345678}, LoopItems: []json.RawMessage{json.RawMessage(`"i"`), json.RawMessage(" { \"k\" :\t1 } "), json.RawMessage(`[]`), nil, json.RawMessage(`{}`)}, LoopIndex: intp(1), LoopCompleted: boolp(true), Items: []Item{{Key: "x", Status: Running}, {Key: "y<", Status: Failed, Error: "boom\n"}}, RemovedItems: []string{"old"}},
		},
		"empty nested": {
			StepMore: &StepMore{Feedback: &Feedback{}, Human: &HumanInput{}, Usage: &AgentUsage{}, ConversationUsage: &AgentUsage{}, LoopItems: []json.RawMessage{json.RawMessage(`null`)}, Items: []Item{{}}},
		},
	}
	for i, s := range awkward {
		cases[fmt.Sprintf("awkward %d", i)] = &StepState{
			Status: Status(s), ReportPath: strp(s), LastError: strp(s), Artifacts: []string{s, s}, Metrics: map[string]string{s: s, s + "2": ""}, Logs: []string{s}, ManualInputPath: strp(s), BlockedByLoop: strp(s), Verdict: s, Signals: map[string]bool{s: true, "x" + s: false}, LogPath: s, SessionMarker: s, StepMore: &StepMore{AgentSession: s, RemovedItems: []string{s}, Feedback: &Feedback{Step: s, Reason: s, Output: s}, Items: []Item{{Key: s, Status: Status(s), Error: s}}}, StepWait: &StepWait{WaitingFor: strp(s), WaitingGates: []string{s}},
		}
	}
	return cases
}

// checkStep compares the hand-written encoding of st with encoding/json's
// for every indent; the fast path alone is compared, so that its
// fallback to encoding/json cannot hide a difference.
func checkStep(t *testing.T, st *StepState) {
	t.Helper()
	for _, indent := range testIndents {
		want, wantErr := referenceStep(st, indent)
		e := newStepEncoder(indent)
		got, err := e.appendFields([]byte("prefix"), st)
		if wantErr != nil {
			if err == nil {
				t.Errorf("indent %q: no error, encoding/json's is %v", indent, wantErr)
			}
			// The error returned is encoding/json's own.
			if _, err := e.appendStep(nil, st); err == nil || err.Error() != wantErr.Error() {
				t.Errorf("indent %q: error %v, want %v", indent, err, wantErr)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("indent %q: %v\n%s\nwant\n%s", indent, err, got, want)
		}
		// A second step through the same encoder, its buffers reused.
		if got, err := e.appendStep(nil, st); err != nil || !bytes.Equal(got, want) {
			t.Errorf("indent %q, again: %v\n%s\nwant\n%s", indent, err, got, want)
		}
	}
}

// TestStepEncoderMatchesEncodingJSON: every case's step, and the state
// holding them all, encode byte for byte as encoding/json encodes them.
func TestStepEncoderMatchesEncodingJSON(t *testing.T) {
	cases := encodingCases()
	s := &State{SchemaVersion: SchemaVersion, RunID: "r", Steps: map[string]*StepState{}}
	for name, st := range cases {
		t.Run(name, func(t *testing.T) { checkStep(t, st) })
		s.Steps[name+" <&>\u2028\xff"] = st
	}
	// Half the steps in StepOrder, the rest after them, sorted.
	for i, id := range slices.Sorted(maps.Keys(s.Steps)) {
		if i%2 == 1 {
			s.StepOrder = append(s.StepOrder, id)
		}
	}
	for _, indent := range testIndents {
		var got, want bytes.Buffer
		if err := referenceEncode(s, &want, indent); err != nil {
			t.Fatal(err)
		}
		if err := s.encode(&got, indent); err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("state, indent %q: %v\n%s\nwant\n%s", indent, err, got.Bytes(), want.Bytes())
		}
		if !json.Valid(got.Bytes()) {
			t.Errorf("state, indent %q: invalid JSON", indent)
		}
	}
	// The benchmark's state, and the whole state encodingState builds.
	for _, s := range []*State{benchState(50), encodingState()} {
		for _, indent := range testIndents {
			var got, want bytes.Buffer
			_ = referenceEncode(s, &want, indent)
			if err := s.encode(&got, indent); err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("state, indent %q: %v\n%s\nwant\n%s", indent, err, got.Bytes(), want.Bytes())
			}
		}
	}
}

// TestStepEncoderErrors: a step encoding/json cannot encode (a time
// outside years 0-9999, raw JSON that is not JSON) fails with
// encoding/json's error, and so does the state holding it.
func TestStepEncoderErrors(t *testing.T) {
	far := &Time{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	for name, st := range map[string]*StepState{
		"started":   {StartedAt: far},
		"ended":     {EndedAt: far},
		"raw":       {StepMore: &StepMore{LoopItems: []json.RawMessage{json.RawMessage(`{`)}}},
		"feedback":  {StepMore: &StepMore{Feedback: &Feedback{Report: json.RawMessage(`nope`)}}},
		"nan input": {StepMore: &StepMore{Human: &HumanInput{Input: map[string]any{"x": math.NaN()}}}},
	} {
		t.Run(name, func(t *testing.T) {
			checkStep(t, st)
			s := &State{Steps: map[string]*StepState{"a": st}}
			for _, indent := range testIndents {
				want := referenceEncode(s, io.Discard, indent)
				if err := s.encode(io.Discard, indent); err == nil || want == nil || err.Error() != want.Error() {
					t.Errorf("indent %q: %v, want %v", indent, err, want)
				}
			}
		})
	}
}

// TestAppendJSONString: strings are escaped as json.Marshal escapes
// them.
func TestAppendJSONString(t *testing.T) {
	all := make([]byte, 0, 256)
	for b := range 256 {
		all = append(all, byte(b))
	}
	for _, s := range append(awkward, string(all), "\u2027\u2028\u2029\u202a", "\U0010ffff\xf4\x90\x80\x80") {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

// fuzzStep builds a step from fuzzed values: each two bits of mask
// choose how a field is set (unset, empty, or from one of the strings
// or numbers).
func fuzzStep(a, b, raw string, n, m int64, mask uint64) *StepState {
	pick := func() uint64 {
		v := mask & 3
		mask = mask>>2 | mask<<62
		return v
	}
	str := func() string {
		switch pick() {
		case 0, 1:
			return ""
		case 2:
			return a
		}
		return b
	}
	strPtr := func() *string {
		if pick() == 0 {
			return nil
		}
		return strp(str())
	}
	list := func() []string {
		switch pick() {
		case 0:
			return nil
		case 1:
			return []string{}
		case 2:
			return []string{a}
		}
		return []string{b, a, b}
	}
	intPtr := func(v int64) *int {
		if pick() == 0 {
			return nil
		}
		return intp(int(v))
	}
	timePtr := func() *Time {
		switch pick() {
		case 0:
			return nil
		case 1:
			return &Time{}
		case 2:
			return &Time{Time: time.Unix(n, m)}
		}
		return &Time{Time: time.UnixMicro(n).In(time.FixedZone("z", int(m%100000)))}
	}
	rawMsg := func() json.RawMessage {
		switch pick() {
		case 0:
			return nil
		case 1:
			return json.RawMessage(`{}`)
		}
		if json.Valid([]byte(raw)) {
			return json.RawMessage(raw)
		}
		q, _ := json.Marshal(raw)
		return json.RawMessage(" " + string(q) + "\n")
	}
	st := &StepState{
		Status: Status(str()), Attempts: int(n), IterationCount: int(m), ReportPath: strPtr(), StartedAt: timePtr(), EndedAt: timePtr(), LastError: strPtr(), Artifacts: list(), Logs: list(), ManualInputPath: strPtr(), BlockedByLoop: strPtr(), ExitCode: intPtr(n), Verdict: str(), LogPath: str(), PID: int(m) * int(pick()&1), SessionMarker: str(), StepMore: &StepMore{GateFailed: pick()&1 == 1, AgentSession: str(), LoopIndex: intPtr(m), RemovedItems: list()}, StepWait: &StepWait{WaitingFor: strPtr(), WaitingGates: list()},
	}
	switch pick() {
	case 1:
		st.Metrics = map[string]string{}
	case 2:
		st.Metrics = map[string]string{a: b}
	case 3:
		st.Metrics = map[string]string{a: b, b: a, a + b: "", "": a}
	}
	switch pick() {
	case 1:
		st.Signals = map[string]bool{}
	case 2:
		st.Signals = map[string]bool{a: true}
	case 3:
		st.Signals = map[string]bool{a: false, b: true, "PASS": true}
	}
	if pick() != 0 {
		st.More().LoopCompleted = boolp(pick()&1 == 1)
	}
	if pick() != 0 {
		st.More().Feedback = &Feedback{Step: a, Reason: b, Report: rawMsg(), Output: str()}
	}
	if pick() != 0 {
		st.More().Human = &HumanInput{Approved: pick()&1 == 1, By: str(), At: str(), Reason: str()}
		if pick() != 0 {
			st.Human().Input = map[string]any{a: b, b: float64(n) / 3, "raw": rawMsg(), "list": []any{m, a}}
		}
	}
	if pick() != 0 {
		st.More().Usage = &AgentUsage{TokensIn: n, TokensOut: m, CostUSD: float64(n) / float64(m|1), CostEstimated: pick()&1 == 1}
	}
	if pick() != 0 {
		st.More().ConversationUsage = &AgentUsage{Turns: int(n), Sessions: int(m), CostUSD: float64(m) * 1e-9}
	}
	if pick() != 0 {
		st.More().LoopItems = []json.RawMessage{rawMsg(), rawMsg()}
	}
	switch pick() {
	case 1:
		st.More().Items = []Item{}
	case 2:
		st.More().Items = []Item{{Key: a, Status: Status(b), Error: str()}}
	case 3:
		st.More().Items = []Item{{Key: b}, {Key: a, Error: a}}
	}
	return st
}

// FuzzStepStateEncoding: steps built from fuzzed strings and numbers
// encode byte for byte as encoding/json encodes them, or fail as it
// fails.
func FuzzStepStateEncoding(f *testing.F) {
	f.Add("COMPLETED", "/runs/r1/logs/a.log", `{"k": [1, 2]}`, int64(1736951400), int64(123456), uint64(0xffffffffffffffff))
	f.Add("", "", "", int64(0), int64(0), uint64(0))
	f.Add("a\"b\\c<d>&e", "\x00\x1f\u2028\u2029\xff", " [ 1 , \"<x>\" ] ", int64(-1), int64(1<<40), uint64(0xaaaaaaaaaaaaaaaa))
	f.Add("héllo 世界", "\xed\xa0\x80", "not json", int64(253402300800), int64(-7), uint64(0x5555555555555555))
	f.Add("PENDING", "x", "null", int64(1<<62), int64(999999999), uint64(0x123456789abcdef0))
	f.Fuzz(func(t *testing.T, a, b, raw string, n, m int64, mask uint64) {
		checkStep(t, fuzzStep(a, b, raw, n, m, mask))
	})
}

// TestAppendTime: times are written as Time.MarshalJSON writes them,
// from year 0 to 9999 in any zone, and outside them fail.
func TestAppendTime(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("east", 14*3600), time.FixedZone("west", -12*3600-1800)}
	times := []time.Time{{}, time.Unix(0, 0), time.Unix(0, 999), time.Unix(-1, 999999999),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2024, 2, 29, 9, 8, 7, 6543210, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 1000, time.UTC)}
	for i := int64(0); i < 2000; i++ {
		times = append(times, time.Unix(-62167219200+i*157766400+i*i*7919, i*104729%1000000000))
	}
	for _, at := range times {
		for _, z := range zones {
			tm := &Time{Time: at.In(z)}
			want, wantErr := tm.MarshalJSON()
			got, err := appendTimePtr(nil, tm)
			if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) && wantErr == nil {
				t.Errorf("%v: %s %v, want %s %v", tm.Time, got, err, want, wantErr)
			}
		}
	}
	for _, at := range []time.Time{time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("west", -3600))} {
		if _, err := appendTimePtr(nil, &Time{Time: at}); err == nil {
			t.Errorf("%v: no error", at)
		}
	}
}

// TestStepEncoderCoversEveryField fills every field of a StepState,
// found by reflection, with a value that is not empty, and checks the
// hand-written encoder against encoding/json: a field added to
// StepState and not to the encoder fails here.
func TestStepEncoderCoversEveryField(t *testing.T) {
	var st StepState
	fillValue(reflect.ValueOf(&st).Elem(), 0)
	checkStep(t, &st)
	// Each field alone, the others empty, as omitempty sees them.
	typ := reflect.TypeFor[StepState]()
	for i := range typ.NumField() {
		var one StepState
		fillValue(reflect.ValueOf(&one).Elem().Field(i), 0)
		t.Run(typ.Field(i).Name, func(t *testing.T) { checkStep(t, &one) })
	}
}

// fillValue sets v, recursively, to a value that is not its zero value
// and that encoding/json can encode.
func fillValue(v reflect.Value, depth int) {
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.SetBytes([]byte(`{"k": [1, "<x>"]}`))
		return
	}
	if v.Type() == reflect.TypeFor[Time]() {
		v.Set(reflect.ValueOf(Time{Time: time.Date(2025, 1, 15, 14, 30, 0, 123456789, time.UTC)}))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("v<&>\"" + v.Type().Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(7 + depth))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(7 + depth))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.25)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillValue(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			fillValue(k, depth+1+i)
			if k.Kind() == reflect.String {
				k.SetString(fmt.Sprintf("key%d", i))
			}
			e := reflect.New(v.Type().Elem()).Elem()
			fillValue(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillValue(v.Field(i), depth+1)
			}
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf("any"))
	}
}
