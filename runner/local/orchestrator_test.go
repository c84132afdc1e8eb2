package local

import (
	"regexp"
	"strings"
	"testing"
)

// markersOf writes out to a reportMarkers of bound max in chunks of n
// bytes (all at once when n is 0) and returns the report it kept.
func markersOf(out string, max, n int) string {
	m := &reportMarkers{max: max}
	if n <= 0 {
		n = len(out) + 1
	}
	for len(out) > 0 {
		k := min(n, len(out))
		if got, err := m.Write([]byte(out[:k])); got != k || err != nil {
			panic("short write")
		}
		out = out[k:]
	}
	return string(m.report())
}

func TestReportMarkers(t *testing.T) {
	const rep = `{"status": "COMPLETED"}`
	long := strings.Repeat("x", 200)
	tests := []struct {
		name, out string
		max       int
		want      string
	}{
		{"one report", "hello\n<<<RUN_REPORT_JSON\n" + rep + "\nRUN_REPORT_JSON>>>\nbye\n", 1000, rep + "\n"},
		{"several lines", "<<<RUN_REPORT_JSON\n{\n  \"a\": 1\n}\nRUN_REPORT_JSON>>>\n", 1000, "{\n  \"a\": 1\n}\n"},
		{"no markers", "just output\n" + rep + "\n", 1000, ""},
		{"the last of two", "<<<RUN_REPORT_JSON\n{\"n\": 1}\nRUN_REPORT_JSON>>>\n<<<RUN_REPORT_JSON\n{\"n\": 2}\nRUN_REPORT_JSON>>>\n", 1000, "{\"n\": 2}\n"},
		{"an unfinished one after a whole one", "<<<RUN_REPORT_JSON\n{\"n\": 1}\nRUN_REPORT_JSON>>>\n<<<RUN_REPORT_JSON\n{\"n\": 2}\n", 1000, "{\"n\": 1}\n"},
		{"unfinished", "<<<RUN_REPORT_JSON\n" + rep + "\n", 1000, ""},
		{"end before begin", "RUN_REPORT_JSON>>>\n" + rep + "\n<<<RUN_REPORT_JSON\n", 1000, ""},
		{"empty", "<<<RUN_REPORT_JSON\n\n  \nRUN_REPORT_JSON>>>\n", 1000, ""},
		{"CRLF", "out\r\n<<<RUN_REPORT_JSON\r\n" + rep + "\r\nRUN_REPORT_JSON>>>\r\n", 1000, rep + "\r\n"},
		{"markers with spaces around", "  <<<RUN_REPORT_JSON \t\n" + rep + "\n\tRUN_REPORT_JSON>>>  \n", 1000, rep + "\n"},
		{"markers inside a line are not markers", "say <<<RUN_REPORT_JSON\n" + rep + "\nRUN_REPORT_JSON>>> done\n", 1000, ""},
		{"a marker with more on its line is not one", "<<<RUN_REPORT_JSON        and more text\n" + rep + "\nRUN_REPORT_JSON>>>\n", 1000, ""},
		{"the end marker as the last bytes", "<<<RUN_REPORT_JSON\n" + rep + "\nRUN_REPORT_JSON>>>", 1000, rep + "\n"},
		{"too long", "<<<RUN_REPORT_JSON\n" + long + "\nRUN_REPORT_JSON>>>\n", 100, ""},
		{"too long over lines", "<<<RUN_REPORT_JSON\n" + strings.Repeat("0123456789\n", 10) + "RUN_REPORT_JSON>>>\n", 100, ""},
		{"just fits", "<<<RUN_REPORT_JSON\n" + strings.Repeat("x", 99) + "\nRUN_REPORT_JSON>>>\n", 100, strings.Repeat("x", 99) + "\n"},
		{"a short one after a too long one", "<<<RUN_REPORT_JSON\n" + long + "\nRUN_REPORT_JSON>>>\n<<<RUN_REPORT_JSON\n" + rep + "\nRUN_REPORT_JSON>>>\n", 100, rep + "\n"},
		{"a too long one after a short one", "<<<RUN_REPORT_JSON\n" + rep + "\nRUN_REPORT_JSON>>>\n<<<RUN_REPORT_JSON\n" + long + "\nRUN_REPORT_JSON>>>\n", 100, rep + "\n"},
		{"long output lines around", long + long + "\n<<<RUN_REPORT_JSON\n" + rep + "\nRUN_REPORT_JSON>>>\n" + long + "\n", 100, rep + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// All at once, byte by byte, and in chunks that split the
			// markers and the lines anywhere.
			for _, n := range []int{0, 1, 2, 3, 7, 19, 64} {
				if got := markersOf(tt.out, tt.max, n); got != tt.want {
					t.Fatalf("in chunks of %d: report = %q, want %q", n, got, tt.want)
				}
			}
		})
	}
}

func TestEnvWord(t *testing.T) {
	tests := map[string]string{
		"build":       "BUILD",
		"make-spec":   "MAKE_SPEC",
		"story_index": "STORY_INDEX",
		"step.2 a":    "STEP_2_A",
		"Already_OK9": "ALREADY_OK9",
		"":            "",
	}
	for in, want := range tests {
		if got := envWord(in); got != want {
			t.Errorf("envWord(%q) = %q, want %q", in, got, want)
		}
	}
	word := regexp.MustCompile(`^[A-Z0-9_]*$`)
	for _, in := range []string{"héllo", "日本", "a=b", "x\ny", "$(rm)"} {
		if got := envWord(in); !word.MatchString(got) {
			t.Errorf("envWord(%q) = %q, not a word of a variable's name", in, got)
		}
	}
}
