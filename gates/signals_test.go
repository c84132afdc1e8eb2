package gates

import (
	"math/rand/v2"
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
		{"FAIL then PASS is mixed", "FAIL\nfixed it\nPASS\n", SignalWords{}, []string{"PASS", "FAIL"}, "MIXED"},
		{"PASS then FAIL is mixed", "PASS\nFAIL", SignalWords{}, []string{"PASS", "FAIL"}, "MIXED"},
		{"PASS, text, FAIL is mixed", "PASS\nbut then\nFAIL\n", SignalWords{}, []string{"PASS", "FAIL"}, "MIXED"},
		{"final PASS with trailing blank lines", "looks right\nPASS\n\n  \n\n", SignalWords{}, []string{"PASS"}, "PASS"},
		{"quoted final signal", "review\n\"<review>PASS</review>\"\n", SignalWords{}, []string{"PASS"}, "PASS"},
		{"single-quoted final FAIL", "nope\n 'FAIL' \n", SignalWords{}, []string{"FAIL"}, "FAIL"},
		{"whitespace around the final signal", "ok\n \t PASS \t\n", SignalWords{}, []string{"PASS"}, "PASS"},
		{"final signal followed by a word", "PASS please", SignalWords{}, nil, ""},
		{"tag followed by a word", "<review>PASS</review> please", SignalWords{}, nil, ""},
		{"PASS followed by a line of text", "PASS\nthanks for the patch\n", SignalWords{}, []string{"PASS"}, ""},
		{"PASSWORD alone", "PASSWORD\n", SignalWords{}, nil, ""},
		{"a malformed tag is text", "PASS\n<review>PASS\n", SignalWords{}, []string{"PASS"}, ""},
		{"done after the verdict is no text", "PASS\nDONE\n", SignalWords{}, []string{"PASS", "DONE"}, "PASS"},
		{"no final newline", "x\nDONE", SignalWords{}, []string{"DONE"}, ""},
		{"custom words", "LGTM\nFINISHED", SignalWords{Pass: "LGTM", Done: "FINISHED"}, []string{"PASS", "LGTM", "DONE", "FINISHED"}, "PASS"},
		{"a default word is text under custom words", "LGTM\nPASS\n", SignalWords{Pass: "LGTM"}, []string{"PASS", "LGTM"}, ""},
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
	s.Write([]byte("SS\n"))
	if _, v := s.Result(); v != "PASS" {
		t.Fatalf("verdict %q, want PASS", v)
	}
	s.Write([]byte("FA"))
	if _, v := s.Result(); v != "" || s.Why() != WhyTextAfter {
		t.Fatalf("verdict %q (%s) after a partial line that is no signal", v, s.Why())
	}
	s.Write([]byte("IL"))
	if _, v := s.Result(); v != "MIXED" || s.Why() != WhyMixed {
		t.Fatalf("verdict %q (%s), want MIXED", v, s.Why())
	}
}

// TestVerdictWhy: the reason there is no verdict names the case.
func TestVerdictWhy(t *testing.T) {
	for out, want := range map[string]string{
		"":                      WhyNoVerdict,
		"looks fine\n":          WhyNoVerdict,
		"PASS\nmore\n":          WhyTextAfter,
		"FAIL\nPASS\n":          WhyMixed,
		"ok\nPASS\n":            "",
		"<review>FAIL</review>": "",
	} {
		s := NewSignalScanner(SignalWords{})
		s.Write([]byte(out))
		if got := s.Why(); got != want {
			t.Errorf("Why(%q) = %q; want %q", out, got, want)
		}
	}
}

// referenceScan is the rule of ParseSignals applied line by line, the
// plain way: the scanner, which skips lines that hold no word, must
// agree with it.
func referenceScan(output string, words SignalWords) (map[string]bool, string, string) {
	s := NewSignalScanner(words)
	v := verdictState{}
	lines := strings.Split(output, "\n")
	for i, line := range lines {
		if i == len(lines)-1 && line == "" {
			break
		}
		if len(line) > MaxSignalLine {
			v = v.text()
			continue
		}
		v = s.scanLine([]byte(line), v)
	}
	s.v = v
	signals, verdict := s.Result()
	return signals, verdict, s.Why()
}

