package core

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// stepEncoder writes StepStates as encoding/json writes them: as
// json.Marshal does when its indent is "", else as a json.Encoder with
// SetIndent(indent+indent, indent) does (without the Encoder's final
// newline), which is how State.encode lays out a step inside "steps".
// The fields of a plain command step are written by hand, because
// reflection dominated the cost of a large run's snapshot; the rare,
// nested fields (feedback, human, usage, loop items, items) are handed
// to encoding/json and indented as it would indent them in place.
//
// A stepEncoder reuses its buffers and is not safe for concurrent use.
type stepEncoder struct {
	// field starts a line of the step's object: "\n", the prefix and
	// one indent; elem starts a line of a field's array or object, one
	// indent deeper; end starts the line of the step's closing brace.
	// All three are empty when compact.
	field, elem, end string
	// colon separates a key from its value: ": " when indented.
	colon string

	// indent is the indent the encoder was made with, "" when compact.
	indent string
	// keys is reused to sort the keys of a map.
	keys []string
	// nested writes into nestedBuf the fields handed to encoding/json,
	// and ref into refBuf whole steps when the fast path fails (see
	// appendStep); both encoders are made on first use.
	nested, ref       *json.Encoder
	nestedBuf, refBuf bytes.Buffer
}

// newStepEncoder returns an encoder of steps for State.encode's indent.
func newStepEncoder(indent string) *stepEncoder {
	e := &stepEncoder{indent: indent, colon: ":"}
	if indent != "" {
		prefix := indent + indent
		e.end = "\n" + prefix
		e.field = e.end + indent
		e.elem = e.field + indent
		e.colon = ": "
	}
	return e
}

// appendStep appends st to dst as encoding/json would write it (see
// stepEncoder). When a field cannot be written (a time outside years
// 0-9999, a nested value encoding/json rejects), the whole step is
// encoded again by encoding/json, whose result, output or error, is
// returned: the errors are the ones State.encode returned when
// encoding/json wrote every step.
func (e *stepEncoder) appendStep(dst []byte, st *StepState) ([]byte, error) {
	out, err := e.appendFields(dst, st)
	if err != nil {
		return e.appendReference(dst, st)
	}
	return out, nil
}

// appendReference appends st to dst as encoding/json's Encoder writes
// it, without the final newline: the reference the hand-written
// encoder must match byte for byte.
func (e *stepEncoder) appendReference(dst []byte, st *StepState) ([]byte, error) {
	if e.ref == nil {
		e.ref = json.NewEncoder(&e.refBuf)
		if e.indent != "" {
			e.ref.SetIndent(e.indent+e.indent, e.indent)
		}
	}
	e.refBuf.Reset()
	if err := e.ref.Encode(st); err != nil {
		return dst, err
	}
	b := e.refBuf.Bytes()
	return append(dst, b[:len(b)-1]...), nil
}

