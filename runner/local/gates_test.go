package local

import (
	"maps"
	"strings"
	"testing"
)

func TestParseGates(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]bool
		err  string
	}{
		{in: ``, want: map[string]bool{}},
		{in: `{"ci": true, "window": false}`, want: map[string]bool{"ci": true, "window": false}},
		{in: `{"gates": {"ci": "open", "qa": "Closed"}}`, want: map[string]bool{"ci": true, "qa": false}},
		{in: `{"ci": "passed", "qa": "pending", "x": null}`, want: map[string]bool{"ci": true, "qa": false, "x": false}},
		{in: `{"ci": {"status": "green"}, "qa": {"open": true}, "z": {}}`, want: map[string]bool{"ci": true, "qa": true, "z": false}},
		{in: `{"ci": "maybe"}`, err: `gate "ci" is "maybe"`},
		{in: `{"ci": 1}`, err: `gate "ci": want true or false`},
		{in: `[1]`, err: "not a JSON object of gates"},
	} {
		got, err := parseGates([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseGates(%s) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("parseGates(%s) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
