package eventlog

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// encoderLine is what a json.Encoder without HTML escaping writes for
// e: what encodeLine must write.
func encoderLine(e Event) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(e)
	return b.Bytes(), err
}

func checkEncodeLine(t *testing.T, e Event) {
	t.Helper()
	want, werr := encoderLine(e)
	var b bytes.Buffer
	b.WriteString("before|")
	gerr := encodeLine(&b, &e)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%+v: encodeLine error %v, json.Encoder error %v", e, gerr, werr)
	}
	if werr != nil {
		return
	}
	if got := bytes.TrimPrefix(b.Bytes(), []byte("before|")); !bytes.Equal(got, want) {
		t.Errorf("encodeLine = %s\njson.Encoder = %s", got, want)
	}
}

func TestEncodeLine(t *testing.T) {
	at := NewTime(time.Date(2025, 1, 15, 14, 30, 0, 123456789, time.FixedZone("x", 3600)))
	for _, e := range []Event{
		{Seq: 1, At: at, Type: "run_started"},
		{Seq: 42, At: at, Type: "step_completed", Step: "s1", Data: json.RawMessage(`{"attempt":1,"exit_code":0}`)},
		{Seq: 3, At: at, Type: "step_started", Step: "stories[a-b].review", Data: json.RawMessage(" {\n \"a\" : [1, 2,\t3], \"b\": \"<&>\\u003c\" } ")},
		{Seq: 4, At: at, Type: "t", Step: "quote\"back\\slash", Data: json.RawMessage(`null`)},
		{Seq: 5, At: at, Type: "t", Step: "ctl\x01\n\t\u2028é\xff<>&"},
		{Seq: 6, At: at, Type: "t", Data: json.RawMessage(`{"a":`)},
		{Seq: 7, At: NewTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)), Type: "t"},
		{Seq: -1, Type: ""},
	} {
		checkEncodeLine(t, e)
	}
}

func FuzzEncodeLine(f *testing.F) {
	f.Add(int64(1), int64(0), "step_started", "s1", []byte(`{"attempt":1}`))
	f.Add(int64(9), int64(1e18), "x\"", "a\\b\u2028", []byte(" [1, {\"a\" : \"<\"}] "))
	f.Add(int64(-3), int64(-1e18), "", "\xff", []byte(`nul`))
	f.Fuzz(func(t *testing.T, seq, nanos int64, typ, step string, data []byte) {
		e := Event{Seq: seq, At: NewTime(time.Unix(0, nanos)), Type: typ, Step: step}
		if len(data) > 0 {
			e.Data = json.RawMessage(data)
		}
		checkEncodeLine(t, e)
	})
}

func BenchmarkEncodeLine(b *testing.B) {
	e := Event{Seq: 42, At: NewTime(time.Now()), Type: "step_completed", Step: "s1",
		Data: json.RawMessage(`{"attempt":1,"exit_code":0,"signals":{"DONE":false,"FAIL":false,"PASS":false},"duration":"13ms"}`)}
	var buf bytes.Buffer
	b.Run("encodeLine", func(b *testing.B) {
		for b.Loop() {
			buf.Reset()
			_ = encodeLine(&buf, &e)
		}
	})
	b.Run("json.Encoder", func(b *testing.B) {
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			_ = enc.Encode(e)
		}
	})
}
