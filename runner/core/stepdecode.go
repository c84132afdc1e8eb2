package core

import (
	"strconv"
	"unicode/utf8"
)

// DecodeSteps decodes a JSON object of steps, {"id": {...}, ...}, to
// exactly what json.Unmarshal gives for a map[string]*StepState, for
// the steps flow writes for most runs; reading a snapshot is most of
// what flow status and a takeover spend on a run of thousands of steps.
// ok is false, and the caller decodes b with encoding/json, at anything
// it does not read exactly as encoding/json does: a string with an
// escape or that is not UTF-8, a key that is not a field's exact name or
// that comes twice, a number with a fraction or an exponent, a value of
// another type than the field's, and the fields held behind a pointer to
// a struct or that only loops have (feedback, human, usage,
// conversation_usage, loop_items, loop_index, loop_completed, items,
// removed_items). The fuzz test FuzzDecodeSteps holds it to that.
func DecodeSteps(b []byte) (steps map[string]*StepState, ok bool) {
	p := stepParser{b: b}
	steps = map[string]*StepState{}
	p.ws()
	ok = p.object(func() bool {
		id, ok := p.str()
		if !ok || !p.colon() {
			return false
		}
		st, ok := p.step()
		steps[id] = st
		return ok
	})
	if !ok || !p.end() {
		return nil, false
	}
	return steps, true
}

// stepParser reads the JSON of steps at b[i:].
type stepParser struct {
	b []byte
	i int
	// noMetrics is the empty metrics map the parsed steps share, as a
	// State's steps share theirs (State.emptyMetrics).
	noMetrics map[string]string
}

// The fields DecodeSteps reads, by JSON name.
const (
	sfStatus = iota
	sfAttempts
	sfIterationCount
	sfReportPath
	sfStartedAt
	sfEndedAt
	sfLastError
	sfArtifacts
	sfMetrics
	sfLogs
	sfManualInputPath
	sfBlockedByLoop
	sfWaitingFor
	sfWaitingGates
	sfExitCode
	sfVerdict
	sfSignals
	sfLogPath
	sfPID
	sfSessionMarker
	sfGateFailed
	sfAgentSession
)

var stepFields = map[string]int{
	"status": sfStatus, "attempts": sfAttempts, "iteration_count": sfIterationCount,
	"report_path": sfReportPath, "started_at": sfStartedAt, "ended_at": sfEndedAt,
	"last_error": sfLastError, "artifacts": sfArtifacts, "metrics": sfMetrics, "logs": sfLogs,
	"manual_input_path": sfManualInputPath, "blocked_by_loop": sfBlockedByLoop,
	"waiting_for": sfWaitingFor, "waiting_gates": sfWaitingGates, "exit_code": sfExitCode,
	"verdict": sfVerdict, "signals": sfSignals, "log_path": sfLogPath, "pid": sfPID,
	"session_marker": sfSessionMarker, "gate_failed": sfGateFailed, "agent_session": sfAgentSession,
}

// step reads one step's object.
func (p *stepParser) step() (*StepState, bool) {
	s := &StepState{}
	var seen uint32
	ok := p.object(func() bool {
		key, ok := p.raw()
		if !ok {
			return false
		}
		f, known := stepFields[string(key)]
		if !known || seen&(1<<f) != 0 || !p.colon() {
			return false
		}
		seen |= 1 << f
		return p.field(s, f)
	})
	return s, ok
}