// appendFields appends st's object to dst, field by field in the order
// and with the omitempty rules of StepState's tags.
func (e *stepEncoder) appendFields(dst []byte, st *StepState) ([]byte, error) {
	var err error
	// "status" is never omitted: every other field follows a comma.
	dst = append(dst, '{')
	dst = e.key(dst, `"status"`, true)
	dst = appendJSONString(dst, string(st.Status))
	dst = strconv.AppendInt(e.key(dst, `"attempts"`, false), int64(st.Attempts), 10)
	dst = strconv.AppendInt(e.key(dst, `"iteration_count"`, false), int64(st.IterationCount), 10)
	dst = appendStringPtr(e.key(dst, `"report_path"`, false), st.ReportPath)
	if dst, err = appendTimePtr(e.key(dst, `"started_at"`, false), st.StartedAt); err != nil {
		return dst, err
	}
	if dst, err = appendTimePtr(e.key(dst, `"ended_at"`, false), st.EndedAt); err != nil {
		return dst, err
	}
	dst = appendStringPtr(e.key(dst, `"last_error"`, false), st.LastError)
	dst = e.strings(e.key(dst, `"artifacts"`, false), st.Artifacts)
	dst = e.stringMap(e.key(dst, `"metrics"`, false), st.Metrics)
	dst = e.strings(e.key(dst, `"logs"`, false), st.Logs)
	dst = appendStringPtr(e.key(dst, `"manual_input_path"`, false), st.ManualInputPath)
	dst = appendStringPtr(e.key(dst, `"blocked_by_loop"`, false), st.BlockedByLoop)
	if st.WaitingFor() != nil {
		dst = appendJSONString(e.key(dst, `"waiting_for"`, false), *st.WaitingFor())
	}
	if len(st.WaitingGates()) > 0 {
		dst = e.strings(e.key(dst, `"waiting_gates"`, false), st.WaitingGates())
	}
	if st.ExitCode != nil {
		dst = strconv.AppendInt(e.key(dst, `"exit_code"`, false), int64(*st.ExitCode), 10)
	}
	if st.Verdict != "" {
		dst = appendJSONString(e.key(dst, `"verdict"`, false), st.Verdict)
	}
	if len(st.Signals) > 0 {
		dst = e.boolMap(e.key(dst, `"signals"`, false), st.Signals)
	}
	if st.LogPath != "" {
		dst = appendJSONString(e.key(dst, `"log_path"`, false), st.LogPath)
	}
	if st.PID != 0 {
		dst = strconv.AppendInt(e.key(dst, `"pid"`, false), int64(st.PID), 10)
	}
	if st.SessionMarker != "" {
		dst = appendJSONString(e.key(dst, `"session_marker"`, false), st.SessionMarker)
	}
	if st.GateFailed() {
		dst = append(e.key(dst, `"gate_failed"`, false), "true"...)
	}
	if st.Feedback() != nil {
		if dst, err = e.nestedValue(e.key(dst, `"feedback"`, false), st.Feedback()); err != nil {
			return dst, err
		}
	}
	if st.Human() != nil {
		if dst, err = e.nestedValue(e.key(dst, `"human"`, false), st.Human()); err != nil {
			return dst, err
		}
	}
	if st.Usage() != nil {
		if dst, err = e.nestedValue(e.key(dst, `"usage"`, false), st.Usage()); err != nil {
			return dst, err
		}
	}
	if st.AgentSession() != "" {
		dst = appendJSONString(e.key(dst, `"agent_session"`, false), st.AgentSession())
	}
	if st.ConversationUsage() != nil {
		if dst, err = e.nestedValue(e.key(dst, `"conversation_usage"`, false), st.ConversationUsage()); err != nil {
			return dst, err
		}
	}
	if len(st.LoopItems()) > 0 {
		if dst, err = e.nestedValue(e.key(dst, `"loop_items"`, false), st.LoopItems()); err != nil {
			return dst, err
		}
	}
	if st.LoopIndex() != nil {
		dst = strconv.AppendInt(e.key(dst, `"loop_index"`, false), int64(*st.LoopIndex()), 10)
	}
	if st.LoopCompleted() != nil {
		dst = strconv.AppendBool(e.key(dst, `"loop_completed"`, false), *st.LoopCompleted())
	}
	if len(st.Items()) > 0 {
		if dst, err = e.nestedValue(e.key(dst, `"items"`, false), st.Items()); err != nil {
			return dst, err
		}
	}
	if len(st.RemovedItems()) > 0 {
		dst = e.strings(e.key(dst, `"removed_items"`, false), st.RemovedItems())
	}
	dst = append(dst, e.end...)
	return append(dst, '}'), nil
}

// key appends the start of a field of the step's object: a comma unless
// it is the first, the line's indentation and the quoted name, which
// needs no escaping, then the colon.
func (e *stepEncoder) key(dst []byte, quoted string, first bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, e.field...)
	dst = append(dst, quoted...)
	return append(dst, e.colon...)
}

// strings appends a field's array of strings: null when nil, [] when
// empty, else one element a line.
func (e *stepEncoder) strings(dst []byte, list []string) []byte {
	if list == nil {
		return append(dst, "null"...)
	}
	if len(list) == 0 {
		return append(dst, "[]"...)
	}
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e.elem...)
		dst = appendJSONString(dst, s)
	}
	dst = append(dst, e.field...)
	return append(dst, ']')
}

