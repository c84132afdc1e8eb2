package proc

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestWithMarker(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"nil env", nil, []string{"FLOW_SESSION_ID=T"}},
		{"kept in order", []string{"A=1", "B=2"}, []string{"A=1", "B=2", "FLOW_SESSION_ID=T"}},
		{"nested session", []string{"FLOW_SESSION_ID=OUTER", "A=1"}, []string{"A=1", "FLOW_SESSION_ID=OUTER:T"}},
		{"duplicates merged", []string{"FLOW_SESSION_ID=X", "FLOW_SESSION_ID=Y:Z"}, []string{"FLOW_SESSION_ID=X:Y:Z:T"}},
		{"empty value dropped", []string{"FLOW_SESSION_ID="}, []string{"FLOW_SESSION_ID=T"}},
		{"similar name untouched", []string{"FLOW_SESSION_IDX=1"}, []string{"FLOW_SESSION_IDX=1", "FLOW_SESSION_ID=T"}},
		{"last value wins, first place", []string{"A=1", "B=2", "A=3", "C=", "C=4"}, []string{"A=3", "B=2", "C=4", "FLOW_SESSION_ID=T"}},
		{"names differ by case", []string{"a=1", "A=2"}, []string{"a=1", "A=2", "FLOW_SESSION_ID=T"}},
		{"not KEY=value kept, empty dropped", []string{"JUNK", "", "A=1", "JUNK"}, []string{"JUNK", "A=1", "JUNK", "FLOW_SESSION_ID=T"}},
		{"value holding =", []string{"A=x=y", "A=z=w"}, []string{"A=z=w", "FLOW_SESSION_ID=T"}},
		{"large environment", largeEnv(300, false), largeEnv(300, true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.env)
			got := withMarker(tt.env, "T")
			if !slices.Equal(got, tt.want) {
				t.Errorf("withMarker = %q, want %q", got, tt.want)
			}
			if !slices.Equal(tt.env, in) {
				t.Errorf("withMarker changed its argument to %q", tt.env)
			}
		})
	}
}

func TestHasMarker(t *testing.T) {
	long := strings.Repeat("x", 3*markerEntryCap)
	tests := []struct {
		name    string
		environ string
		token   string
		want    bool
	}{
		{"alone", "FLOW_SESSION_ID=TOK\x00", "TOK", true},
		{"no trailing NUL", "A=1\x00FLOW_SESSION_ID=TOK", "TOK", true},
		{"among others", "A=1\x00FLOW_SESSION_ID=TOK\x00B=2\x00", "TOK", true},
		{"outer of a nested list", "FLOW_SESSION_ID=TOK:INNER\x00", "TOK", true},
		{"inner of a nested list", "FLOW_SESSION_ID=OUTER:TOK\x00", "TOK", true},
		{"another session", "FLOW_SESSION_ID=OTHER\x00", "TOK", false},
		{"prefix of a token", "FLOW_SESSION_ID=TOKEN\x00", "TOK", false},
		{"token in another variable", "X=TOK\x00OTHER_FLOW_SESSION_ID=TOK\x00", "TOK", false},
		{"token as a value elsewhere", "FLOW_SESSION_ID=A\x00Y=FLOW_SESSION_ID=TOK\x00", "TOK", false},
		{"after an entry longer than the buffer", "BIG=" + long + "\x00FLOW_SESSION_ID=TOK\x00", "TOK", true},
		{"inside an entry longer than the buffer", "BIG=" + long + ":FLOW_SESSION_ID=TOK\x00", "TOK", false},
		{"a marker longer than the buffer", "FLOW_SESSION_ID=" + long + ":TOK\x00", "TOK", false},
		{"empty token", "FLOW_SESSION_ID=\x00", "", false},
		{"empty environment", "", "TOK", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hasMarker(strings.NewReader(tt.environ), tt.token); got != tt.want {
				t.Errorf("hasMarker = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewTokenIsValid(t *testing.T) {
	a, b := newToken(), newToken()
	if !validToken(a) || a == b || len(a) < 20 {
		t.Errorf("tokens %q and %q: want distinct valid tokens of 20+ characters", a, b)
	}
	for _, bad := range []string{"", "a:b", "a=b", "a\x00b"} {
		if validToken(bad) {
			t.Errorf("validToken(%q) = true", bad)
		}
	}
}

// largeEnv returns n names, each set twice (the second time to another
// value) when twice is false, or once to its last value followed by the
// marker when it is true: more names than withMarker's table on the
// stack holds.
func largeEnv(n int, deduplicated bool) []string {
	var env []string
	for i := range n {
		env = append(env, fmt.Sprintf("V%d=first", i))
	}
	for i := range n {
		if deduplicated {
			env[i] = fmt.Sprintf("V%d=second", i)
		} else {
			env = append(env, fmt.Sprintf("V%d=second", i))
		}
	}
	if deduplicated {
		env = append(env, "FLOW_SESSION_ID=T")
	}
	return env
}
