package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/runner/core"
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

// usesGates reports whether any step of the run's workflow waits on
// gates of a gate-state file (found when the workflow is set, since the
// loop asks after every input).
func (x *run) usesGates() bool {
	return x.gated && x.opts.Invocation.GateStateFile != ""
}

// hasGates reports whether any step of wf waits on gates.
func hasGates(wf *config.Workflow) bool {
	for _, s := range wf.AllSteps() {
		if len(s.Gates()) > 0 {
			return true
		}
	}
	return false
}

// readGates reads the gate-state file; ok is false when it cannot be
// read or parsed (err says why), and gates then are not to change.
func (x *run) readGates() (gates map[string]bool, ok bool, err error) {
	gates, err = ReadGateFileAs(x.r.FS, x.opts.Invocation.GateStateFile, x.wf.Compat)
	return gates, err == nil, err
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

// pollGates reads the gate-state file and hands the core the gates
// when they changed.
func (x *run) pollGates() {
	gates, ok, err := x.readGates()
	if err != nil {
		if msg := err.Error(); x.warned["gates"] != msg {
			x.warned["gates"] = msg
			x.warn("", msg)
		}
		return
	}
	delete(x.warned, "gates")
	if ok && !maps.Equal(gates, x.gates) {
		x.gates = gates
		x.queue = append(x.queue, core.GatesChanged{Gates: maps.Clone(gates)})
	}
}

// startGates reads the gates as the run starts, for Begin.
func (x *run) startGates() map[string]bool {
	if !x.usesGates() {
		return nil
	}
	gates, ok, err := x.readGates()
	if err != nil {
		x.warned["gates"] = err.Error()
		x.warn("", err.Error())
	}
	if ok {
		x.gates = gates
	}
	return maps.Clone(x.gates)
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
