package eventlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// encodeLine appends e to buf as one line of events.jsonl: byte for
// byte what a json.Encoder without HTML escaping writes for it, Data
// compacted (and checked to be JSON), but without reflection. On an
// error buf may hold part of the line; the caller discards it.
func encodeLine(buf *bytes.Buffer, e *Event) error {
	b := buf.AvailableBuffer()
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"at":"`...)
	b, err := e.At.AppendText(b)
	if err != nil {
		return fmt.Errorf("json: error calling MarshalJSON for type event.Time: %w", err)
	}
	b = append(b, `","type":`...)
	if b, err = appendString(b, e.Type); err != nil {
		return err
	}
	if e.Step != "" {
		b = append(b, `,"step":`...)
		if b, err = appendString(b, e.Step); err != nil {
			return err
		}
	}
	if len(e.Data) > 0 {
		b = append(b, `,"data":`...)
		buf.Write(b)
		if err := json.Compact(buf, e.Data); err != nil {
			return fmt.Errorf("json: error calling MarshalJSON for type json.RawMessage: %w", err)
		}
		b = buf.AvailableBuffer()
	}
	b = append(b, "}\n"...)
	buf.Write(b)
	return nil
}

// appendString appends s as a JSON string, as encoding/json writes it
// without HTML escaping. Strings of printable ASCII other than the quote
// and the backslash, as event types and step keys are, are copied;
// others go through encoding/json.
func appendString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var w bytes.Buffer
			enc := json.NewEncoder(&w)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(s); err != nil {
				return b, err
			}
			return append(b, bytes.TrimSuffix(w.Bytes(), []byte("\n"))...), nil
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}
