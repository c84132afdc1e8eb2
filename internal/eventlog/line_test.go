package eventlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// TestEventLines: every appended event is one line of the file, ending
// in a newline, whatever its strings hold; the line leads with its seq
// (which lets a reader skip events it has without decoding them),
// compacts Data, escapes what JSON must escape but not HTML's
// characters; and Read returns the event as it was appended.
func TestEventLines(t *testing.T) {
	at := NewTime(time.Date(2025, 1, 15, 14, 30, 0, 123456789, time.FixedZone("x", 3600)))
	tests := []struct {
		name string
		e    Event
		want string // the line without its newline; "" to skip comparing
	}{
		{"no step or data",
			Event{At: at, Type: "run_started"},
			`{"seq":1,"at":"2025-01-15T13:30:00.123456Z","type":"run_started"}`},
		{"data compacted",
			Event{At: at, Type: "step_completed", Step: sk("s1"), Data: json.RawMessage("{\n  \"attempt\" : 1,\n\t\"exit_code\": [0, 1] }\n")},
			`{"seq":1,"at":"2025-01-15T13:30:00.123456Z","type":"step_completed","step":"s1","data":{"attempt":1,"exit_code":[0,1]}}`},
		{"HTML characters kept",
			Event{At: at, Type: "t", Step: sk("a<b>&c"), Data: json.RawMessage(`{"out":"<b>&amp;</b>"}`)},
			`{"seq":1,"at":"2025-01-15T13:30:00.123456Z","type":"t","step":"a<b>&c","data":{"out":"<b>&amp;</b>"}}`},
		{"newlines and quotes escaped",
			Event{At: at, Type: "t", Step: sk("line\nnext\r\"quoted\"\\back\x01")},
			`{"seq":1,"at":"2025-01-15T13:30:00.123456Z","type":"t","step":"line\nnext\r\"quoted\"\\back\u0001"}`},
		{"line and paragraph separators escaped",
			Event{At: at, Type: "t", Step: sk("a\u2028b\u2029c é")},
			`{"seq":1,"at":"2025-01-15T13:30:00.123456Z","type":"t","step":"a\u2028b\u2029c é"}`},
		{"null data",
			Event{At: at, Type: "t", Data: json.RawMessage(`null`)},
			`{"seq":1,"at":"2025-01-15T13:30:00.123456Z","type":"t","data":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := afero.NewMemMapFs()
			l := openLog(t, fs)
			got := mustAppend(t, l, tt.e)
			raw, err := afero.ReadFile(fs, logPath)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Count(raw, []byte("\n")) != 1 || !bytes.HasSuffix(raw, []byte("\n")) {
				t.Fatalf("file is not one line:\n%q", raw)
			}
			line := bytes.TrimSuffix(raw, []byte("\n"))
			if tt.want != "" && string(line) != tt.want {
				t.Errorf("line = %s\nwant   %s", line, tt.want)
			}
			if seq, ok := leadingSeq(raw); !ok || seq != got.Seq {
				t.Errorf("leadingSeq = %d, %v; want %d, true", seq, ok, got.Seq)
			}
			events, err := Read(fs, logPath, 0)
			if err != nil || len(events) != 1 {
				t.Fatalf("Read = %+v, %v", events, err)
			}
			checkSameEvent(t, events[0], got)
		})
	}
}

// TestEventLinesOfABatch: AppendAll writes one line per event, which
// Read returns in order.
func TestEventLinesOfABatch(t *testing.T) {
	fs := afero.NewMemMapFs()
	l := openLog(t, fs)
	batch := []Event{
		ev("step_completed", "a\nb"),
		{At: NewTime(t0), Type: "step_started", Step: sk("c"), Data: json.RawMessage(" [1,\n2] ")},
		ev("run_completed", ""),
	}
	got, err := l.AppendAll(batch)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := afero.ReadFile(fs, logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	if len(lines) != 4 || lines[3] != "" {
		t.Fatalf("file has lines %q, want 3 whole lines", lines)
	}
	events, err := Read(fs, logPath, 0)
	if err != nil || len(events) != len(got) {
		t.Fatalf("Read = %+v, %v", events, err)
	}
	for i := range got {
		checkSameEvent(t, events[i], got[i])
	}
}

// checkSameEvent reports whether read, an event read from the log, is
// the event appended: the same fields, with the same Data as JSON (the
// log compacts it) and At to the microsecond.
func checkSameEvent(t *testing.T, read, appended Event) {
	t.Helper()
	var want bytes.Buffer
	if len(appended.Data) > 0 {
		if err := json.Compact(&want, appended.Data); err != nil {
			t.Fatal(err)
		}
	}
	if read.Seq != appended.Seq || read.Type != appended.Type || read.Step != appended.Step ||
		!bytes.Equal(read.Data, want.Bytes()) ||
		!read.At.Equal(appended.At.Truncate(time.Microsecond)) {
		t.Errorf("read %+v\nappended %+v", read, appended)
	}
}
