package ops

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// TestExportImportResume exports a run that waits on a human from one
// repository, imports it into another, approves it there and resumes
// it: the run is re-rooted into the new repository.
func TestExportImportResume(t *testing.T) {
	s, _ := newService(t, humanSteps, nil)
	res := run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
	if res.ExitCode != int(ExitHuman) {
		t.Fatalf("run exit %d; want 3", res.ExitCode)
	}
	// A lock left behind is not exported.
	if err := afero.WriteFile(s.FS, filepath.Join(record.RunDir(repo, "r1"), record.LockFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	id, err := s.ExportRun("", "", &buf)
	if err != nil || id != "r1" {
		t.Fatalf("ExportRun = %q, %v", id, err)
	}
	names := archiveNames(t, buf.Bytes())
	for _, n := range names {
		if !strings.HasPrefix(n, "r1/") {
			t.Errorf("entry %q is not under r1/", n)
		}
		if n == "r1/lock" {
			t.Errorf("the lock was exported")
		}
	}
	if !has(names, "r1/events.jsonl") {
		t.Errorf("entries %v lack r1/events.jsonl", names)
	}

	// A second checkout: another directory with the same workflow.
	const other = "/other"
	s2, _ := newService(t, humanSteps, nil)
	s2.Dir = other
	if err := afero.WriteFile(s2.FS, other+"/wf.yaml", []byte(humanSteps), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := s2.ImportRun(ImportRequest{Archive: bytes.NewReader(buf.Bytes())})
	if err != nil || got != "r1" {
		t.Fatalf("ImportRun = %q, %v", got, err)
	}
	_, err = s2.ImportRun(ImportRequest{Archive: bytes.NewReader(buf.Bytes())})
	wantCode(t, err, ExitUsage, "already exists", "--force")
	// --force never replaces a run a live runner holds.
	lock := filepath.Join(record.RunDir(other, "r1"), record.LockFile)
	if err := afero.WriteFile(s2.FS, lock, []byte(`{"pid":4242,"host":"h","token":"t"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	alive := s2.Alive
	s2.Alive = func(runlock.Holder) bool { return true }
	_, err = s2.ImportRun(ImportRequest{Archive: bytes.NewReader(buf.Bytes()), Force: true})
	wantCode(t, err, ExitHeld)
	if ok, _ := afero.Exists(s2.FS, lock); !ok {
		t.Fatal("the refused import touched the held run")
	}
	s2.Alive = alive
	if err := s2.FS.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.ImportRun(ImportRequest{Archive: bytes.NewReader(buf.Bytes()), Force: true}); err != nil {
		t.Fatalf("ImportRun --force: %v", err)
	}
	if entries := dirNames(t, s2.FS, record.RunsDir(other)); strings.Join(entries, ",") != "r1" {
		t.Errorf("runs dir holds %v; want only r1", entries)
	}
	if _, err := s2.Decide(DecideRequest{RunID: "r1", Step: core.Key("ship_it"), Approve: true}); err != nil {
		t.Fatal(err)
	}
	l, err := s2.PrepareResume(ResumeRequest{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err = s2.Start(context.Background(), l, Attach{})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("resume = %+v, %v", res, err)
	}
	st, _, err := record.LoadState(s2.FS, record.RunDir(other, "r1"), false, t0)
	if err != nil {
		t.Fatal(err)
	}
	if st.RepoDir != other || st.ReportsDir != filepath.Join(record.RunDir(other, "r1"), record.ReportsDir) {
		t.Errorf("repo_dir %s, reports_dir %s; want them in %s", st.RepoDir, st.ReportsDir, other)
	}
	if p := st.Steps[keytest.K("deploy")].ReportPath; p == nil || !strings.HasPrefix(*p, other+"/") {
		t.Errorf("deploy's report path %v is not in %s", p, other)
	}
}

// TestExportRunFile writes the archive atomically to a file.
func TestExportRunFile(t *testing.T) {
	s, _ := newService(t, humanSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
	if _, err := s.ExportRunFile("", "r1", "run.tar.gz"); err != nil {
		t.Fatal(err)
	}
	b, err := afero.ReadFile(s.FS, repo+"/run.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	if names := archiveNames(t, b); !has(names, "r1/run_state.json") && !has(names, "r1/events.jsonl") {
		t.Errorf("entries %v", names)
	}
	for _, n := range dirNames(t, s.FS, repo) {
		if strings.Contains(n, ".tmp-") {
			t.Errorf("temporary file %s left behind", n)
		}
	}
	_, err = s.ExportRunFile("", "nope", "x.tar.gz")
	wantCode(t, err, ExitUsage)
}

// entry is one entry of a test archive.
type entry struct {
	hdr  tar.Header
	body string
}

func regular(name, body string) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name}, body: body}
}

// TestImportRefusesHostileArchives checks that each hostile archive is
// refused with exit 2 and leaves nothing in the repository.
func TestImportRefusesHostileArchives(t *testing.T) {
	many := make([]entry, MaxImportEntries+1)
	for i := range many {
		many[i] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "r1/d/"}}
	}
	tests := []struct {
		name    string
		entries []entry
		raw     []byte
		want    string
	}{
		{name: "dot dot", entries: []entry{regular("r1/events.jsonl", "x"), regular("r1/../x", "x")}, want: `".."`},
		{name: "leading dot dot", entries: []entry{regular("../x", "x")}, want: `".."`},
		{name: "absolute", entries: []entry{regular("/etc/x", "x")}, want: "absolute"},
		{name: "outside the run", entries: []entry{regular("r1/events.jsonl", "x"), regular("r2/x", "x")}, want: "outside r1/"},
		{name: "bad run id", entries: []entry{regular(".agents/x", "x")}, want: "run id"},
		{name: "symlink", entries: []entry{{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: "r1/events.jsonl", Linkname: "/etc/passwd"}}}, want: "symbolic link"},
		{name: "hard link", entries: []entry{regular("r1/a", "x"), {hdr: tar.Header{Typeflag: tar.TypeLink, Name: "r1/b", Linkname: "r1/a"}}}, want: "hard link"},
		{name: "device", entries: []entry{{hdr: tar.Header{Typeflag: tar.TypeChar, Name: "r1/dev", Devmajor: 1, Devminor: 3}}}, want: "character device"},
		{name: "fifo", entries: []entry{{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: "r1/fifo"}}}, want: "FIFO"},
		{name: "too many entries", entries: many, want: "more than 100000 entries"},
		{name: "too large", entries: []entry{{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "r1/big", Size: MaxImportBytes + 1}}}, want: "more than"},
		{name: "empty", entries: nil, want: "empty"},
		{name: "no run", entries: []entry{regular("r1/notes.txt", "hello")}, want: "no readable run"},
		{name: "not gzip", raw: []byte("plain text"), want: "not a gzip archive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newService(t, humanSteps, nil)
			b := tt.raw
			if b == nil {
				b = makeArchive(t, tt.entries)
			}
			_, err := s.ImportRun(ImportRequest{Archive: bytes.NewReader(b)})
			wantCode(t, err, ExitUsage, tt.want)
			if names := dirNames(t, s.FS, record.RunsDir(repo)); len(names) != 0 {
				t.Errorf("left in the runs directory: %v", names)
			}
			if _, err := s.FS.Stat("/etc/x"); err == nil {
				t.Errorf("/etc/x was written")
			}
			if _, err := s.FS.Stat(repo + "/.agents/x"); err == nil {
				t.Errorf("%s/.agents/x was written", repo)
			}
		})
	}
}

// makeArchive builds a gzip tar of entries. A regular file's size is
// its body's unless the header sets a larger one (the size cap): that
// body is left short, which the importer never reads.
func makeArchive(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(e.body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if e.body != "" {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Close reports the short body of an oversized entry; the archive
	// up to it is what the test needs.
	_ = tw.Flush()
	_ = gz.Close()
	return buf.Bytes()
}

func archiveNames(t *testing.T, b []byte) []string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	return names
}

func dirNames(t *testing.T, fsys afero.Fs, dir string) []string {
	t.Helper()
	var names []string
	entries, err := afero.ReadDir(fsys, dir)
	if err != nil && !isNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func isNotExist(err error) bool { return err != nil && errors.Is(err, fs.ErrNotExist) }

func has(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestImportVerifies: an archive is checked as a runner checks a run it
// takes over — every event replayed, the snapshot compared — and an
// import --force never replaces a run whose runner beats, lock file or
// not.
func TestImportVerifies(t *testing.T) {
	s, _ := newService(t, humanSteps, nil)
	run(t, s, RunRequest{Workflow: wf, RunID: "r1", NoWait: true})
	var buf bytes.Buffer
	if _, err := s.ExportRun("", "r1", &buf); err != nil {
		t.Fatal(err)
	}
	edited := func(name string, fn func(string) string) []byte {
		t.Helper()
		gz, err := gzip.NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(gz)
		var entries []entry
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			body, _ := io.ReadAll(tr)
			e := entry{hdr: *h, body: string(body)}
			if h.Name == name {
				e.body = fn(e.body)
				e.hdr.Size = int64(len(e.body))
			}
			entries = append(entries, e)
		}
		return makeArchive(t, entries)
	}
	for _, tc := range []struct {
		name    string
		archive []byte
		want    string
	}{
		{"a garbage event log", edited("r1/events.jsonl", func(string) string { return "garbage\n" }), "records no run"},
		{"an event log with a fault", edited("r1/events.jsonl", func(b string) string {
			lines := strings.SplitAfter(b, "\n")
			return strings.Join(append([]string{lines[0], lines[0]}, lines[1:]...), "")
		}), "no readable run"},
		{"a snapshot edited", edited("r1/run_state.json", func(b string) string {
			return strings.Replace(b, `"status": "waiting_on_human"`, `"status": "completed"`, 1)
		}), "does not agree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s2, _ := newService(t, humanSteps, nil)
			_, err := s2.ImportRun(ImportRequest{Archive: bytes.NewReader(tc.archive)})
			wantCode(t, err, ExitUsage, tc.want)
			if names := dirNames(t, s2.FS, record.RunsDir(repo)); len(names) != 0 {
				t.Errorf("left in the runs directory: %v", names)
			}
		})
	}
	t.Run("a beating runner without its lock file", func(t *testing.T) {
		s2, _ := newService(t, humanSteps, nil)
		if _, err := s2.ImportRun(ImportRequest{Archive: bytes.NewReader(buf.Bytes())}); err != nil {
			t.Fatal(err)
		}
		dir := record.RunDir(repo, "r1")
		st, _, err := record.LoadState(s2.FS, dir, false, t0)
		if err != nil {
			t.Fatal(err)
		}
		st.Status = core.RunRunning
		st.Runner = &core.RunnerInfo{PID: 7, Host: "h", HeartbeatAt: &core.Time{Time: s2.clock().Now()}}
		if err := record.WriteSnapshot(s2.FS, dir, st); err != nil {
			t.Fatal(err)
		}
		_, err = s2.ImportRun(ImportRequest{Archive: bytes.NewReader(buf.Bytes()), Force: true})
		wantCode(t, err, ExitHeld, "beat")
	})
}