// randomOutput returns output built from pieces that matter to the
// scanner: words, tagged words, spaces, quotes, a non-ASCII space,
// control bytes and lines longer than MaxSignalLine.
func randomOutput(r *rand.Rand) string {
	pieces := []string{
		"PASS", "FAIL", "DONE", "LGTM", "<review>PASS</review>", "<review>FAIL</review>",
		"<promise>DONE</promise>", "PASSWORD", "\n", "\n", "\n", "\r\n", " ", "\t", "\"", "'", "`",
		"\u00a0", "\x01", "text", "é", strings.Repeat(" ", MaxSignalLine-2), strings.Repeat("x", MaxSignalLine),
	}
	var b strings.Builder
	for n := r.IntN(40); n > 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// TestSignalScannerAgreesLineByLine writes random output in random
// pieces and compares the outcome with referenceScan.
func TestSignalScannerAgreesLineByLine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, words := range []SignalWords{{}, {Pass: "LGTM"}} {
		for range 3000 {
			out := randomOutput(r)
			wantSignals, wantVerdict, wantWhy := referenceScan(out, words)
			s := NewSignalScanner(words)
			for rest := out; rest != ""; {
				k := min(1+r.IntN(len(rest)), len(rest))
				s.Write([]byte(rest[:k]))
				rest = rest[k:]
			}
			signals, verdict := s.Result()
			if !cmp.Equal(signals, wantSignals) || verdict != wantVerdict || s.Why() != wantWhy {
				t.Fatalf("%+v on %q: %v %q %q; line by line %v %q %q", words, out, signals, verdict, s.Why(), wantSignals, wantVerdict, wantWhy)
			}
		}
	}
}

// TestSignalScannerHugeLine: a line far longer than MaxSignalLine is
// text, and the scanner keeps no more than MaxSignalLine bytes of it.
func TestSignalScannerHugeLine(t *testing.T) {
	s := NewSignalScanner(SignalWords{})
	s.Write([]byte("PASS\n"))
	chunk := []byte(strings.Repeat("PASS", 8<<10))
	for range 256 { // 8 MiB
		s.Write(chunk)
		if cap(s.line) > MaxSignalLine {
			t.Fatalf("the scanner holds %d bytes of an unfinished line", cap(s.line))
		}
	}
	if _, v := s.Result(); v != "" || s.Why() != WhyTextAfter {
		t.Fatalf("verdict %q (%s) after a huge line of text", v, s.Why())
	}
	s.Write([]byte("\nFAIL\n"))
	if _, v := s.Result(); v != VerdictMixed {
		t.Fatalf("verdict %q after FAIL", v)
	}
}

// FuzzSignalScanner: any output, written in two pieces, gives what
// referenceScan gives.
func FuzzSignalScanner(f *testing.F) {
	f.Add("work\nPASS\n", 3)
	f.Add("\"  \"\n' FAIL '\n\u00a0DONE\u00a0", 7)
	f.Fuzz(func(t *testing.T, out string, cut int) {
		cut = max(0, min(cut, len(out)))
		wantSignals, wantVerdict, wantWhy := referenceScan(out, SignalWords{})
		s := NewSignalScanner(SignalWords{})
		s.Write([]byte(out[:cut]))
		s.Write([]byte(out[cut:]))
		signals, verdict := s.Result()
		if !cmp.Equal(signals, wantSignals) || verdict != wantVerdict || s.Why() != wantWhy {
			t.Fatalf("%q cut at %d: %v %q %q; line by line %v %q %q", out, cut, signals, verdict, s.Why(), wantSignals, wantVerdict, wantWhy)
		}
	})
}
