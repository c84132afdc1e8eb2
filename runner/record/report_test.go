package record

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

// readReportWithin reads a report as ReadReport does. A read that
// blocks (one that opens a FIFO without O_NONBLOCK waits for a writer
// for ever) hangs the test until the test binary's -timeout, which is
// the only bound: no wall-clock guess of its own.
func readReportWithin(t *testing.T, fsys afero.Fs, path, runDir string, limit int64) (*Report, error) {
	t.Helper()
	return ReadReport(fsys, path, runDir, limit)
}

func TestReadReportConfined(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks and FIFOs")
	}
	base := t.TempDir()
	outside := filepath.Join(base, "secret.json")
	if err := os.WriteFile(outside, []byte(`{"status": "ok"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := func(n int) string { return strings.Repeat("x", n) }
	list := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat(`"a",`, n), ",") + "]" }
	metrics := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"m%d": %d`, i, i)
		}
		return "{" + b.String() + "}"
	}

	tests := []struct {
		name  string
		setup func(path string) error // makes the report at path
		limit int64
		want  string // "" for a report read without error
		nilOK bool   // the wanted report is nil
		// check, when set, checks the report read.
		check func(r *Report) error
	}{
		{name: "missing", setup: func(string) error { return nil }, nilOK: true},
		{name: "regular", setup: func(p string) error { return os.WriteFile(p, []byte(`{"status": "ok"}`), 0o644) }},
		{name: "link inside the run", setup: func(p string) error { return os.Symlink("../shared.json", p) }},
		{name: "link to /dev/zero", setup: func(p string) error { return os.Symlink("/dev/zero", p) },
			want: "report reports/r__x.json resolves to /dev/zero, outside"},
		{name: "link out of the run", setup: func(p string) error { return os.Symlink(outside, p) },
			want: "report reports/r__x.json resolves to " + outside + ", outside"},
		{name: "relative link out", setup: func(p string) error { return os.Symlink("../../secret.json", p) },
			want: "outside"},
		{name: "FIFO", setup: func(p string) error { return syscall.Mkfifo(p, 0o644) },
			want: "report reports/r__x.json is a FIFO, not a regular file"},
		{name: "directory", setup: func(p string) error { return os.Mkdir(p, 0o755) },
			want: "report reports/r__x.json is a directory, not a regular file"},
		{name: "larger than the limit", limit: 1 << 20,
			setup: func(p string) error {
				return os.WriteFile(p, []byte(`{"error": "`+big(1<<20)+`"}`), 0o644)
			},
			want: "report reports/r__x.json is larger than 1 MiB"},
		{name: "a smaller limit", limit: 10,
			setup: func(p string) error { return os.WriteFile(p, []byte(`{"status": "completed"}`), 0o644) },
			want:  "report reports/r__x.json is larger than 10 bytes"},
		{name: "empty", setup: func(p string) error { return os.WriteFile(p, []byte(" \n"), 0o644) },
			want: "report reports/r__x.json is empty"},
		{name: "metric value too long: excerpted",
			setup: func(p string) error {
				return os.WriteFile(p, []byte(`{"metrics": {"coverage": "`+big(4097)+`"}}`), 0o644)
			},
			check: excerpted(func(r *Report) string { return r.Metrics["coverage"] })},
		{name: "metric value at the limit",
			setup: func(p string) error {
				return os.WriteFile(p, []byte(`{"metrics": {"coverage": "`+big(4096)+`"}}`), 0o644)
			}},
		{name: "metric object too long: excerpted",
			setup: func(p string) error {
				return os.WriteFile(p, []byte(`{"metrics": {"m": {"k": "`+big(4096)+`"}}}`), 0o644)
			},
			check: excerpted(func(r *Report) string { return r.Metrics["m"] })},
		{name: "metric name too long: excerpted",
			setup: func(p string) error {
				return os.WriteFile(p, []byte(`{"metrics": {"`+big(5000)+`": 1}}`), 0o644)
			},
			check: func(r *Report) error {
				for k := range r.Metrics {
					return excerpted(func(*Report) string { return k })(r)
				}
				return fmt.Errorf("no metric")
			}},
		{name: "too many metrics",
			setup: func(p string) error { return os.WriteFile(p, []byte(`{"metrics": `+metrics(1001)+`}`), 0o644) },
			want:  "report metrics has 1001 entries, more than the limit of 1000"},
		{name: "as many metrics as allowed",
			setup: func(p string) error { return os.WriteFile(p, []byte(`{"metrics": `+metrics(1000)+`}`), 0o644) }},
		{name: "too many artifacts",
			setup: func(p string) error { return os.WriteFile(p, []byte(`{"artifacts": `+list(1001)+`}`), 0o644) },
			want:  "report artifacts has 1001 entries"},
		{name: "too many logs",
			setup: func(p string) error { return os.WriteFile(p, []byte(`{"logs": `+list(1001)+`}`), 0o644) },
			want:  "report logs has 1001 entries"},
		{name: "artifact too long: excerpted",
			setup: func(p string) error {
				return os.WriteFile(p, []byte(`{"artifacts": ["a", "`+big(4097)+`"]}`), 0o644)
			},
			check: excerpted(func(r *Report) string { return r.Artifacts[1] })},
		{name: "logs string too long: excerpted",
			setup: func(p string) error {
				return os.WriteFile(p, []byte(`{"logs": "`+big(4097)+`"}`), 0o644)
			},
			check: excerpted(func(r *Report) string { return r.Logs[0] })},
		{name: "error too long: excerpted",
			setup: func(p string) error {
				return os.WriteFile(p, []byte(`{"status": "failed", "error": "`+big(4097)+`"}`), 0o644)
			},
			check: excerpted(func(r *Report) string { return r.Error })},
	}
	fsys := afero.NewOsFs()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Each case has its own run directory, so that the report's
			// name is the same in every message.
			dir := filepath.Join(base, fmt.Sprintf("run%d", i))
			if err := os.MkdirAll(filepath.Join(dir, "reports"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "shared.json"), []byte(`{"status": "ok"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "reports", "r__x.json")
			if err := tt.setup(path); err != nil {
				t.Fatal(err)
			}
			limit := tt.limit
			if limit == 0 {
				limit = config.DefaultReportLimit
			}
			r, err := readReportWithin(t, fsys, path, dir, limit)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("readReport error = %v; want one containing %q", err, tt.want)
				}
				if r != nil {
					t.Fatalf("readReport returned a report with error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("readReport: %v", err)
			}
			if (r == nil) != tt.nilOK {
				t.Fatalf("readReport = %v; want nil: %v", r, tt.nilOK)
			}
			if tt.check != nil {
				if err := tt.check(r); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// excerpted returns a check that the value get reads from a report is
// an excerpt: at most MaxReportValue bytes, with the marker.
func excerpted(get func(r *Report) string) func(r *Report) error {
	return func(r *Report) error {
		v := get(r)
		if len(v) > MaxReportValue || !strings.Contains(v, " bytes cut ...] ") {
			return fmt.Errorf("value of %d bytes is not an excerpt: %.80q", len(v), v)
		}
		return nil
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		name string
		in   string
		cut  bool
	}{
		{"short", "hello", false},
		{"at the limit", strings.Repeat("x", MaxReportValue), false},
		{"one over", strings.Repeat("x", MaxReportValue+1), true},
		{"10 KiB of runes", strings.Repeat("é", 5<<10), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Excerpt(tt.in)
			if !tt.cut {
				if got != tt.in {
					t.Fatalf("Excerpt changed a value within the limit")
				}
				return
			}
			if len(got) > MaxReportValue || !utf8.ValidString(got) || !strings.Contains(got, " bytes cut ...] ") {
				t.Fatalf("Excerpt = %d bytes, valid %v: %.100q", len(got), utf8.ValidString(got), got)
			}
			if !strings.HasPrefix(tt.in, got[:100]) || !strings.HasSuffix(tt.in, got[len(got)-100:]) {
				t.Errorf("Excerpt does not keep the head and the tail")
			}
		})
	}
}

// TestReadReportLinkToDevZeroInsideRun covers a run directory that
// holds the device itself: the report's real location is inside, but it
// is not a regular file, and nothing is read from it.
func TestReadReportLinkToDevZeroInsideRun(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	r, err := readReportWithin(t, afero.NewOsFs(), "/dev/zero", "/dev", config.DefaultReportLimit)
	if err == nil || !strings.Contains(err.Error(), "report zero is a device, not a regular file") {
		t.Fatalf("readReport(/dev/zero) = %v, %v; want a device refused", r, err)
	}
}

func TestReadReportMemMapFs(t *testing.T) {
	tests := []struct {
		name string
		json string
		want Report // without Raw and JSON
		err  string
	}{
		{name: "full", json: `{"status": "Success", "artifacts": ["a.txt", "b.txt"], "metrics": {"coverage": 81.5, "ok": true, "name": "x", "none": null, "list": [1, 2]}, "logs": "one", "gate_failure": "true", "error": "e"}`,
			want: Report{Status: "completed", Artifacts: []string{"a.txt", "b.txt"}, Metrics: map[string]string{"coverage": "81.5", "ok": "true", "name": "x", "none": "", "list": "[1,2]"}, Logs: []string{"one"}, GateFailure: true, GateFailureGiven: true, Error: "e"}},
		{name: "failed word", json: `{"status": " ERRORED "}`, want: Report{Status: "failed", Metrics: map[string]string{}}},
		{name: "no status", json: `{"metrics": {"n": 1e3}}`, want: Report{Metrics: map[string]string{"n": "1e3"}}},
		{name: "logs list with nulls", json: `{"logs": ["a", null, 3]}`, want: Report{Logs: []string{"a", "3"}, Metrics: map[string]string{}}},
		{name: "numeric error", json: `{"status": "fail", "error": 42}`, want: Report{Status: "failed", Error: "42", Metrics: map[string]string{}}},
		{name: "unknown status", json: `{"status": "maybe"}`, err: `report status "maybe" is not one of`},
		{name: "status not a string", json: `{"status": 1}`, err: "report status is a number, not a string"},
		{name: "not JSON", json: `{"status": "comp`, err: "report is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := afero.NewMemMapFs()
			path := "/repo/.agents/runs/r/reports/r__x.json"
			if err := afero.WriteFile(fsys, path, []byte(tt.json), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := ReadReport(fsys, path, "/repo/.agents/runs/r", config.DefaultReportLimit)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("readReport error = %v; want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("readReport: %v", err)
			}
			if string(r.JSON) != tt.json || r.Raw == nil {
				t.Errorf("JSON = %s, Raw = %v; want the report as written", r.JSON, r.Raw)
			}
			r.Raw, r.JSON = nil, nil
			if !reflect.DeepEqual(*r, tt.want) {
				t.Errorf("readReport = %+v; want %+v", *r, tt.want)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		r, err := ReadReport(afero.NewMemMapFs(), "/run/reports/r__x.json", "/run", config.DefaultReportLimit)
		if r != nil || err != nil {
			t.Fatalf("readReport of a missing file = %v, %v; want nil, nil", r, err)
		}
	})
	t.Run("outside the run", func(t *testing.T) {
		fsys := afero.NewMemMapFs()
		_ = afero.WriteFile(fsys, "/elsewhere/r.json", []byte(`{}`), 0o644)
		_, err := ReadReport(fsys, "/elsewhere/r.json", "/run", config.DefaultReportLimit)
		if err == nil || !strings.Contains(err.Error(), "report /elsewhere/r.json is outside /run") {
			t.Fatalf("readReport outside the run: %v", err)
		}
	})
}
