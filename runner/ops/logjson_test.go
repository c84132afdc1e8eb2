package ops

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flow-run/flow/runner/record"
)

func TestChunkWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"one write", []string{"hello\n"}, "hello\n"},
		{"a character split between writes", []string{"caf\xc3", "\xa9 ok\n"}, "café ok\n"},
		{"a character split three ways", []string{"\xe2", "\x82", "\xac\n"}, "€\n"},
		{"invalid bytes replaced", []string{"a\xffb\n"}, "a\uFFFDb\n"},
		{"an incomplete character at the end", []string{"x\xe2\x82"}, "x\uFFFD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			cw := newChunkWriter(enc, "r", "s", record.LogFile{Name: "s.0.1.log", Attempt: 1}, 0)
			for _, w := range tc.writes {
				if n, err := cw.Write([]byte(w)); err != nil || n != len(w) {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if err := cw.Close(); err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			var off int64
			dec := json.NewDecoder(&out)
			for dec.More() {
				var c LogChunk
				if err := dec.Decode(&c); err != nil {
					t.Fatal(err)
				}
				if c.Offset != off {
					t.Errorf("chunk %q at offset %d, want %d", c.Text, c.Offset, off)
				}
				if c.Type != "log" || c.RunID != "r" || c.Step != "s" || c.Log != "s.0.1.log" || c.Attempt != 1 {
					t.Errorf("chunk names %+v", c)
				}
				text.WriteString(c.Text)
				off += int64(len(c.Text))
			}
			if text.String() != tc.want {
				t.Errorf("text %q, want %q", text.String(), tc.want)
			}
		})
	}
}
