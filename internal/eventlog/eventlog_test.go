package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/faultfs"
	"github.com/spf13/afero"
)

const logPath = "/run/events.jsonl"

var t0 = time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)

func ev(typ, step string) Event {
	return Event{At: NewTime(t0), Type: typ, Step: sk(step)}
}

func openLog(t *testing.T, fs afero.Fs) *Log {
	t.Helper()
	l, err := Open(fs, logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func mustAppend(t *testing.T, l *Log, e Event) Event {
	t.Helper()
	got, err := l.Append(e)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func seqs(events []Event) []int64 {
	out := []int64{}
	for _, e := range events {
		out = append(out, e.Seq)
	}
	return out
}

func TestAppendAndRead(t *testing.T) {
	fs := afero.NewMemMapFs()
	l := openLog(t, fs)
	e := ev("run_started", "")
	e.Data = json.RawMessage(`{ "workflow": "sdlc",
		"vars": {"a": "<b>"} }`)
	got := mustAppend(t, l, e)
	if got.Seq != 1 {
		t.Errorf("first Seq = %d, want 1", got.Seq)
	}
	mustAppend(t, l, ev("step_started", "coding"))
	mustAppend(t, l, Event{Seq: 10, At: NewTime(t0), Type: "step_completed", Step: sk("coding")})
	if got := mustAppend(t, l, ev("run_completed", "")); got.Seq != 11 {
		t.Errorf("Seq after 10 = %d, want 11", got.Seq)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}

	raw, _ := afero.ReadFile(fs, logPath)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("file has %d lines, want 4:\n%s", len(lines), raw)
	}
	wantFirst := `{"seq":1,"at":"2025-01-15T14:30:00.000000Z","type":"run_started","data":{"workflow":"sdlc","vars":{"a":"<b>"}}}`
	if lines[0] != wantFirst {
		t.Errorf("line 1 = %s\nwant     %s", lines[0], wantFirst)
	}

	tests := []struct {
		after int64
		want  []int64
	}{
		{0, []int64{1, 2, 10, 11}},
		{-1, []int64{1, 2, 10, 11}},
		{2, []int64{10, 11}},
		{5, []int64{10, 11}},
		{11, []int64{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("after=%d", tt.after), func(t *testing.T) {
			events, err := Read(fs, logPath, tt.after)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(seqs(events)); got != fmt.Sprint(tt.want) {
				t.Errorf("seqs = %s, want %s", got, fmt.Sprint(tt.want))
			}
		})
	}
	events, _ := Read(fs, logPath, 1)
	if events[0].Step != sk("coding") || events[0].Type != "step_started" || !events[0].At.Equal(t0) {
		t.Errorf("event 2 = %+v", events[0])
	}
}

func TestAppendRejects(t *testing.T) {
	tests := []struct {
		name string
		e    Event
	}{
		{"seq equal to last", Event{Seq: 2, Type: "x"}},
		{"seq before last", Event{Seq: 1, Type: "x"}},
		{"negative seq", Event{Seq: -5, Type: "x"}},
		{"empty type", Event{Type: ""}},
		{"invalid data", Event{Type: "x", Data: json.RawMessage(`{"a":`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := afero.NewMemMapFs()
			l := openLog(t, fs)
			mustAppend(t, l, ev("a", ""))
			mustAppend(t, l, ev("b", ""))
			if _, err := l.Append(tt.e); err == nil {
				t.Fatal("Append succeeded")
			}
			if l.LastSeq() != 2 {
				t.Errorf("LastSeq = %d, want 2", l.LastSeq())
			}
			if got := mustAppend(t, l, ev("c", "")); got.Seq != 3 {
				t.Errorf("next Seq = %d, want 3", got.Seq)
			}
			events, err := Read(fs, logPath, 0)
			if err != nil || len(events) != 3 {
				t.Fatalf("Read = %d events, %v; want 3, nil", len(events), err)
			}
		})
	}
}

func TestReopenContinuesSeq(t *testing.T) {
	fs := afero.NewMemMapFs()
	l, err := Open(fs, logPath)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, ev("a", ""))
	mustAppend(t, l, ev("b", ""))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ev("c", "")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Append after Close = %v, want os.ErrClosed", err)
	}
	l = openLog(t, fs)
	if l.LastSeq() != 2 {
		t.Fatalf("LastSeq after reopen = %d, want 2", l.LastSeq())
	}
	if got := mustAppend(t, l, ev("c", "")); got.Seq != 3 {
		t.Errorf("Seq = %d, want 3", got.Seq)
	}
}

const (
	line1 = `{"seq":1,"at":"2025-01-15T14:30:00.000000Z","type":"a"}` + "\n"
	line2 = `{"seq":2,"at":"2025-01-15T14:30:00.000000Z","type":"b"}` + "\n"
)

func TestTornAndDamagedFiles(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		wantSeqs []int64
		corrupt  *CorruptError // the fault Read reports and Open fails with; nil: none
		keep     string        // file content after Open, before appending
	}{
		{"empty", "", []int64{}, nil, ""},
		{"clean", line1 + line2, []int64{1, 2}, nil, line1 + line2},
		{"torn prefix", line1 + line2[:20], []int64{1}, nil, line1},
		{"complete json without newline", line1 + strings.TrimSuffix(line2, "\n"), []int64{1}, nil, line1},
		{"garbage last line", line1 + "\x00\x00\x00\n", []int64{1}, nil, line1},
		{"nul bytes unterminated", line1 + "\x00\x00", []int64{1}, nil, line1},
		{"blank lines", "\n" + line1 + "\n" + line2, []int64{1, 2}, nil, "\n" + line1 + "\n" + line2},
		{"invalid middle line", line1 + "{oops\n" + line2, []int64{1}, &CorruptError{Line: 2, Err: errAny}, ""},
		{"seq not increasing", line2 + line1 + line2, []int64{2}, &CorruptError{Line: 2, Seq: 1, Prev: 2}, ""},
		{"duplicate seq on the last line", line1 + line2 + line2, []int64{1, 2}, &CorruptError{Line: 3, Seq: 2, Prev: 2}, ""},
		{"duplicate seq after a blank line", line1 + "\n" + line1 + line2, []int64{1}, &CorruptError{Line: 3, Seq: 1, Prev: 1}, ""},
		{"seq zero", `{"seq":0,"type":"a"}` + "\n" + line1, []int64{}, &CorruptError{Line: 1, Err: errAny}, ""},
		{"bad time", `{"seq":1,"at":"yesterday","type":"a"}` + "\n" + line2, []int64{}, &CorruptError{Line: 1, Err: errAny}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := afero.NewMemMapFs()
			if err := afero.WriteFile(fs, logPath, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			events, err := Read(fs, logPath, 0)
			if fmt.Sprint(seqs(events)) != fmt.Sprint(tt.wantSeqs) {
				t.Errorf("Read seqs = %v, want %v", seqs(events), tt.wantSeqs)
			}
			if tt.corrupt != nil {
				checkCorrupt(t, "Read", err, tt.corrupt)
				_, err := Open(fs, logPath)
				checkCorrupt(t, "Open", err, tt.corrupt)
				if raw, _ := afero.ReadFile(fs, logPath); string(raw) != tt.content {
					t.Errorf("a refused Open changed the file to %q", raw)
				}
				if _, err := fs.Stat(logPath + markerSuffix); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a refused Open left its writer marker: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			l := openLog(t, fs)
			if raw, _ := afero.ReadFile(fs, logPath); string(raw) != tt.keep {
				t.Errorf("after Open file = %q, want %q", raw, tt.keep)
			}
			e := mustAppend(t, l, ev("next", ""))
			events, err = Read(fs, logPath, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(events); n != len(tt.wantSeqs)+1 || events[n-1].Seq != e.Seq {
				t.Errorf("after append: seqs %v, appended %d", seqs(events), e.Seq)
			}
		})
	}
}

// errAny in a wanted CorruptError stands for any non-nil Err.
var errAny = errors.New("any error")

// checkCorrupt checks that err is a *CorruptError like want, naming
// logPath.
func checkCorrupt(t *testing.T, op string, err error, want *CorruptError) {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("%s err = %v, want a *CorruptError", op, err)
	}
	if ce.Path != logPath || ce.Line != want.Line || ce.Seq != want.Seq || ce.Prev != want.Prev || (ce.Err != nil) != (want.Err != nil) {
		t.Errorf("%s err = %#v, want %#v", op, ce, want)
	}
	prefix := fmt.Sprintf("%s:%d: ", logPath, want.Line)
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("%s err = %q, want it to name %s", op, err, prefix)
	}
}

func TestReadMissing(t *testing.T) {
	_, err := Read(afero.NewMemMapFs(), "/none/events.jsonl", 0)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want one wrapping os.ErrNotExist", err)
	}
}

