package termsafe

import (
	"bytes"
	"testing"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text\n\twith a tab", "plain text\n\twith a tab"},
		{"red \x1b[31mtext\x1b[0m", `red \u001b[31mtext\u001b[0m`},
		{"title \x1b]0;owned\x07", `title \u001b]0;owned\u0007`},
		{"clip \x1b]52;c;ZXZpbA==\x1b\\", `clip \u001b]52;c;ZXZpbA==\u001b\`},
		{"cr\rbs\bdel\x7f", `cr\u000dbs\u0008del\u007f`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bidi \u202eevil\u2066", `bidi \u202eevil\u2066`},
		{"café ✓", "café ✓"},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"colours pass", []string{"\x1b[1;31mFAIL\x1b[0m ok\r\n"}, "\x1b[1;31mFAIL\x1b[0m ok\r\n"},
		{"a colour split between writes", []string{"\x1b", "[3", "2mok\x1b[0m"}, "\x1b[32mok\x1b[0m"},
		{"a title is escaped", []string{"\x1b]0;owned\x07x"}, `\u001b]0;owned\u0007x`},
		{"clipboard", []string{"\x1b]52;c;ZXZpbA==\x07"}, `\u001b]52;c;ZXZpbA==\u0007`},
		{"cursor moves are escaped", []string{"\x1b[2J\x1b[1;1H"}, `\u001b[2J\u001b[1;1H`},
		{"a C1 control split between writes", []string{"a\xc2", "\x9bb"}, `a\u009bb`},
		{"bidi", []string{"x\u202ey"}, `x\u202ey`},
		{"a character split between writes", []string{"caf\xc3", "\xa9"}, "café"},
		{"an endless sequence", []string{"\x1b[" + string(bytes.Repeat([]byte("1"), 40)) + "m"}, `\u001b[` + string(bytes.Repeat([]byte("1"), 40)) + "m"},
		{"a lone escape at the end", []string{"end\x1b"}, `end\u001b`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := NewWriter(&out)
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("wrote %q, want %q", out.String(), tc.want)
			}
		})
	}
}
