package event

import (
	"encoding/json"
	"maps"
	"regexp"
	"strings"
	"testing"
)

func TestStepKey(t *testing.T) {
	for _, tt := range []struct {
		in, file string
		want     StepKey
	}{
		{"coding", "coding", StepKey{Step: "coding"}},
		{"stories[s-1].code", "stories.s-1.code", StepKey{Loop: "stories", Item: "s-1", Step: "code"}},
		{"stories[0].review", "stories.0.review", StepKey{Loop: "stories", Item: "0", Step: "review"}},
	} {
		k, err := ParseStepKey(tt.in)
		if err != nil || k != tt.want {
			t.Errorf("ParseStepKey(%q) = %+v, %v; want %+v", tt.in, k, err, tt.want)
		}
		if k.String() != tt.in || k.FileName() != tt.file {
			t.Errorf("%+v: String %q FileName %q; want %q %q", k, k.String(), k.FileName(), tt.in, tt.file)
		}
	}
	for _, bad := range []string{"", "a.b", "loop[x]", "loop[].code", "loop[a/b].code", "loop[a.b].code", "l[a][b].c", "[x].c"} {
		if k, err := ParseStepKey(bad); err == nil {
			t.Errorf("ParseStepKey(%q) = %+v; want an error", bad, k)
		}
	}
}

func TestStepKeyText(t *testing.T) {
	for _, in := range []string{"", "coding", "stories[s-1].code"} {
		var k StepKey
		if err := k.UnmarshalText([]byte(in)); err != nil {
			t.Fatalf("UnmarshalText(%q): %v", in, err)
		}
		if b, _ := k.MarshalText(); string(b) != in || k.IsZero() != (in == "") || k.IsInstance() != (k.Loop != "") {
			t.Errorf("%q: read %+v, written %q", in, k, b)
		}
	}
	var k StepKey
	if err := k.UnmarshalText([]byte("loop[a b].step")); err != nil || k != (StepKey{Step: "loop[a b].step"}) || k.String() != "loop[a b].step" {
		t.Errorf("UnmarshalText of a text that is no key = %+v, %v; want it kept whole", k, err)
	}
}

// TestParseStepKeyForm: ParseStepKey accepts exactly the keys of the
// form step or loop[item].step, with no '[', ']' or '.' in a part, and
// an item key of 1 to MaxItemKey letters, digits, '_' and '-'.
func TestParseStepKeyForm(t *testing.T) {
	form := regexp.MustCompile(`^([^\[\].]+)(?:\[([A-Za-z0-9_-]{1,48})\]\.([^\[\].]+))?$`)
	parts := []string{"", "a", "é", ".", "[", "]", "x-1", strings.Repeat("i", 48), strings.Repeat("i", 49), " "}
	for _, a := range parts {
		for _, b := range parts {
			for _, c := range parts {
				for _, s := range []string{a + b + c, a + "[" + b + "]." + c, a + "[" + b + "]" + c, a + "[" + b + "." + c} {
					k, err := ParseStepKey(s)
					if ok := form.MatchString(s); ok != (err == nil) || ok && k.String() != s {
						t.Errorf("ParseStepKey(%q) = %+v, %v; the form matches: %v", s, k, err, ok)
					}
				}
			}
		}
	}
}

// TestStepKeyJSON: keys in JSON, as values and as map keys, are written
// as their String form, and maps keep the order of their text, so that
// records keyed by StepKey read and write as records keyed by strings.
func TestStepKeyJSON(t *testing.T) {
	keys := []string{"b", "a[z].c", "a", "a[b].c", "a-b", "a_b", "A[0].x", "stories[s-1].code", "stories[s-10].code", "stories[s-2].code"}
	byText, byKey := map[string]int{}, map[StepKey]int{}
	for i, s := range keys {
		k, err := ParseStepKey(s)
		if err != nil {
			t.Fatal(err)
		}
		byText[s], byKey[k] = i, i
	}
	want, _ := json.Marshal(byText)
	got, err := json.Marshal(byKey)
	if err != nil || string(got) != string(want) {
		t.Fatalf("map by key = %s, %v; want %s", got, err, want)
	}
	back := map[StepKey]int{}
	if err := json.Unmarshal(got, &back); err != nil || !maps.Equal(back, byKey) {
		t.Errorf("read back %v, %v; want %v", back, err, byKey)
	}
	type ev struct {
		Step StepKey `json:"step,omitzero"`
	}
	for _, tt := range []struct {
		k    StepKey
		want string
	}{{StepKey{}, `{}`}, {StepKey{Step: "a"}, `{"step":"a"}`}, {StepKey{Loop: "l", Item: "i", Step: "s"}, `{"step":"l[i].s"}`}} {
		if b, err := json.Marshal(ev{tt.k}); err != nil || string(b) != tt.want {
			t.Errorf("%+v: %s, %v; want %s", tt.k, b, err, tt.want)
		}
	}
}
