package record

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/runner/core"
	"github.com/spf13/afero"
)

// snapshotOf returns the run_state.json of a finished run of n steps.
func snapshotOf(t testing.TB, n int) []byte {
	t.Helper()
	fsys := afero.NewMemMapFs()
	recordRun(t, fsys, "/repo", "r1", n, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), 0)
	b, err := afero.ReadFile(fsys, filepath.Join(RunDir("/repo", "r1"), StateFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkHead checks that decodeHead gives the head of the state
// decodeState gives, whenever decodeState gives one with steps, and
// reports whether decodeHead gave a head.
func checkHead(t *testing.T, b []byte) bool {
	t.Helper()
	head := decodeHead(bytes.NewReader(b))
	whole := decodeState(b)
	if whole != nil && whole.Steps != nil && stepsLast(b) {
		if !reflect.DeepEqual(head, headOf(whole)) {
			t.Errorf("head:\n%+v\nwant\n%+v", head, headOf(whole))
		}
	}
	return head != nil
}

// TestDecodeHead: the head of a snapshot is the state without its
// steps, whatever its layout; a snapshot without steps, or that is not
// JSON, has none.
func TestDecodeHead(t *testing.T) {
	snap := snapshotOf(t, 40)
	i := bytes.Index(snap, []byte(`"steps": `))
	cases := []struct {
		name string
		edit func(b []byte) []byte
		head bool
	}{
		{"as written", func(b []byte) []byte { return b }, true},
		{"a field after the steps, which is not read", func(b []byte) []byte {
			b = bytes.TrimRight(b, "\n")
			return append(bytes.Clone(b[:len(b)-2]), ",\n  \"status\": \"failed\"\n}\n"...)
		}, true},
		{"compact", func(b []byte) []byte {
			var c bytes.Buffer
			_ = json.Compact(&c, b)
			return c.Bytes()
		}, true},
		{"a head of the wrong type", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"seq": `), []byte(`"seq": "`), 1)
		}, false},
		{"steps null", func(b []byte) []byte {
			return append(bytes.Clone(b[:i+len(`"steps": `)]), "null\n}\n"...)
		}, false},
		{"steps a list", func(b []byte) []byte {
			return append(bytes.Clone(b[:i+len(`"steps": `)]), "[]\n}\n"...)
		}, false},
		{"no steps", func(b []byte) []byte {
			return append(bytes.Clone(b[:i-4]), "\n}\n"...)
		}, false},
		{"truncated in the head", func(b []byte) []byte { return b[:i/2] }, false},
		{"empty", func([]byte) []byte { return nil }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.edit(bytes.Clone(snap))
			if got := checkHead(t, b); got != c.head {
				t.Errorf("head decoded: %v, want %v\n%s", got, c.head, b)
			}
		})
	}
	if h := decodeHead(bytes.NewReader(snap)); h == nil || h.RunID != "r1" || h.Status != core.RunCompleted || h.StepOrder != nil || h.Steps != nil {
		t.Errorf("head %+v", h)
	}
}

// stepsLast reports whether b is a JSON object whose keys are distinct
// (as encoding/json matches them: without case) and whose last key is
// its steps: then, and only then, its head is the whole state's.
func stepsLast(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	last := ""
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok || seen[strings.ToLower(key)] {
			return false
		}
		seen[strings.ToLower(key)], last = true, key
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
	}
	return strings.EqualFold(last, "steps")
}

// FuzzDecodeHead: for any input whose steps come last, the head decoded
// is that of the whole state decoded.
func FuzzDecodeHead(f *testing.F) {
	f.Add(snapshotOf(f, 3))
	f.Add([]byte("{\"run_id\": \"r\", \"step_order\": [\"a\"], \"steps\": {\"a\": {},\n    \"b\": {}}}"))
	f.Add([]byte(`{"run_id": "r", "steps": {"a": {"attempts": "x"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkHead(t, b)
	})
}
