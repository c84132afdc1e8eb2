package record

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/spf13/afero"
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
func TestReadGateFileAs(t *testing.T) {
	fs := afero.NewMemMapFs()
	const file = `{"ci.tests: passed": true, "one": 1, "zero": 0, "word false": "false", "empty": "",
		"null": null, "list": [0], "no list": [], "object": {"a": 1}, "no object": {}, "closed": "closed"}`
	if err := afero.WriteFile(fs, "/r/gates.json", []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadGateFileAs(fs, "/r/gates.json", config.CompatOrchestrator)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"ci.tests: passed": true, "one": true, "zero": false, "word false": true, "empty": false,
		"null": false, "list": true, "no list": false, "object": true, "no object": false, "closed": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gates = %v, want %v", got, want)
	}
	// flow's own rules are stricter: 1 is no gate state.
	if _, err := ReadGateFileAs(fs, "/r/gates.json", ""); err == nil {
		t.Error("flow's rules read 1 as a gate state")
	}
	if g, err := ReadGateFileAs(fs, "/r/missing.json", config.CompatOrchestrator); err != nil || len(g) != 0 {
		t.Errorf("missing file: %v, %v", g, err)
	}
	_ = afero.WriteFile(fs, "/r/bad.json", []byte("[1]"), 0o644)
	if _, err := ReadGateFileAs(fs, "/r/bad.json", config.CompatOrchestrator); err == nil {
		t.Error("a list of gates was read")
	}
}
