package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/afero"
)

// Report is a session's report file, read leniently: the
// agent_orchestrator contract {"status", "artifacts", "metrics", "logs",
// "gate_failure", "error"}.
type Report struct {
	// Status is "completed", "failed" or "" (not given).
	Status      string
	Artifacts   []string
	Metrics     map[string]string
	Logs        []string
	GateFailure bool
	Error       string
	// Raw is the report as written, for expressions (`report`).
	Raw map[string]any
	// JSON is the report's bytes.
	JSON json.RawMessage
}

// statusWords maps the status words a report may use to completed or
// failed; anything else is an error.
var statusWords = map[string]string{
	"completed": "completed", "complete": "completed", "success": "completed", "succeeded": "completed",
	"ok": "completed", "done": "completed", "passed": "completed", "pass": "completed",
	"failed": "failed", "fail": "failed", "failure": "failed", "error": "failed", "errored": "failed",
}

// readReport reads the report at path. A missing file is (nil, nil).
func readReport(fsys afero.Fs, path string) (*Report, error) {
	b, err := afero.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("report %s is empty", path)
	}
	return parseReport(b)
}

// parseReport parses a report leniently: status words in any case and
// with aliases, metric values of any JSON type stored as strings, logs
// as a string or a list.
func parseReport(b []byte) (*Report, error) {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("report is not a JSON object: %w", err)
	}
	r := &Report{Raw: raw, JSON: json.RawMessage(bytes.TrimSpace(b)), Metrics: map[string]string{}}
	if v, ok := raw["status"]; ok && v != nil {
		word, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("report status is %s, not a string", jsonKind(v))
		}
		norm, known := statusWords[strings.ToLower(strings.TrimSpace(word))]
		if !known {
			return nil, fmt.Errorf("report status %q is not one of completed, failed (or success, ok, done, passed, fail, error)", word)
		}
		r.Status = norm
	}
	r.Artifacts = stringList(raw["artifacts"])
	r.Logs = stringList(raw["logs"])
	if m, ok := raw["metrics"].(map[string]any); ok {
		for k, v := range m {
			r.Metrics[k] = scalarString(v)
		}
	}
	switch g := raw["gate_failure"].(type) {
	case bool:
		r.GateFailure = g
	case string:
		r.GateFailure, _ = strconv.ParseBool(strings.TrimSpace(g))
	}
	if e, ok := raw["error"]; ok && e != nil {
		r.Error = scalarString(e)
	}
	return r, nil
}

// stringList reads a list of strings, or one string, from a JSON value.
func stringList(v any) []string {
	switch v := v.(type) {
	case string:
		if v == "" {
			return nil
		}
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if x != nil {
				out = append(out, scalarString(x))
			}
		}
		return out
	}
	return nil
}

// scalarString renders a JSON value as a string: strings as they are,
// numbers as written, anything else as JSON.
func scalarString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonKind(v any) string {
	switch v.(type) {
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "not a string"
}

// mergeArtifacts returns the report's artifacts followed by the
// declared ones it does not already list.
func mergeArtifacts(reported, declared []string) []string {
	out := slices.Clone(reported)
	for _, a := range declared {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}
