package gates

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSignals(t *testing.T) {
	tests := []struct {
		name, output string
		words        SignalWords
		want         []string // signals set
		verdict      string
	}{
		{"none", "looks good\nall fine", SignalWords{}, nil, ""},
		{"pass", "review done\nPASS\n", SignalWords{}, []string{"PASS"}, "PASS"},
		{"surrounding space", "  PASS  \n", SignalWords{}, []string{"PASS"}, "PASS"},
		{"tab", "\tFAIL\t", SignalWords{}, []string{"FAIL"}, "FAIL"},
		{"password", "PASSWORD\nPASS:\nPASS.\npass", SignalWords{}, nil, ""},
		{"in a sentence", "tests PASS\nthe build will FAIL here\nDONE soon", SignalWords{}, nil, ""},
		{"review tag", "<review>FAIL</review>", SignalWords{}, []string{"FAIL"}, "FAIL"},
		{"review tag pass", "  <review>PASS</review>\n", SignalWords{}, []string{"PASS"}, "PASS"},
		{"promise tag", "<promise>DONE</promise>", SignalWords{}, []string{"DONE"}, ""},
		{"wrong tag", "<promise>PASS</promise>\n<review>DONE</review>\n<review> PASS </review>", SignalWords{}, nil, ""},
		{"crlf", "work\r\nDONE\r\nFAIL\r\n", SignalWords{}, []string{"DONE", "FAIL"}, "FAIL"},
		{"last verdict wins", "FAIL\nfixed it\nPASS\n", SignalWords{}, []string{"PASS", "FAIL"}, "PASS"},
		{"last verdict wins fail", "PASS\nFAIL", SignalWords{}, []string{"PASS", "FAIL"}, "FAIL"},
		{"no final newline", "x\nDONE", SignalWords{}, []string{"DONE"}, ""},
		{"custom words", "LGTM\nPASS\nFINISHED", SignalWords{Pass: "LGTM", Done: "FINISHED"}, []string{"PASS", "LGTM", "DONE", "FINISHED"}, "PASS"},
		{"custom review tag", "<review>NOPE</review>", SignalWords{Fail: "NOPE"}, []string{"FAIL", "NOPE"}, "FAIL"},
		{"long line", strings.Repeat(" ", MaxSignalLine) + "PASS\nDONE", SignalWords{}, []string{"DONE"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := map[string]bool{"DONE": false, "PASS": false, "FAIL": false}
			for _, w := range []string{tt.words.Done, tt.words.Pass, tt.words.Fail} {
				if w != "" {
					want[w] = false
				}
			}
			for _, s := range tt.want {
				want[s] = true
			}
			signals, verdict := ParseSignals(tt.output, tt.words)
			if diff := cmp.Diff(want, signals); diff != "" || verdict != tt.verdict {
				t.Errorf("ParseSignals(%q) verdict %q, want %q; signals (-want +got):\n%s", tt.output, verdict, tt.verdict, diff)
			}

			// Every split into two writes, and byte by byte, agrees.
			for i := 0; i <= len(tt.output); i++ {
				s := NewSignalScanner(tt.words)
				s.Write([]byte(tt.output[:i]))
				s.Write([]byte(tt.output[i:]))
				gotSignals, gotVerdict := s.Result()
				if !cmp.Equal(signals, gotSignals) || gotVerdict != verdict {
					t.Fatalf("split at %d: %v %q, want %v %q", i, gotSignals, gotVerdict, signals, verdict)
				}
			}
			s := NewSignalScanner(tt.words)
			for i := range len(tt.output) {
				s.Write([]byte{tt.output[i]})
			}
			if gotSignals, gotVerdict := s.Result(); !cmp.Equal(signals, gotSignals) || gotVerdict != verdict {
				t.Fatalf("byte by byte: %v %q, want %v %q", gotSignals, gotVerdict, signals, verdict)
			}
		})
	}
}

func TestSignalScannerResultThenWrite(t *testing.T) {
	s := NewSignalScanner(SignalWords{})
	s.Write([]byte("PA"))
	if _, v := s.Result(); v != "" {
		t.Fatalf("verdict %q after partial line", v)
	}
	s.Write([]byte("SS\nFA"))
	if _, v := s.Result(); v != "PASS" {
		t.Fatalf("verdict %q, want PASS", v)
	}
	s.Write([]byte("IL"))
	if _, v := s.Result(); v != "FAIL" {
		t.Fatalf("verdict %q, want FAIL", v)
	}
}
