package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/confine"
)

// The gate-state file (flow run --gate-state-file) says which gates are
// open: a JSON object of gate names, each true or false, or one of the
// words open/closed (also pass/passed/green/ok/success and
// fail/failed/red/pending), optionally under a "gates" key. A missing
// file closes every gate; it is read again every poll while steps wait
// for gates, and a file that cannot be read is warned of once and
// changes nothing.

// maxGateFile bounds the gate-state file.
const maxGateFile = 1 << 20

// gateWords are the words that open or close a gate.
var gateWords = map[string]bool{
	"open": true, "opened": true, "pass": true, "passed": true, "green": true, "ok": true, "success": true, "true": true, "yes": true,
	"closed": false, "close": false, "fail": false, "failed": false, "red": false, "pending": false, "false": false, "no": false,
}

// ReadGateFile reads the gate-state file at path: a missing file closes
// every gate (an empty map); one that cannot be read or parsed is an
// error, and the gates then are not to change.
func ReadGateFile(fsys afero.Fs, path string) (map[string]bool, error) {
	b, err := readGateBytes(fsys, path)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return map[string]bool{}, nil // no file: every gate closed
	}
	gates, err := parseGates(b)
	if err != nil {
		return nil, fmt.Errorf("gate-state file %s: %w", path, err)
	}
	return gates, nil
}

// parseGates parses a gate-state file.
func parseGates(b []byte) (map[string]bool, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]bool{}, nil
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("not a JSON object of gates: %w", err)
	}
	if inner, ok := raw["gates"].(map[string]any); ok && len(raw) == 1 {
		raw = inner
	}
	out := make(map[string]bool, len(raw))
	for name, v := range raw {
		switch v := v.(type) {
		case bool:
			out[name] = v
		case string:
			open, known := gateWords[strings.ToLower(strings.TrimSpace(v))]
			if !known {
				return nil, fmt.Errorf("gate %q is %q: want true or false, open or closed", name, v)
			}
			out[name] = open
		case map[string]any:
			// {"status": "open"} or {"open": true}
			switch s := v["status"].(type) {
			case string:
				out[name] = gateWords[strings.ToLower(strings.TrimSpace(s))]
			default:
				o, _ := v["open"].(bool)
				out[name] = o
			}
		case nil:
			out[name] = false
		default:
			return nil, fmt.Errorf("gate %q: want true or false, open or closed", name)
		}
	}
	return out, nil
}

// readGateBytes reads the gate-state file at path, confined and
// bounded; nil and no error when there is none.
func readGateBytes(fsys afero.Fs, path string) ([]byte, error) {
	root, err := confine.NewRoot(fsys, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("read gate-state file %s: %w", path, err)
	}
	b, err := root.ReadFile(path, maxGateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read gate-state file %s: %w", path, err)
	}
	return b, nil
}

// ReadGateFileAs reads the gate-state file at path by the rules of a
// workflow whose compat is compat: flow's (ReadGateFile), or
// agent_orchestrator's, where a gate is open when its value is true as
// Python's bool() reads it — true, a number other than 0, a non-empty
// string (even "false" or "closed"), list or object — and closed when
// false, 0, "", [], {} or null. A missing file closes every gate.
func ReadGateFileAs(fsys afero.Fs, path, compat string) (map[string]bool, error) {
	if compat != config.CompatOrchestrator {
		return ReadGateFile(fsys, path)
	}
	b, err := readGateBytes(fsys, path)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return map[string]bool{}, nil // no file: every gate closed
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("gate-state file %s: not a JSON object of gates: %w", path, err)
	}
	out := make(map[string]bool, len(raw))
	for name, v := range raw {
		out[name] = pyTruth(v)
	}
	return out, nil
}

// pyTruth is Python's bool() of a JSON value.
func pyTruth(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case float64:
		return v != 0
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return false
}