// field reads the value of field f into s. A field's key comes once
// and s starts zero, so null leaves the field zero: what encoding/json
// does for a string, a number or a bool (it leaves them) and for a
// pointer, a slice or a map (it makes them nil).
func (p *stepParser) field(s *StepState, f int) bool {
	if p.lit("null") {
		return true
	}
	var ok bool
	switch f {
	case sfStatus:
		s.Status, ok = p.status()
	case sfVerdict:
		s.Verdict, ok = p.str()
	case sfLogPath:
		s.LogPath, ok = p.str()
	case sfSessionMarker:
		s.SessionMarker, ok = p.str()
	case sfAgentSession:
		s.More().AgentSession, ok = p.str()
	case sfAttempts:
		s.Attempts, ok = p.int()
	case sfIterationCount:
		s.IterationCount, ok = p.int()
	case sfPID:
		s.PID, ok = p.int()
	case sfGateFailed:
		s.More().GateFailed, ok = p.bool()
	case sfReportPath:
		s.ReportPath, ok = p.strPtr()
	case sfLastError:
		s.LastError, ok = p.strPtr()
	case sfManualInputPath:
		s.ManualInputPath, ok = p.strPtr()
	case sfBlockedByLoop:
		s.BlockedByLoop, ok = p.strPtr()
	case sfWaitingFor:
		s.Wait().WaitingFor, ok = p.strPtr()
	case sfStartedAt:
		s.StartedAt, ok = p.time()
	case sfEndedAt:
		s.EndedAt, ok = p.time()
	case sfExitCode:
		var n int
		if n, ok = p.int(); ok {
			s.ExitCode = &n
		}
	case sfArtifacts:
		s.Artifacts, ok = p.strings()
	case sfLogs:
		s.Logs, ok = p.strings()
	case sfWaitingGates:
		s.Wait().WaitingGates, ok = p.strings()
	case sfMetrics:
		if s.Metrics, ok = p.stringMap(); ok && len(s.Metrics) == 0 {
			if p.noMetrics == nil {
				p.noMetrics = s.Metrics
			}
			s.Metrics = p.noMetrics
		}
	case sfSignals:
		s.Signals, ok = p.signals()
	}
	return ok
}

// strPtr reads a string into a new pointer.
func (p *stepParser) strPtr() (*string, bool) {
	v, ok := p.str()
	if !ok {
		return nil, false
	}
	return &v, true
}

// time reads a string as Time's UnmarshalJSON does.
func (p *stepParser) time() (*Time, bool) {
	from := p.i
	if _, ok := p.raw(); !ok {
		return nil, false
	}
	t := new(Time)
	if t.UnmarshalJSON(p.b[from:p.i]) != nil {
		return nil, false
	}
	return t, true
}

// bool reads true or false.
func (p *stepParser) bool() (bool, bool) {
	switch {
	case p.lit("true"):
		return true, true
	case p.lit("false"):
		return false, true
	}
	return false, false
}

// strings reads an array of strings; [] is an empty slice, not nil.
func (p *stepParser) strings() ([]string, bool) {
	if !p.lit("[") {
		return nil, false
	}
	list := []string{}
	p.ws()
	if p.lit("]") {
		return list, true
	}
	for {
		p.ws()
		v, ok := p.str()
		if !ok {
			return nil, false
		}
		list = append(list, v)
		p.ws()
		if p.lit(",") {
			continue
		}
		return list, p.lit("]")
	}
}

// stringMap reads an object of strings; {} is an empty map, not nil. A
// key seen twice keeps its last value, as in encoding/json.
func (p *stepParser) stringMap() (map[string]string, bool) {
	m := map[string]string{}
	ok := p.object(func() bool {
		k, ok := p.str()
		if !ok || !p.colon() {
			return false
		}
		v, ok := p.str()
		m[k] = v
		return ok
	})
	return m, ok
}