// stringMap appends a field's map of strings as encoding/json does:
// null when nil, {} when empty, else its keys sorted, one a line.
func (e *stepEncoder) stringMap(dst []byte, m map[string]string) []byte {
	return appendMap(e, dst, m, appendJSONString)
}

// boolMap is stringMap for a map of booleans.
func (e *stepEncoder) boolMap(dst []byte, m map[string]bool) []byte {
	return appendMap(e, dst, m, strconv.AppendBool)
}

// appendMap appends m as stringMap describes, each value written by
// value.
func appendMap[V any](e *stepEncoder, dst []byte, m map[string]V, value func([]byte, V) []byte) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	if len(m) == 0 {
		return append(dst, "{}"...)
	}
	e.keys = sortedKeys(e.keys, m)
	dst = append(dst, '{')
	for i, k := range e.keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e.elem...)
		dst = append(appendJSONString(dst, k), e.colon...)
		dst = value(dst, m[k])
	}
	dst = append(dst, e.field...)
	return append(dst, '}')
}

// sortedKeys returns the keys of m in the order encoding/json writes
// them (byte-wise), in keys, reused.
func sortedKeys[V any](keys []string, m map[string]V) []string {
	keys = keys[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// nestedValue appends v, a field's value, as encoding/json writes it in
// place: compact, or indented one level deeper than the step's fields.
func (e *stepEncoder) nestedValue(dst []byte, v any) ([]byte, error) {
	if e.nested == nil {
		e.nested = json.NewEncoder(&e.nestedBuf)
		if e.indent != "" {
			e.nested.SetIndent(e.field[1:], e.indent)
		}
	}
	e.nestedBuf.Reset()
	if err := e.nested.Encode(v); err != nil {
		return dst, err
	}
	b := e.nestedBuf.Bytes()
	return append(dst, b[:len(b)-1]...), nil // without Encode's newline
}

// appendStringPtr appends *p as a JSON string, or null when p is nil.
func appendStringPtr(dst []byte, p *string) []byte {
	if p == nil {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, *p)
}

// appendTimePtr appends *t as Time.MarshalJSON writes it, or null when
// t is nil.
func appendTimePtr(dst []byte, t *Time) ([]byte, error) {
	if t == nil {
		return append(dst, "null"...), nil
	}
	u := t.UTC()
	year, month, day := u.Date()
	if year < 0 || year > 9999 {
		// Time's own error, which appendStep replaces by encoding/json's.
		return t.AppendText(dst)
	}
	// As Time.AppendText formats it, "2006-01-02T15:04:05.000000Z",
	// without parsing the layout: the fraction is truncated.
	hour, minute, sec := u.Clock()
	dst = append(dst, '"')
	dst = appendDigits(dst, year, 4)
	dst = appendDigits(append(dst, '-'), int(month), 2)
	dst = appendDigits(append(dst, '-'), day, 2)
	dst = appendDigits(append(dst, 'T'), hour, 2)
	dst = appendDigits(append(dst, ':'), minute, 2)
	dst = appendDigits(append(dst, ':'), sec, 2)
	dst = appendDigits(append(dst, '.'), u.Nanosecond()/1000, 6)
	return append(dst, 'Z', '"'), nil
}

// appendDigits appends n, which is not negative and has at most width
// digits, as width decimal digits, leading zeros included.
func appendDigits(dst []byte, n, width int) []byte {
	dst = append(dst, "000000"[:width]...)
	for i := len(dst) - 1; n > 0; i-- {
		dst[i] = byte('0' + n%10)
		n /= 10
	}
	return dst
}

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it with HTML escaping on, its default: ", \ and the control
// characters escaped (\b, \f, \n, \r and \t by name, others as \u00XX),
// <, > and & as \u003c, \u003e and \u0026, each byte of invalid UTF-8
// as \ufffd, and U+2028 and U+2029 as \u2028 and \u2029.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
