package agents

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParseClaude(f *testing.F) { fuzzParse(f, Claude) }
func FuzzParseCodex(f *testing.F)  { fuzzParse(f, Codex) }
func FuzzParseGemini(f *testing.F) { fuzzParse(f, Gemini) }

// fuzzParse seeds a fuzzer with the preset's fixtures and checks that
// any output parses without panicking, within its bounds, to the same
// result however it is split across writes, and never displays raw JSON.
func fuzzParse(f *testing.F, preset string) {
	files, err := filepath.Glob(filepath.Join("testdata", preset+"_*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(len(b)/2))
	}
	f.Fuzz(func(t *testing.T, out []byte, split uint16) {
		var shown []string
		p := NewParser(preset, func(s string) { shown = append(shown, s) })
		p.Write(out)
		whole := p.Close()

		i := int(split) % (len(out) + 1)
		var shown2 []string
		q := NewParser(preset, func(s string) { shown2 = append(shown2, s) })
		q.Write(out[:i])
		q.Write(out[i:])
		if got := q.Close(); !reflect.DeepEqual(got, whole) || !reflect.DeepEqual(shown, shown2) {
			t.Fatalf("split at %d changes the result:\n got %+v %q\nwant %+v %q", i, got, shown2, whole, shown)
		}

		if len(whole.Text) > MaxText {
			t.Errorf("Text is %d bytes, over MaxText", len(whole.Text))
		}
		if !utf8.ValidString(whole.Text) {
			t.Errorf("Text is not UTF-8: %q", whole.Text)
		}
		if whole.Skipped < 0 {
			t.Errorf("Skipped = %d", whole.Skipped)
		}
		if whole.ResumeRefused && !whole.Failed {
			t.Errorf("ResumeRefused without Failed: %+v", whole)
		}
		if whole.Failed && whole.Error == "" {
			t.Errorf("Failed without Error: %+v", whole)
		}
		if (whole.Usage.Sessions == 1) != whole.Structured {
			t.Errorf("Sessions %d but Structured %v", whole.Usage.Sessions, whole.Structured)
		}
		u := whole.Usage
		if u.TokensIn < 0 || u.TokensOut < 0 || u.TokensCached < 0 || u.Turns < 0 {
			t.Errorf("negative usage %+v", u)
		}
		for _, s := range shown {
			if strings.HasPrefix(s, `{"type"`) {
				t.Errorf("displayed raw JSON %q", s)
			}
		}
	})
}
