package event

import (
	"fmt"
	"time"
)

// timeLayout is the one form in which times are written: UTC with
// microseconds, as in "2025-01-15T14:30:00.123456Z".
const timeLayout = "2006-01-02T15:04:05.000000Z"

// Time is a time.Time that marshals as UTC with microseconds, as in
// "2025-01-15T14:30:00.123456Z", and unmarshals any RFC 3339 time.
// Precision beyond microseconds is truncated when marshalling.
type Time struct{ time.Time }

// NewTime returns t as a Time.
func NewTime(t time.Time) Time { return Time{t} }

// String returns the time in the form it is written in.
func (t Time) String() string { return t.UTC().Format(timeLayout) }

// MarshalText returns the time as UTC with microseconds.
func (t Time) MarshalText() ([]byte, error) {
	return t.AppendText(make([]byte, 0, len(timeLayout)))
}

// AppendText appends the time as UTC with microseconds to b.
func (t Time) AppendText(b []byte) ([]byte, error) {
	u := t.UTC()
	if y := u.Year(); y < 0 || y > 9999 {
		return b, fmt.Errorf("marshal time %v: year outside [0,9999]", t.Time)
	}
	return u.AppendFormat(b, timeLayout), nil
}

// UnmarshalText parses any RFC 3339 time and converts it to UTC.
func (t *Time) UnmarshalText(b []byte) error {
	parsed, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return fmt.Errorf("parse time %q: %w", b, err)
	}
	t.Time = parsed.UTC()
	return nil
}

// MarshalJSON returns the time as a JSON string, UTC with microseconds.
func (t Time) MarshalJSON() ([]byte, error) {
	text, err := t.MarshalText()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(text)+2)
	out = append(out, '"')
	out = append(out, text...)
	return append(out, '"'), nil
}

// UnmarshalJSON parses a JSON string holding an RFC 3339 time. JSON null
// leaves the time unchanged.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("parse time %s: not a JSON string", b)
	}
	return t.UnmarshalText(b[1 : len(b)-1])
}
