package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/redact"
)

// liveBase returns a state with a step "a", as the events every step
// records find it: it has run before, and holds a loop-back's feedback
// that blocks step "b", which with exitCode has an exit code.
func liveBase(exitCode bool) *State {
	at := &Time{Time: time.Date(2025, 1, 15, 14, 30, 0, 123456000, time.UTC)}
	s := &State{SchemaVersion: SchemaVersion, RunID: "r1", Status: RunRunning, CreatedAt: at,
		Vars: map[string]string{}, VarOverrides: map[string]string{}, StepOrder: []StepKey{Key("a"), Key("b")}}
	s.Steps = map[StepKey]*StepState{Key("a"): newStepState(), Key("b"): newStepState()}
	a := s.Steps[Key("a")]
	a.Status, a.Attempts, a.PID, a.SessionMarker, a.LogPath = Running, 2, 77, "m", "/old.log"
	a.ReportPath, a.WaitingGates, a.LoopCompleted = strp("/old.json"), []string{"g"}, boolp(false)
	a.Feedback = &Feedback{Step: "gate", Reason: "no"}
	a.Signals = map[string]bool{"X": true}
	s.Steps[Key("b")].BlockedByLoop = strp("gate")
	if exitCode {
		s.Steps[Key("b")].ExitCode = intp(0)
	}
	return s
}

// checkLive checks, for the data mk makes, of an event of type typ
// about step "a": that when roundTrips says data round-trips, decoding
// its JSON gives data; and that the state apply makes from data equals
// the state Apply makes by decoding the event, before and after the
// caller changes what data points to (mutate).
func checkLive[T any](t *testing.T, typ string, mk func() T, mutate func(*T)) {
	t.Helper()
	for _, exitCode := range []bool{false, true} {
		data := mk()
		at := time.Date(2025, 1, 15, 14, 30, 1, 987654321, time.UTC)
		e := NewEvent(at, typ, Key("a"), data)
		e.Seq = 42
		if roundTrips(&data) {
			got := new(T)
			if err := json.Unmarshal(e.Data, got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, data) {
				t.Fatalf("said to round-trip, but decoding gives\n%#v\nnot\n%#v", *got, data)
			}
		}
		live, replayed := liveBase(exitCode), liveBase(exitCode)
		if err := apply(live, e, data); err != nil {
			t.Fatal(err)
		}
		if err := Apply(replayed, e); err != nil {
			t.Fatal(err)
		}
		sameState(t, live, replayed)
		mutate(&data)
		sameState(t, live, replayed)
	}
}

