package record

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
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

// unmarshalState is what decodeState must return: json.Unmarshal's
// state, or nil where it fails.
func unmarshalState(b []byte) *core.State {
	var st core.State
	if json.Unmarshal(b, &st) != nil {
		return nil
	}
	return &st
}

// checkDecode checks that decoding b in parts of size bytes gives what
// one json.Unmarshal gives, or nothing, and leaves b as it was; it
// returns whether the parts were decoded.
func checkDecode(t *testing.T, b []byte, size int) bool {
	t.Helper()
	orig := bytes.Clone(b)
	want := unmarshalState(b)
	got := decodeSplit(b, size, 3)
	if !bytes.Equal(b, orig) {
		t.Fatalf("decodeSplit changed its input")
	}
	if got != nil && !reflect.DeepEqual(got, want) {
		t.Errorf("decoded in parts:\n%+v\nwhole:\n%+v", got, want)
	}
	if whole := decodeState(b); !reflect.DeepEqual(whole, want) {
		t.Errorf("decodeState:\n%+v\nwant\n%+v", whole, want)
	}
	return got != nil
}

func TestDecodeSplit(t *testing.T) {
	snap := snapshotOf(t, 40)
	i := bytes.Index(snap, []byte(stepsKey))
	cases := []struct {
		name  string
		edit  func(b []byte) []byte
		parts bool // decoded in parts
	}{
		{"as written", func(b []byte) []byte { return b }, true},
		{"a step twice, in two parts", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"s40": {`), []byte(`"s1": {`), 1)
		}, true},
		{"a null step", func(b []byte) []byte {
			j := bytes.Index(b, []byte("\n    \"s7\": {"))
			k := bytes.Index(b[j:], []byte("\n    },")) + j
			return append(append(bytes.Clone(b[:j]), "\n    \"s7\": null"...), b[k+6:]...)
		}, true},
		{"a field after the steps", func(b []byte) []byte {
			b = bytes.TrimRight(b, "\n")
			return append(bytes.Clone(b[:len(b)-2]), "},\n  \"status\": \"failed\"\n}\n"...)
		}, false},
		{"a field after the steps on their line", func(b []byte) []byte {
			b = bytes.TrimRight(b, "\n")
			return append(bytes.Clone(b[:len(b)-2]), "}, \"status\": \"failed\"}\n"...)
		}, false},
		{"the steps twice", func(b []byte) []byte {
			b = bytes.TrimRight(b, "\n")
			return append(bytes.Clone(b[:len(b)-2]), "},\n  \"steps\": {}\n}\n"...)
		}, false},
		{"a brace missing inside a step", func(b []byte) []byte {
			return bytes.Replace(b, []byte("\n      \"metrics\": {},"), []byte("\n      \"metrics\": {,"), 1)
		}, false},
		{"a value of the wrong type", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"attempts": 1`), []byte(`"attempts": "1"`), 1)
		}, false},
		{"a head of the wrong type", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"seq": `), []byte(`"seq": "`), 1)
		}, false},
		{"compact", func(b []byte) []byte {
			var c bytes.Buffer
			_ = json.Compact(&c, b)
			return c.Bytes()
		}, false},
		{"indented by four", func(b []byte) []byte {
			var c bytes.Buffer
			_ = json.Indent(&c, bytes.ReplaceAll(b, []byte("\n"), nil), "", "    ")
			return c.Bytes()
		}, false},
		{"steps null", func(b []byte) []byte {
			return append(bytes.Clone(b[:i+len(stepsKey)]), "null\n}\n"...)
		}, false},
		{"no steps", func(b []byte) []byte {
			return append(bytes.Clone(b[:i-1]), "\n}\n"...)
		}, false},
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }, false},
		{"empty", func([]byte) []byte { return nil }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.edit(bytes.Clone(snap))
			for _, size := range []int{1, 64, 1000, 1 << 20} {
				parts := checkDecode(t, b, size)
				if size < 1<<20 && parts != c.parts {
					t.Errorf("size %d: decoded in parts: %v, want %v", size, parts, c.parts)
				}
			}
		})
	}
}

// FuzzDecodeSplit: for any input, decoding in parts gives what one
// json.Unmarshal gives, or leaves it to json.Unmarshal.
func FuzzDecodeSplit(f *testing.F) {
	snap := snapshotOf(f, 3)
	f.Add(snap, 1)
	f.Add(snap, 200)
	f.Add(bytes.Replace(snap, []byte(`"s3": {`), []byte(`"s1": {`), 1), 10)
	f.Add([]byte("{\n  \"run_id\": \"r\",\n  \"steps\": {\"a\": {},\n    \"b\": {}}}"), 1)
	f.Fuzz(func(t *testing.T, b []byte, size int) {
		checkDecode(t, b, max(1, size%4096))
	})
}