func TestOpenCreatesDirectories(t *testing.T) {
	fs := afero.NewMemMapFs()
	l, err := Open(fs, "/a/b/c/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LastSeq() != 0 {
		t.Errorf("LastSeq = %d, want 0", l.LastSeq())
	}
	if _, err := fs.Stat("/a/b/c/events.jsonl"); err != nil {
		t.Error(err)
	}
}

func TestConcurrentAppend(t *testing.T) {
	fs := afero.NewMemMapFs()
	l := openLog(t, fs)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, err := l.Append(ev("tick", fmt.Sprint(g))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	events, err := Read(fs, logPath, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 400 || l.LastSeq() != 400 {
		t.Errorf("%d events, LastSeq %d; want 400", len(events), l.LastSeq())
	}
}

// appendScript opens the log, appends three events, syncs, appends two
// more and syncs again. It returns the seqs of the events it was told
// were synced, and the first error.
func appendScript(fs afero.Fs) (synced []int64, err error) {
	l, err := Open(fs, logPath)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var pending []int64
	for i := range 5 {
		e, err := l.Append(Event{At: NewTime(t0), Type: "step", Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		if err != nil {
			return synced, err
		}
		pending = append(pending, e.Seq)
		if i == 2 || i == 4 {
			if err := l.Sync(); err != nil {
				return synced, err
			}
			synced = append(synced, pending...)
			pending = nil
		}
	}
	return synced, nil
}

// TestFaults fails each write, sync and create in turn, torn or not, on
// a live or a dead disk, and checks that the log stays readable, that
// every event reported synced is in it, and that reopening it allows
// appends again.
func TestFaults(t *testing.T) {
	counter := faultfs.New(afero.NewMemMapFs(), faultfs.Plan{})
	if _, err := appendScript(counter); err != nil {
		t.Fatal(err)
	}
	for _, op := range []faultfs.Op{faultfs.OpWrite, faultfs.OpSync, faultfs.OpCreate, faultfs.OpMkdir} {
		for k := 1; k <= counter.Count(op); k++ {
			for _, plan := range []faultfs.Plan{
				{Op: op, N: k},
				{Op: op, N: k, Partial: true},
				{Op: op, N: k, Partial: true, Sticky: true},
			} {
				name := fmt.Sprintf("%v/%d/partial=%v/sticky=%v", op, k, plan.Partial, plan.Sticky)
				t.Run(name, func(t *testing.T) {
					base := afero.NewMemMapFs()
					ffs := faultfs.New(base, plan)
					synced, err := appendScript(ffs)
					if !errors.Is(err, faultfs.ErrInjected) {
						t.Fatalf("err = %v, want ErrInjected", err)
					}
					if _, err := base.Stat(logPath); errors.Is(err, os.ErrNotExist) {
						return // failed before the file was created
					}
					events, err := Read(base, logPath, 0)
					if err != nil {
						t.Fatalf("log unreadable after fault: %v", err)
					}
					have := map[int64]bool{}
					for i, e := range events {
						have[e.Seq] = true
						if e.Seq != int64(i+1) {
							t.Errorf("event %d has seq %d", i, e.Seq)
						}
					}
					for _, s := range synced {
						if !have[s] {
							t.Errorf("synced event %d lost", s)
						}
					}
					l, err := Open(base, logPath)
					if err != nil {
						t.Fatalf("reopen: %v", err)
					}
					defer l.Close()
					if _, err := l.Append(ev("resumed", "")); err != nil {
						t.Fatalf("append after reopen: %v", err)
					}
					if after, err := Read(base, logPath, 0); err != nil || len(after) != len(events)+1 {
						t.Fatalf("after reopen: %d events, %v; want %d", len(after), err, len(events)+1)
					}
				})
			}
		}
	}
}

func TestBrokenAfterFailedSync(t *testing.T) {
	ffs := faultfs.New(afero.NewMemMapFs(), faultfs.Plan{Op: faultfs.OpSync, N: 1})
	l, err := Open(ffs, logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppend(t, l, ev("a", ""))
	if err := l.Sync(); !errors.Is(err, faultfs.ErrInjected) {
		t.Fatalf("Sync = %v, want ErrInjected", err)
	}
	if _, err := l.Append(ev("b", "")); !errors.Is(err, ErrBroken) {
		t.Errorf("Append after failed Sync = %v, want ErrBroken", err)
	}
}

func TestOs(t *testing.T) {
	fs := afero.NewOsFs()
	path := filepath.Join(t.TempDir(), "run", "events.jsonl")
	l, err := Open(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, ev("a", ""))
	mustAppend(t, l, ev("b", ""))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Simulate a crash mid-write.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":3,"at":"2025`)
	f.Close()
	l, err = Open(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := mustAppend(t, l, ev("c", "")); got.Seq != 3 {
		t.Errorf("Seq = %d, want 3", got.Seq)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	events, err := Read(fs, path, 0)
	if err != nil || len(events) != 3 || events[2].Type != "c" {
		t.Fatalf("Read = %+v, %v", events, err)
	}
}

func benchmarkAppend(b *testing.B, syncEvery int) {
	path := filepath.Join(b.TempDir(), "events.jsonl")
	l, err := Open(afero.NewOsFs(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	e := Event{At: NewTime(t0), Type: "step_completed", Step: sk("coding"),
		Data: json.RawMessage(`{"attempt":1,"iteration":1,"exit_code":0,"duration":"1.5s"}`)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := l.Append(e); err != nil {
			b.Fatal(err)
		}
		if syncEvery > 0 && i%syncEvery == 0 {
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkAppend measures an append without sync on the real file system.
func BenchmarkAppend(b *testing.B) { benchmarkAppend(b, 0) }

// BenchmarkAppendSync measures an append followed by a sync.
func BenchmarkAppendSync(b *testing.B) { benchmarkAppend(b, 1) }

// TestReadSkipsWhatTheCallerHas: lines at or before after are not
// decoded, only their order is checked: a reader that has a snapshot
// pays for the events after it.
func TestReadSkipsWhatTheCallerHas(t *testing.T) {
	fs := afero.NewMemMapFs()
	log := `{"seq":1,"at":"2025-01-15T14:30:00.000000Z","type":"a"}
{"seq":2,"at":"2025-01-15T14:30:00.000000Z","type":"b","data":{not json}}
{"seq":3,"at":"2025-01-15T14:30:00.000000Z","type":"c"}
`
	_ = afero.WriteFile(fs, "/l", []byte(log), 0o644)
	evs, err := Read(fs, "/l", 2)
	if err != nil || len(evs) != 1 || evs[0].Type != "c" {
		t.Fatalf("Read after 2 = %+v, %v", evs, err)
	}
	if _, err := Read(fs, "/l", 0); err == nil {
		t.Error("Read of every line did not see the broken one")
	}
	_ = afero.WriteFile(fs, "/d", []byte(`{"seq":1,"at":"2025-01-15T14:30:00Z","type":"a"}
{"seq":1,"at":"2025-01-15T14:30:00Z","type":"a"}
{"seq":2,"at":"2025-01-15T14:30:00Z","type":"b"}
`), 0o644)
	var ce *CorruptError
	if _, err := Read(fs, "/d", 5); !errors.As(err, &ce) || ce.Line != 2 {
		t.Errorf("a repeated seq among skipped lines: %v", err)
	}
}

// TestEachStreamsWhatReadReturns: Each hands over, one at a time, the
// events Read returns, up to a fault and with its error; an error of the
// callback stops the reading and comes back unchanged.
func TestEachStreamsWhatReadReturns(t *testing.T) {
	fs := afero.NewMemMapFs()
	line := func(seq int64, typ string) string {
		return fmt.Sprintf(`{"seq":%d,"at":"2025-01-15T14:30:00Z","type":%q}`+"\n", seq, typ)
	}
	logs := map[string]string{
		"/whole": line(1, "a") + line(2, "b") + line(3, "c") + line(4, "d"),
		"/fault": line(1, "a") + line(2, "b") + line(2, "b") + line(3, "c"),
		"/torn":  line(1, "a") + line(2, "b") + `{"seq":3,"at":`,
	}
	for path, log := range logs {
		_ = afero.WriteFile(fs, path, []byte(log), 0o644)
		for _, after := range []int64{0, 1, 3} {
			want, wantErr := Read(fs, path, after)
			var got []Event
			err := Each(fs, path, after, func(e Event) error {
				got = append(got, e)
				return nil
			})
			if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Errorf("%s after %d: Each gave %v, %v; Read %v, %v", path, after, got, err, want, wantErr)
			}
		}
	}
	stop := errors.New("enough")
	var seen []string
	err := Each(fs, "/whole", 0, func(e Event) error {
		seen = append(seen, e.Type)
		if e.Type == "b" {
			return stop
		}
		return nil
	})
	if err != stop || strings.Join(seen, " ") != "a b" {
		t.Errorf("a callback stopping at b: saw %v, returned %v", seen, err)
	}
	if err := Each(fs, "/none", 0, func(Event) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Each of a missing log: %v", err)
	}
}

// TestScanLongLines: lines longer than the read buffer — an event with
// a large report, a log that grew after its size was taken — are read
// whole, and torn or faulty ones found as in short lines.
func TestScanLongLines(t *testing.T) {
	big := strings.Repeat("x", 200)
	var b strings.Builder
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&b, `{"seq":%d,"at":"2025-01-15T14:30:00Z","type":"t%d","data":{"report":"%s"}}`+"\n", i, i, strings.Repeat(big, i))
	}
	whole := b.String()
	for _, size := range []int{16, 100, 1000, 64 << 10} {
		for _, c := range []struct {
			name, log string
			after     int64
			want      string
			fault     int
		}{
			{"whole", whole, 0, "t1 t2 t3 t4 t5", 0},
			{"after 3", whole, 3, "t4 t5", 0},
			{"torn", whole + `{"seq":6,"at":"2025-01-15T14:30:00Z","type":"t6","data":{"report":"` + big, 0, "t1 t2 t3 t4 t5", 0},
			{"repeated", whole + strings.SplitAfter(whole, "\n")[1], 2, "t3 t4 t5", 6},
		} {
			var got []string
			end, total, err := scan("/l", strings.NewReader(c.log), size, c.after, func(e Event) bool {
				got = append(got, e.Type)
				if want := fmt.Sprintf(`{"report":"%s"}`, strings.Repeat(big, int(e.Seq))); string(e.Data) != want {
					t.Errorf("size %d, %s: data of %d is %d bytes", size, c.name, e.Seq, len(e.Data))
				}
				return true
			})
			var ce *CorruptError
			switch {
			case c.fault == 0 && err != nil, c.fault > 0 && (!errors.As(err, &ce) || ce.Line != c.fault):
				t.Errorf("size %d, %s: %v", size, c.name, err)
			case strings.Join(got, " ") != c.want:
				t.Errorf("size %d, %s: events %v, want %s", size, c.name, got, c.want)
			case c.fault == 0 && (end != int64(len(whole)) || total != int64(len(c.log))):
				t.Errorf("size %d, %s: end %d of %d, total %d", size, c.name, end, len(whole), total)
			}
		}
	}
}

// TestAppendAll appends several events with one write: all of them or,
// when the write fails, none, with the log usable afterwards.
func TestAppendAll(t *testing.T) {
	l := openLog(t, afero.NewMemMapFs())
	mustAppend(t, l, ev("run_started", ""))
	got, err := l.AppendAll([]Event{ev("step_completed", "a"), ev("step_started", "b")})
	if err != nil {
		t.Fatal(err)
	}
	if s := seqs(got); fmt.Sprint(s) != "[2 3]" {
		t.Errorf("seqs = %v, want [2 3]", s)
	}
	if _, err := l.AppendAll([]Event{ev("x", ""), {Seq: 3, Type: "y"}}); err == nil {
		t.Error("AppendAll with a seq not after the last: no error")
	}
	if _, err := l.AppendAll([]Event{ev("x", ""), {}}); err == nil {
		t.Error("AppendAll with an empty type: no error")
	}
	if l.LastSeq() != 3 {
		t.Errorf("LastSeq = %d after refused batches, want 3", l.LastSeq())
	}

	// Fail the write after the first append's, whatever Open writes.
	counter := faultfs.New(afero.NewMemMapFs(), faultfs.Plan{})
	cl, err := Open(counter, logPath)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, cl, ev("run_started", ""))
	_ = cl.Close()
	base := afero.NewMemMapFs()
	ffs := faultfs.New(base, faultfs.Plan{Op: faultfs.OpWrite, N: counter.Count(faultfs.OpWrite) + 1, Partial: true})
	fl, err := Open(ffs, logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	mustAppend(t, fl, ev("run_started", ""))
	if _, err := fl.AppendAll([]Event{ev("a", ""), ev("b", "")}); !errors.Is(err, faultfs.ErrInjected) {
		t.Fatalf("AppendAll = %v, want ErrInjected", err)
	}
	if events, err := Read(base, logPath, 0); err != nil || len(events) != 1 {
		t.Fatalf("after a torn batch: %d events, %v; want the first alone", len(events), err)
	}
	if got := mustAppend(t, fl, ev("c", "")); got.Seq != 2 {
		t.Errorf("append after a torn batch: seq %d, want 2", got.Seq)
	}
}