// sameState fails unless the states are deeply equal and encode alike.
func sameState(t *testing.T, live, replayed *State) {
	t.Helper()
	lj, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	rj, err := json.Marshal(replayed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(lj, rj) {
		t.Fatalf("live state\n%s\nreplayed state\n%s", lj, rj)
	}
	if !reflect.DeepEqual(live, replayed) {
		t.Fatalf("live state %#v\nreplayed %#v", live.Steps[Key("a")], replayed.Steps[Key("a")])
	}
}

// liveSeeds are strings the fuzz tests start from: escapes, HTML, the
// line separators, invalid UTF-8 and a lone surrogate.
var liveSeeds = []string{"", "/runs/r1/logs/a.0.1.log", `a"b\c<d>&e`, "\x00\x1f\t\n\u2028\u2029", "\xff", "héllo 世界", "\xed\xa0\x80", "DONE"}

// FuzzStepStartedLive: a step_started applied from its typed value
// gives the state its decoded event gives.
func FuzzStepStartedLive(f *testing.F) {
	f.Add(1, 0, "", "")
	f.Add(math.MaxInt64, math.MinInt64, liveSeeds[1], liveSeeds[2])
	f.Add(-3, 7, liveSeeds[3], liveSeeds[4])
	f.Add(0, -1, liveSeeds[5], liveSeeds[6])
	f.Add(1, 0, liveSeeds[4], "/r")
	f.Add(1, 0, "/l", liveSeeds[4])
	f.Fuzz(func(t *testing.T, attempt, iteration int, log, report string) {
		mk := func() StepStarted {
			return StepStarted{Attempt: attempt, Iteration: iteration, LogPath: log, ReportPath: report}
		}
		checkLive(t, EvStepStarted, mk, func(*StepStarted) {})
	})
}

// FuzzSessionStartedLive: a session_started applied from its typed
// value gives the state its decoded event gives.
func FuzzSessionStartedLive(f *testing.F) {
	f.Add(1, "", "", "")
	f.Add(math.MaxInt64, "flow-marker-1", liveSeeds[1], liveSeeds[2])
	f.Add(math.MinInt64, liveSeeds[3], liveSeeds[4], liveSeeds[5])
	f.Add(-1, liveSeeds[6], "/l", "/r")
	f.Add(2, "m", liveSeeds[4], "/r")
	f.Add(3, "m", "/l", liveSeeds[4])
	f.Fuzz(func(t *testing.T, pid int, marker, log, report string) {
		mk := func() SessionStarted {
			return SessionStarted{PID: pid, Marker: marker, LogPath: log, ReportPath: report}
		}
		checkLive(t, EvSessionStarted, mk, func(*SessionStarted) {})
	})
}

// FuzzStepCompletedLive: a step_completed applied from its typed value
// gives the state its decoded event gives, whichever of its optional
// fields are set (mask), nil or empty, and whatever the caller does to
// its maps, lists and exit code afterwards.
func FuzzStepCompletedLive(f *testing.F) {
	plain := outcomeMask{exit: 1, strs: 1, signals: 2}
	f.Add(1, int64(0), plain.pack(), "", "0s", "", false)
	// Round-tripping, with a map and an exit code that are the caller's.
	f.Add(2, int64(1), outcomeMask{exit: 1, err: 1, verdict: 2, strs: 2, signals: 3}.pack(), "OK", "<b>&", "", true)
	f.Add(math.MaxInt64, int64(math.MinInt64), outcomeMask{exit: 1, err: 3, verdict: 3, strs: 1, signals: 3}.pack(), liveSeeds[2], liveSeeds[3], "", false)
	// Decoded: invalid UTF-8 in a string or a key, an empty map or
	// slice, a report; and lists, metrics and usage.
	f.Add(1, int64(0), outcomeMask{exit: 1, err: 1}.pack(), liveSeeds[4], "", "", false)
	f.Add(1, int64(0), outcomeMask{verdict: 2}.pack(), "", liveSeeds[6], "", false)
	f.Add(1, int64(0), outcomeMask{strs: 1}.pack(), "", liveSeeds[4], "", false)
	f.Add(1, int64(0), outcomeMask{strs: 2}.pack(), liveSeeds[4], "s", "", false)
	f.Add(1, int64(0), outcomeMask{strs: 2}.pack(), "/r", liveSeeds[4], "", false)
	f.Add(1, int64(0), outcomeMask{signals: 3}.pack(), liveSeeds[4], "x", "", false)
	f.Add(1, int64(0), outcomeMask{signals: 1}.pack(), "", "", "", false)
	for _, m := range []outcomeMask{{artifacts: 1}, {artifacts: 2}, {logs: 1}, {logs: 3}, {metrics: 1}, {metrics: 2}, {report: 1}, {report: 2}, {usage: 1}} {
		m.exit, m.signals = 1, 2
		f.Add(-2, int64(-1), m.pack(), liveSeeds[5], liveSeeds[7], `{"k": [1, "<x>"]}`, false)
	}
	f.Add(0, int64(255), uint32(math.MaxUint32), liveSeeds[2], liveSeeds[1], " [1, 2] ", true)
	f.Fuzz(func(t *testing.T, attempt int, exit int64, mask uint32, a, b, raw string, budget bool) {
		mk := func() Outcome { return fuzzOutcome(attempt, exit, mask, a, b, raw, budget) }
		checkLive(t, EvStepCompleted, mk, func(o *Outcome) {
			for k := range o.Signals {
				o.Signals[k] = !o.Signals[k]
			}
			if o.Signals != nil {
				o.Signals["added"] = true
			}
			if o.ExitCode != nil {
				*o.ExitCode += 3
			}
			for k := range o.Metrics {
				o.Metrics[k] += "!"
			}
			for i := range o.Artifacts {
				o.Artifacts[i] += "!"
			}
			for i := range o.Logs {
				o.Logs[i] += "!"
			}
			if o.Usage != nil {
				o.Usage.Turns++
			}
		})
	})
}

// outcomeMask names the choices fuzzOutcome's mask packs.
type outcomeMask struct {
	// exit: ExitCode set; err, verdict: which string (see pick); strs:
	// Duration (1) or ReportPath and AgentSession (2); signals: nil,
	// empty, the default words or two keys; artifacts, logs: nil,
	// empty, one or two; metrics: nil, empty or two keys; report: nil,
	// empty or raw; usage: set.
	exit, err, verdict, strs, signals, artifacts, logs, metrics, report, usage uint32
}

// pack returns the mask of m.
func (m outcomeMask) pack() uint32 {
	return m.exit | m.err<<1 | m.verdict<<3 | m.strs<<5 | m.signals<<7 | m.artifacts<<9 | m.logs<<11 |
		m.metrics<<13 | m.report<<15 | m.usage<<17
}

// fuzzOutcome builds an Outcome from fuzzed values: mask says which
// fields are set, and how (nil, empty, holding a or b; see
// outcomeMask).
func fuzzOutcome(attempt int, exit int64, mask uint32, a, b, raw string, budget bool) Outcome {
	o := Outcome{Attempt: attempt, Budget: budget}
	bits := func(shift, n uint32) uint32 { return mask >> shift & (1<<n - 1) }
	if bits(0, 1) == 1 {
		code := int(exit)
		o.ExitCode = &code
	}
	pick := func(k uint32) string { return [...]string{"", a, b, a + b}[k] }
	o.Error, o.Verdict = pick(bits(1, 2)), pick(bits(3, 2))
	switch bits(5, 2) {
	case 1:
		o.Duration = b
	case 2:
		o.ReportPath, o.AgentSession = a, b
	}
	switch bits(7, 2) {
	case 1:
		o.Signals = map[string]bool{}
	case 2:
		o.Signals = map[string]bool{"DONE": budget, "FAIL": false, "PASS": !budget}
	case 3:
		o.Signals = map[string]bool{a: true, b: budget}
	}
	list := func(k uint32) []string { return [...][]string{nil, {}, {a}, {a, b}}[k] }
	o.Artifacts, o.Logs = list(bits(9, 2)), list(bits(11, 2))
	switch bits(13, 2) {
	case 1:
		o.Metrics = map[string]string{}
	case 2, 3:
		o.Metrics = map[string]string{a: b, "<k>": a}
	}
	switch bits(15, 2) {
	case 1:
		o.Report = json.RawMessage{}
	case 2:
		if json.Valid([]byte(raw)) {
			o.Report = json.RawMessage(raw)
		}
	}
	if bits(17, 1) == 1 {
		o.Usage = &AgentUsage{TokensIn: exit, CostUSD: 0.1, Turns: attempt}
	}
	return o
}

// TestRoundTrips: the data a plain step records round-trips, so the
// events of a run of plain steps are applied without decoding; data
// whose JSON decodes to something else is decoded.
func TestRoundTrips(t *testing.T) {
	for _, tt := range []struct {
		name string
		data any
		want bool
	}{
		{"started", &StepStarted{Attempt: 1}, true},
		{"session", &SessionStarted{PID: 9, Marker: "m", LogPath: "/l", ReportPath: "/r"}, true},
		{"completed", &Outcome{Attempt: 1, ExitCode: intp(0), Duration: "0s",
			Signals: map[string]bool{"DONE": false, "FAIL": false, "PASS": false}}, true},
		{"completed with lists and usage", &Outcome{Artifacts: []string{"a"}, Logs: []string{"l"},
			Metrics: map[string]string{"k": "v"}, Usage: &AgentUsage{CostUSD: 0.1}}, true},
		{"session invalid UTF-8", &SessionStarted{LogPath: "\xff"}, false},
		{"completed empty signals", &Outcome{Signals: map[string]bool{}}, false},
		{"completed signal key invalid UTF-8", &Outcome{Signals: map[string]bool{"\xff": true}}, false},
		{"completed metric invalid UTF-8", &Outcome{Metrics: map[string]string{"k": "\xff"}}, false},
		{"failed with evidence", &Outcome{Error: "e", Evidence: "out\n"}, true},
		{"failed evidence invalid UTF-8", &Outcome{Evidence: "\xff"}, false},
		{"completed empty logs", &Outcome{Logs: []string{}}, false},
		{"completed report", &Outcome{Report: json.RawMessage(`{}`)}, false},
		{"another type", &Note{Message: "m"}, false},
	} {
		if got := roundTrips(tt.data); got != tt.want {
			t.Errorf("%s: roundTrips %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestEmitHiddenSecretDecoded: when secrets are hidden in an event's
// data, the state holds what the log holds, not the typed value.
func TestEmitHiddenSecretDecoded(t *testing.T) {
	plan, err := NewPlan([]PlanStep{{ID: "a"}, {ID: "b"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCore(plan)
	c.HideSecrets(redact.New("hunter22"))
	st := liveBase(false)
	x := &decider{c: c, st: st, at: time.Unix(0, 0)}
	x.emit(EvSessionStarted, Key("a"), SessionStarted{PID: 1, Marker: "m", LogPath: "/logs/hunter22.log"})
	if got := st.Steps[Key("a")].LogPath; got != "/logs/***.log" {
		t.Errorf("log path %q, want the hidden one", got)
	}
	replayed := liveBase(false)
	if err := Apply(replayed, x.d.Events[0]); err != nil {
		t.Fatal(err)
	}
	sameState(t, st, replayed)
}

// TestRoundTripTypesReviewed fails when a field is added to, removed
// from or retyped in the data of the events every step records:
// roundTrips must be reviewed for it, then this list updated.
func TestRoundTripTypesReviewed(t *testing.T) {
	want := map[string]string{
		"StepStarted":    "Session bool session,omitempty|Attempt int attempt|Iteration int iteration|LogPath string log_path,omitempty|ReportPath string report_path,omitempty",
		"SessionStarted": "PID int pid|Marker string marker,omitempty|LogPath string log_path,omitempty|ReportPath string report_path,omitempty",
		"Outcome": "Attempt int attempt|ExitCode *int exit_code,omitempty|Error string error,omitempty|" +
			"ReportPath string report_path,omitempty|Artifacts []string artifacts,omitempty|" +
			"Metrics map[string]string metrics,omitempty|Logs []string logs,omitempty|" +
			"Signals map[string]bool signals,omitempty|Verdict string verdict,omitempty|" +
			"Report json.RawMessage report,omitempty|Duration string duration,omitempty|" +
			"Usage *core.AgentUsage usage,omitempty|AgentSession string agent_session,omitempty|Budget bool budget,omitempty|" +
			"Evidence string evidence,omitempty",
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[StepStarted](), reflect.TypeFor[SessionStarted](), reflect.TypeFor[Outcome]()} {
		var fields []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			fields = append(fields, f.Name+" "+f.Type.String()+" "+f.Tag.Get("json"))
		}
		if got := strings.Join(fields, "|"); got != want[typ.Name()] {
			t.Errorf("%s's fields changed: review roundTrips for them, then this test\n got %s\nwant %s", typ.Name(), got, want[typ.Name()])
		}
	}
}

// TestSessionMarkerGoesWithTheSession: a step holds its session's
// marker while the session runs, not after: a finished step of a large
// run holds no marker, and only running steps' markers find processes.
func TestSessionMarkerGoesWithTheSession(t *testing.T) {
	plan, err := NewPlan([]PlanStep{{ID: "a"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	st := liveBase(false)
	x := &decider{c: NewCore(plan), st: st, at: time.Unix(0, 0)}
	x.emit(EvSessionStarted, Key("a"), SessionStarted{PID: 7, Marker: "m", LogPath: "/logs/a.log"})
	if got := st.Steps[Key("a")].SessionMarker; got != "m" {
		t.Fatalf("running: marker %q, want m", got)
	}
	x.emit(EvStepCompleted, Key("a"), Outcome{Attempt: 1})
	if a := st.Steps[Key("a")]; a.SessionMarker != "" || a.PID != 7 {
		t.Errorf("completed: marker %q, pid %d; want no marker, pid 7", a.SessionMarker, a.PID)
	}
}

// TestStateSharesNoPointer: the events of one decision (a step
// completes, the next starts) give their steps equal times, but no
// two parts of a state share memory, by either path of applying them:
// changing one field in place never changes another.
func TestStateSharesNoPointer(t *testing.T) {
	plan, err := NewPlan([]PlanStep{{ID: "a"}, {ID: "b"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	live, replayed := liveBase(false), liveBase(false)
	x := &decider{c: NewCore(plan), st: live, at: time.Unix(100, 0)}
	zero := 0
	x.emit(EvStepCompleted, Key("a"), Outcome{Attempt: 1, ExitCode: &zero})
	x.emit(EvStepStarted, Key("b"), StepStarted{Attempt: 1})
	x.at = time.Unix(200, 0)
	x.emit(EvStepCompleted, Key("b"), Outcome{Attempt: 1, ExitCode: &zero})
	for _, e := range x.d.Events {
		if err := Apply(replayed, e); err != nil {
			t.Fatal(err)
		}
	}
	for name, st := range map[string]*State{"live": live, "replayed": replayed} {
		a, b := st.Steps[Key("a")], st.Steps[Key("b")]
		if !a.EndedAt.Equal(time.Unix(100, 0)) || !b.StartedAt.Equal(a.EndedAt.Time) || !b.EndedAt.Equal(time.Unix(200, 0)) || !st.UpdatedAt.Equal(b.EndedAt.Time) {
			t.Errorf("%s: a ended %v, b started %v and ended %v, updated %v", name, a.EndedAt, b.StartedAt, b.EndedAt, st.UpdatedAt)
		}
		seen := map[uintptr]string{}
		var walk func(v reflect.Value, path string)
		walk = func(v reflect.Value, path string) {
			switch v.Kind() {
			case reflect.Pointer, reflect.Map, reflect.Slice:
				if v.IsNil() || v.Kind() == reflect.Slice && v.Cap() == 0 {
					return
				}
				if other, ok := seen[v.Pointer()]; ok {
					t.Errorf("%s: %s and %s share memory", name, other, path)
				}
				seen[v.Pointer()] = path
			}
			switch v.Kind() {
			case reflect.Pointer:
				walk(v.Elem(), path)
			case reflect.Struct:
				for i := range v.NumField() {
					if v.Type().Field(i).IsExported() {
						walk(v.Field(i), path+"."+v.Type().Field(i).Name)
					}
				}
			case reflect.Map:
				for _, k := range v.MapKeys() {
					walk(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k))
				}
			case reflect.Slice:
				for i := range v.Len() {
					walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
				}
			}
		}
		walk(reflect.ValueOf(st), "state")
	}
}
