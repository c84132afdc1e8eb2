package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/confine"
)

// Bounds on a report's entries: a report with too many entries is
// refused as a whole; a value too long is excerpted, with a marker that
// says so (Excerpt), so that nothing is cut silently.
const (
	// maxReportEntries bounds the metrics, the artifacts and the logs
	// entries of a report, each.
	MaxReportEntries = 1000
	// maxReportValue bounds each metric name and value, artifact, logs
	// entry and the error string, in bytes: a longer one is excerpted.
	MaxReportValue = 4 << 10
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
	// GateFailureGiven is true when the report has a gate_failure at
	// all: an explicit false is an agent's verdict that its gate passes.
	GateFailureGiven bool
	Error            string
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

// readReport reads the report a session left at path. Only a regular
// file whose real location (symlinks resolved) lies inside the run
// directory runDir is read, without blocking and without reading more
// than limit bytes: a session may leave a symlink to /dev/zero or to a
// file outside the run, a FIFO, or a file of any size where its report
// belongs. Each of those, and a report whose entries break the bounds
// parseReport checks, is an error that names the report by its path in
// the run directory. A missing file is (nil, nil).
func ReadReport(fsys afero.Fs, path, runDir string, limit int64) (*Report, error) {
	root, err := confine.NewRoot(fsys, runDir)
	if err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	return ReadReportIn(root, path, limit)
}

// readReportIn is readReport below a run directory resolved once.
func ReadReportIn(root *confine.Root, path string, limit int64) (*Report, error) {
	b, err := root.ReadFile(path, limit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	name := reportName(path, root.Dir())
	if err != nil {
		return nil, reportError(name, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("report %s is empty", name)
	}
	return ParseReport(b)
}

// reportName is path relative to the run directory when it lies
// inside it (reports/<run>__<step>.json), else path as given.
func reportName(path, runDir string) string {
	rel, err := filepath.Rel(runDir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// reportError says why the report name could not be read. confine's
// errors begin with the path they were given; the message is reworded
// to begin with "report <name>" instead ("report reports/r__x.json is a
// FIFO, not a regular file"), and the typed error stays in the chain
// for errors.As.
func reportError(name string, err error) error {
	var path string
	var nr *confine.NotRegularError
	var tl *confine.TooLargeError
	var esc *confine.EscapeError
	switch {
	case errors.As(err, &nr):
		path = nr.Path
	case errors.As(err, &tl):
		path = tl.Path
	case errors.As(err, &esc):
		path = esc.Path
	default:
		return fmt.Errorf("read report %s: %w", name, err)
	}
	rest, ok := strings.CutPrefix(err.Error(), path)
	if !ok {
		return fmt.Errorf("read report %s: %w", name, err)
	}
	return &reportReadError{msg: "report " + name + rest, err: err}
}

// reportReadError is a report refused by confine, said in the report's
// own terms.
type reportReadError struct {
	msg string
	err error
}

func (e *reportReadError) Error() string { return e.msg }
func (e *reportReadError) Unwrap() error { return e.err }

// parseReport parses a report leniently: status words in any case and
// with aliases, metric values of any JSON type stored as strings, logs
// as a string or a list. It refuses a report with more than
// maxReportEntries metrics, artifacts or logs entries; a metric name or
// value, artifact, logs entry or error longer than maxReportValue bytes
// is excerpted — its head and tail kept around a marker saying how much
// was cut (Excerpt) — never refused: those values go into events and
// run_state.json, whose size must not be the session's to choose, and
// a session that succeeded does not fail for saying too much.
func ParseReport(b []byte) (*Report, error) {
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
	var err error
	if r.Artifacts, err = boundedList("artifacts", raw["artifacts"]); err != nil {
		return nil, err
	}
	if r.Logs, err = boundedList("logs", raw["logs"]); err != nil {
		return nil, err
	}
	if m, ok := raw["metrics"].(map[string]any); ok {
		if len(m) > MaxReportEntries {
			return nil, tooManyEntries("metrics", len(m))
		}
		for k, v := range m {
			r.Metrics[Excerpt(k)] = Excerpt(scalarString(v))
		}
	}
	switch g := raw["gate_failure"].(type) {
	case bool:
		r.GateFailure, r.GateFailureGiven = g, true
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(g))
		r.GateFailure, r.GateFailureGiven = b, err == nil
	}
	if e, ok := raw["error"]; ok && e != nil {
		r.Error = Excerpt(scalarString(e))
	}
	return r, nil
}

// boundedList reads the list (or single string) under key with
// stringList, refusing one with too many entries and excerpting too
// long an entry.
func boundedList(key string, v any) ([]string, error) {
	if l, ok := v.([]any); ok && len(l) > MaxReportEntries {
		return nil, tooManyEntries(key, len(l))
	}
	out := stringList(v)
	for i, s := range out {
		out[i] = Excerpt(s)
	}
	return out, nil
}

// Excerpt returns s, or, when it is longer than MaxReportValue bytes,
// its head and tail around a marker that says how many bytes were cut
// ("[... 6144 bytes cut ...]"), at most MaxReportValue bytes in all and
// cut at character boundaries.
func Excerpt(s string) string {
	if len(s) <= MaxReportValue {
		return s
	}
	const keep = MaxReportValue/2 - 64
	h, t := keep, len(s)-keep
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return fmt.Sprintf("%s [... %d bytes cut ...] %s", s[:h], t-h, s[t:])
}

func tooManyEntries(key string, n int) error {
	return fmt.Errorf("report %s has %d entries, more than the limit of %d", key, n, MaxReportEntries)
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
func MergeArtifacts(reported, declared []string) []string {
	out := slices.Clone(reported)
	for _, a := range declared {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}
