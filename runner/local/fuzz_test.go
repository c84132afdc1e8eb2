package local

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/clock"
	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// FuzzParseReport checks that parseReport never panics, that what it
// accepts stays within the report's bounds, and that a report it
// accepts, written again as JSON, reads the same.
func FuzzParseReport(f *testing.F) {
	f.Add([]byte(`{"status": "completed", "artifacts": ["a"], "metrics": {"n": 1}, "logs": "x", "gate_failure": false, "error": ""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := record.ParseReport(b)
		if err != nil {
			if r != nil {
				t.Fatalf("parseReport returned a report and the error %v", err)
			}
			return
		}
		if len(r.Metrics) > record.MaxReportEntries || len(r.Artifacts) > record.MaxReportEntries || len(r.Logs) > record.MaxReportEntries {
			t.Fatalf("a report with %d metrics, %d artifacts, %d logs was accepted", len(r.Metrics), len(r.Artifacts), len(r.Logs))
		}
		for _, s := range append(append([]string{r.Error}, r.Artifacts...), r.Logs...) {
			if len(s) > record.MaxReportValue {
				t.Fatalf("a value of %d bytes was accepted", len(s))
			}
		}
		for k, v := range r.Metrics {
			if len(k) > record.MaxReportValue || len(v) > record.MaxReportValue {
				t.Fatalf("a metric of %d+%d bytes was accepted", len(k), len(v))
			}
		}
		switch r.Status {
		case "", "completed", "failed":
		default:
			t.Fatalf("status %q", r.Status)
		}
		again, err := json.Marshal(r.Raw)
		if err != nil {
			t.Fatalf("the accepted report does not encode: %v", err)
		}
		r2, err := record.ParseReport(again)
		if err != nil {
			t.Fatalf("the accepted report %q, written again as %q, is refused: %v", b, again, err)
		}
		r.JSON, r2.JSON = nil, nil
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("report %q reads as %+v; written again as %q it reads as %+v", b, r, again, r2)
		}
	})
}

// FuzzReadManualInput checks that ReadManualInput never panics, that
// it either decides or says why not in a bounded message, and that a
// decision it accepts, written again as flow approve writes it, reads
// the same.
func FuzzReadManualInput(f *testing.F) {
	f.Add([]byte(`{"approved": true, "by": "ann", "at": "2025-01-15T14:30:00Z"}`))
	const path = "/run/manual_inputs/r__h.json"
	f.Fuzz(func(t *testing.T, b []byte) {
		fsys := afero.NewMemMapFs()
		if err := afero.WriteFile(fsys, path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		in, err := record.ReadManualInput(fsys, path)
		if err != nil {
			if in != nil {
				t.Fatalf("ReadManualInput returned a decision and the error %v", err)
			}
			if len(err.Error()) > len(path)+1<<10 {
				t.Fatalf("an error message of %d bytes", len(err.Error()))
			}
			return
		}
		if in == nil {
			// Only a file still being written (empty, or cut short)
			// is not a decision yet.
			if len(bytes.TrimSpace(b)) > 0 && json.Valid(b) {
				t.Fatalf("ReadManualInput of a complete file %q returned nothing and no error", b)
			}
			return
		}
		if err := fsys.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := record.CreateManualInput(fsys, path, *in); err != nil {
			t.Fatal(err)
		}
		in2, err := record.ReadManualInput(fsys, path)
		if in2 != nil && len(in.Input) == 0 && len(in2.Input) == 0 {
			in2.Input = in.Input // {} is written as no input at all
		}
		if err != nil || !reflect.DeepEqual(in, in2) {
			t.Fatalf("decision %q reads as %+v; written again it reads as %+v, %v", b, in, in2, err)
		}
	})
}

// FuzzControl checks control.json's decoding, ReadControl, and what the
// runner makes of it (docs/operating-runs.md, "Pausing"): a state the runner acts on is always
// one of the four; a malformed file or an unknown state is pause, and
// the file is rewritten valid.
func FuzzControl(f *testing.F) {
	f.Add([]byte(`{"desired_state": "continuous", "current_state": "pause"}`))
	const dir = "/run"
	f.Fuzz(func(t *testing.T, b []byte) {
		fsys := afero.NewMemMapFs()
		if err := afero.WriteFile(fsys, dir+"/"+record.ControlFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := record.ReadControl(fsys, dir)
		if err == nil && (c == nil || !record.ValidControl(c.DesiredState)) {
			t.Fatalf("ReadControl(%q) = %+v without an error", b, c)
		}
		root, rootErr := confine.NewRoot(fsys, dir)
		if rootErr != nil {
			t.Fatal(rootErr)
		}
		x := &run{
			r:    &Runner{FS: fsys, Clock: clock.NewFake(time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)), Stdout: io.Discard},
			dir:  dir,
			rec:  fsys,
			root: root,
			st:   &core.State{Steps: map[core.StepKey]*core.StepState{}},
			core: &core.Core{},
		}
		state, rerr := x.readControl()
		if rerr != nil {
			t.Fatalf("readControl(%q): %v", b, rerr)
		}
		if err == nil {
			if state != c.DesiredState {
				t.Fatalf("readControl(%q) = %q; want the desired %q", b, state, c.DesiredState)
			}
			return
		}
		if state != core.Pause {
			t.Fatalf("readControl of the malformed %q = %q; want pause", b, state)
		}
		if len(x.pending) != 1 || x.pending[0].Type != core.EvWarning || !strings.Contains(string(x.pending[0].Data), "treated as pause") {
			t.Fatalf("readControl of the malformed %q: events %+v; want one warning", b, x.pending)
		}
		c, err = record.ReadControl(fsys, dir)
		if err != nil || c == nil || c.DesiredState != core.Pause || !record.ValidControl(c.CurrentState) {
			t.Fatalf("control.json after readControl of %q: %+v, %v; want a valid pause", b, c, err)
		}
	})
}
