package agents

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// The decoders below never fail: the tools' output is read leniently, so
// a value of an unexpected type reads as zero rather than losing the
// rest of the object. (encoding/json stops at an error returned by an
// Unmarshaler but skips a field of the wrong type and carries on.)

// count is a token or turn count: a JSON number (integral or not) or a
// numeric string, floored at zero and capped at MaxInt64.
type count int64

func (c *count) UnmarshalJSON(b []byte) error {
	f, ok := number(b)
	switch {
	case !ok || f <= 0 || math.IsNaN(f):
		*c = 0
	case f >= math.MaxInt64:
		*c = math.MaxInt64
	default:
		*c = count(f)
	}
	return nil
}

// dollars is a cost: a JSON number or a numeric string.
type dollars float64

func (d *dollars) UnmarshalJSON(b []byte) error {
	f, ok := number(b)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	*d = dollars(f)
	return nil
}

// flag is a boolean: true, or the string "true" in any case.
type flag bool

func (f *flag) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	v, err := strconv.ParseBool(s)
	*f = flag(err == nil && v)
	return nil
}

// text is a string; any other JSON value reads as "".
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) != nil {
		s = ""
	}
	*t = text(s)
	return nil
}

func number(b []byte) (float64, bool) {
	s := string(bytes.Trim(b, `"`))
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// errorMessage reads an error that a tool gives as a string or as an
// object with a message (or error) field; null and {} read as "", and
// present reports whether there was an error at all.
func errorMessage(raw json.RawMessage) (msg string, present bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "false" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var o struct {
		Message text            `json:"message"`
		Error   json.RawMessage `json:"error"`
		Type    text            `json:"type"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return "", true
	}
	if o.Message != "" {
		return string(o.Message), true
	}
	if m, ok := errorMessage(o.Error); ok && m != "" {
		return m, true
	}
	return string(o.Type), true
}
