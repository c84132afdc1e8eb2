package core

import "testing"

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
	if err := k.UnmarshalText([]byte("loop[a b].step")); err == nil {
		t.Errorf("UnmarshalText of a bad item key = %+v; want an error", k)
	}
}