// signals reads a step's signals, an object of booleans. Most steps'
// hold exactly the default signal words, and get one of the maps the
// steps of a run share (internSignals) without a map of their own.
func (p *stepParser) signals() (map[string]bool, bool) {
	var seen, set int // bits of defaultSignalWords
	var m map[string]bool
	ok := p.object(func() bool {
		k, ok := p.raw()
		if !ok || !p.colon() {
			return false
		}
		v, ok := p.bool()
		if !ok {
			return false
		}
		if m == nil {
			w := defaultSignalWord(k)
			if w >= 0 && seen&(1<<w) == 0 {
				seen |= 1 << w
				if v {
					set |= 1 << w
				}
				return true
			}
			// Another word, or one repeated (the last value wins, as
			// in encoding/json): the step's own map.
			m = signalMap(seen, set)
		}
		m[string(k)] = v
		return true
	})
	if !ok {
		return nil, false
	}
	if m == nil {
		if seen == 1<<len(defaultSignalWords)-1 {
			return sharedSignals[set], true
		}
		m = signalMap(seen, set)
	}
	return m, true
}

// defaultSignalWord returns the index of k in defaultSignalWords, or -1.
func defaultSignalWord(k []byte) int {
	for i, w := range defaultSignalWords {
		if string(k) == w {
			return i
		}
	}
	return -1
}

// signalMap returns a new map of the default words whose bits seen has,
// each true when its bit in set is.
func signalMap(seen, set int) map[string]bool {
	m := make(map[string]bool, len(defaultSignalWords)+1)
	for i, w := range defaultSignalWords {
		if seen&(1<<i) != 0 {
			m[w] = set&(1<<i) != 0
		}
	}
	return m
}

// status reads a step's status; the statuses flow writes are its
// constants, not a string each.
func (p *stepParser) status() (Status, bool) {
	raw, ok := p.raw()
	if !ok {
		return "", false
	}
	for _, s := range stepStatuses {
		if string(raw) == string(s) {
			return s, true
		}
	}
	return Status(raw), true
}

// stepStatuses are the statuses of a step.
var stepStatuses = [...]Status{Completed, Pending, Running, Failed, Skipped, WaitingOnHuman}

// object reads {member, ...}, each member by member.
func (p *stepParser) object(member func() bool) bool {
	if !p.lit("{") {
		return false
	}
	p.ws()
	if p.lit("}") {
		return true
	}
	for {
		p.ws()
		if !member() {
			return false
		}
		p.ws()
		if p.lit(",") {
			continue
		}
		return p.lit("}")
	}
}

func (p *stepParser) colon() bool {
	p.ws()
	ok := p.lit(":")
	p.ws()
	return ok
}

// str reads a string without escapes or control characters, which is
// valid UTF-8: its bytes are its value.
func (p *stepParser) str() (string, bool) {
	raw, ok := p.raw()
	if !ok {
		return "", false
	}
	return string(raw), true
}

// raw reads a string as str does, and returns its bytes in b.
func (p *stepParser) raw() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	j := p.i + 1
	for ; j < len(p.b); j++ {
		c := p.b[j]
		if c == '"' {
			break
		}
		if c == '\\' || c < 0x20 {
			return nil, false
		}
	}
	if j >= len(p.b) || !utf8.Valid(p.b[p.i+1:j]) {
		return nil, false
	}
	raw := p.b[p.i+1 : j]
	p.i = j + 1
	return raw, true
}

// int reads an integer as JSON writes it (no leading zeros, no fraction
// or exponent) that fits an int.
func (p *stepParser) int() (int, bool) {
	from := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case p.i < len(p.b) && p.b[p.i] >= '1' && p.b[p.i] <= '9':
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
		}
	default:
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E' || p.b[p.i] >= '0' && p.b[p.i] <= '9') {
		return 0, false
	}
	n, err := strconv.Atoi(string(p.b[from:p.i]))
	return n, err == nil
}

// lit reads s, which must not run on into a letter or a digit ("nullx"
// is not null).
func (p *stepParser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	if n := p.i + len(s); len(s) > 1 && n < len(p.b) && isWordByte(p.b[n]) {
		return false
	}
	p.i += len(s)
	return true
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// ws skips JSON white space.
func (p *stepParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// end reports whether only white space follows.
func (p *stepParser) end() bool {
	p.ws()
	return p.i == len(p.b)
}
