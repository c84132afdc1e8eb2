package local

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/redact"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
	"github.com/spf13/afero"
)

// writeRecorder keeps what is written to it, and each write.
type writeRecorder struct {
	bytes.Buffer
	writes []string
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return w.Buffer.Write(p)
}

// TestPrefixWriter checks that every line reaches the terminal whole
// behind its prefix, however the output is split into writes; that a
// carriage return not followed by a newline ends what is shown, and
// the prefix is written again after it; and that an output without a
// final newline is ended by Flush.
func TestPrefixWriter(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want string
	}{
		{name: "empty", out: "", want: ""},
		{name: "one line", out: "hello\n", want: "[s] hello\n"},
		{name: "lines", out: "a\nbb\n\nccc\n", want: "[s] a\n[s] bb\n[s] \n[s] ccc\n"},
		{name: "no final newline", out: "a\nbb", want: "[s] a\n[s] bb\n"},
		{name: "long line", out: strings.Repeat("x", 100) + "\ny", want: "[s] " + strings.Repeat("x", 100) + "\n[s] y\n"},
		{name: "progress", out: "10%\r20%\r30%\n", want: "[s] 10%\r[s] 20%\r[s] 30%\n"},
		{name: "crlf", out: "a\r\nb\r\n", want: "[s] a\r\n[s] b\r\n"},
		{name: "crlf and an empty line", out: "a\r\n\r\n\n", want: "[s] a\r\n[s] \r\n[s] \n"},
		{name: "final carriage return", out: "a\nb\r", want: "[s] a\n[s] b\r\n"},
		{name: "carriage returns alone", out: "\r\rx", want: "[s] \r[s] \r[s] x\n"},
		{name: "carriage return first", out: "\r 1%\r 2%", want: "[s] \r[s]  1%\r[s]  2%\n"},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 2, 3, 7, 1 << 20} {
			var got writeRecorder
			p := &prefixWriter{mu: &sync.Mutex{}, w: &got, prefix: []byte("[s] ")}
			for i := 0; i < len(tt.out); i += size {
				chunk := tt.out[i:min(i+size, len(tt.out))]
				if n, err := p.Write([]byte(chunk)); n != len(chunk) || err != nil {
					t.Fatalf("%s: Write = %d, %v", tt.name, n, err)
				}
			}
			p.Flush()
			if got.String() != tt.want {
				t.Errorf("%s by %d: got %q; want %q", tt.name, size, got.String(), tt.want)
			}
			for _, w := range got.writes {
				if !strings.HasPrefix(w, "[s] ") || !strings.HasSuffix(w, "\n") && !strings.HasSuffix(w, "\r") {
					t.Errorf("%s by %d: a partial line reached the terminal: %q", tt.name, size, w)
				}
			}
		}
	}
}

// TestPrefixWriterLongLine: a line longer than maxLiveLine is shown in
// pieces of maxLiveLine bytes as it comes, each behind the prefix on a
// line of its own, and no more than maxLiveLine bytes of it are held.
func TestPrefixWriterLongLine(t *testing.T) {
	line := strings.Repeat("0123456789", (3*maxLiveLine+100)/10)
	for _, size := range []int{1000, 32 << 10, 1 << 20} {
		var got writeRecorder
		p := &prefixWriter{mu: &sync.Mutex{}, w: &got, prefix: []byte("[s] ")}
		for i := 0; i < len(line); i += size {
			p.Write([]byte(line[i:min(i+size, len(line))]))
			if len(p.line) > maxLiveLine || cap(p.line) > 2*maxLiveLine {
				t.Fatalf("by %d: holds %d bytes (capacity %d) of a line", size, len(p.line), cap(p.line))
			}
		}
		if got.Len() < 3*maxLiveLine {
			t.Errorf("by %d: %d bytes shown before the line ended; want its first 3 pieces", size, got.Len())
		}
		p.Write([]byte("\nend"))
		p.Flush()
		var want strings.Builder
		for rest := line; rest != ""; {
			k := min(maxLiveLine, len(rest))
			want.WriteString("[s] " + rest[:k] + "\n")
			rest = rest[k:]
		}
		want.WriteString("[s] end\n")
		if got.String() != want.String() {
			t.Errorf("by %d: got %d bytes, not the line in pieces of %d", size, got.Len(), maxLiveLine)
		}
	}
}

// TestPrefixWriterLongLineUTF8: a long line is cut between characters,
// never inside one.
func TestPrefixWriterLongLineUTF8(t *testing.T) {
	line := "x" + strings.Repeat("é€😀", maxLiveLine/3)
	var got bytes.Buffer
	p := &prefixWriter{mu: &sync.Mutex{}, w: &got, prefix: []byte("> ")}
	for i := 0; i < len(line); i += 4093 {
		p.Write([]byte(line[i:min(i+4093, len(line))]))
	}
	p.Flush()
	pieces := strings.Split(strings.TrimSuffix(got.String(), "\n"), "\n")
	if len(pieces) < 2 {
		t.Fatalf("%d pieces; want the line cut", len(pieces))
	}
	var joined strings.Builder
	for i, piece := range pieces {
		body, ok := strings.CutPrefix(piece, "> ")
		if !ok || !utf8.ValidString(body) || len(body) > maxLiveLine {
			t.Fatalf("piece %d (%d bytes) is not a prefixed run of whole characters: %q…", i, len(body), piece[:min(20, len(piece))])
		}
		joined.WriteString(body)
	}
	if joined.String() != line {
		t.Error("the pieces do not make up the line")
	}
}

// TestLiveOutputHidesSecrets: secrets split across writes, and across
// the pieces of a long line, are hidden on the terminal, as the session
// output path chains the writers: secrets are hidden before lines are
// prefixed.
func TestLiveOutputHidesSecrets(t *testing.T) {
	const secret = "s3cr3t-abc123"
	r := redact.New(secret)
	out := "a " + secret + "\n" + strings.Repeat("y", maxLiveLine-1) + secret + strings.Repeat("z", 100) + "\n" + secret
	for _, size := range []int{1, 5, 4096, 1 << 20} {
		var got bytes.Buffer
		p := &prefixWriter{mu: &sync.Mutex{}, w: &got, prefix: []byte("[s] ")}
		hidden := r.Writer(p)
		for i := 0; i < len(out); i += size {
			hidden.Write([]byte(out[i:min(i+size, len(out))]))
		}
		hidden.Close()
		p.Flush()
		shown := got.String()
		if strings.Contains(strings.ReplaceAll(shown, "\n[s] ", ""), secret) {
			t.Fatalf("by %d: the terminal shows the secret", size)
		}
		if want := "[s] a ***\n"; !strings.HasPrefix(shown, want) || !strings.HasSuffix(shown, "\n[s] ***\n") {
			t.Errorf("by %d: got %q…%q", size, shown[:min(20, len(shown))], shown[max(0, len(shown)-20):])
		}
	}
}

// TestTailBuffer: the tail keeps the last bytes written, however the
// writes are sized.
func TestTailBuffer(t *testing.T) {
	out := strings.Repeat("0123456789abcdefghij\n", 50)
	for _, size := range []int{1, 3, 64, 100, 1000, 5000} {
		tail := &tailBuffer{max: 100}
		for i := 0; i < len(out); i += size {
			tail.Write([]byte(out[i:min(i+size, len(out))]))
		}
		if want := out[len(out)-100:]; tail.String() != want {
			t.Errorf("by %d: %q; want %q", size, tail.String(), want)
		}
	}
	short := &tailBuffer{max: 100}
	short.Write([]byte("ab"))
	short.Write([]byte("c"))
	if short.String() != "abc" {
		t.Errorf("short output: %q", short.String())
	}
	if empty := (&tailBuffer{max: 100}); empty.String() != "" {
		t.Errorf("no output: %q", empty.String())
	}
}

// TestPrefixWriterKeepsNoAlias checks that a caller reusing its buffer
// after Write does not change a line still being assembled.
func TestPrefixWriterKeepsNoAlias(t *testing.T) {
	var got bytes.Buffer
	p := &prefixWriter{mu: &sync.Mutex{}, w: &got, prefix: []byte("> ")}
	buf := []byte("ab\ncd")
	p.Write(buf)
	copy(buf, "XXXXX")
	p.Write([]byte("e\n"))
	if want := "> ab\n> cde\n"; got.String() != want {
		t.Fatalf("got %q; want %q", got.String(), want)
	}
}

// TestSessionLongLineLive runs a session whose output has a line
// longer than maxLiveLine holding a secret, and a signal without a
// final newline, with live output on: the terminal shows the line in
// prefixed pieces and the signal line ended, the log keeps the line
// whole, the secret is hidden in both, and the signal counts.
func TestSessionLongLineLive(t *testing.T) {
	const token = "s3cr3t-abc123"
	e := newEnv(t, "name: t\nsteps:\n  - {id: s, run: x}\n")
	long := strings.Repeat("a", 2*maxLiveLine+10) + token
	s := &scripted{fn: func(call) reply { return reply{Out: "start\n" + long + "\nPASS"} }}
	r := e.runner(e.fs, s)
	r.Live = true
	r.Environ = []string{"API_TOKEN=" + token}
	res, err := r.Run(t.Context(), spec.Options{Workflow: e.wf, Repo: repo, RunID: "r1"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %+v %v", res, err)
	}
	hidden := strings.Repeat("a", 2*maxLiveLine+10) + redact.Mask
	wantLive := "[s] start\n[s] " + hidden[:maxLiveLine] + "\n[s] " + hidden[maxLiveLine:2*maxLiveLine] +
		"\n[s] " + hidden[2*maxLiveLine:] + "\n[s] PASS\n"
	if shown := e.out.String(); !strings.Contains(shown, wantLive) || strings.Contains(shown, token) {
		t.Errorf("the terminal shows %d bytes, not the session's output in pieces with the secret hidden", len(shown))
	}
	st := e.state(e.fs)
	step := st.Steps[keytest.K("s")]
	if step.Verdict != "PASS" {
		t.Errorf("verdict %q; want PASS", step.Verdict)
	}
	log, err := afero.ReadFile(e.fs, filepath.Join(record.RunDir(repo, "r1"), step.LogPath))
	if err != nil {
		log, err = afero.ReadFile(e.fs, step.LogPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := "start\n" + hidden + "\nPASS"; string(log) != want {
		t.Errorf("the log holds %d bytes; want the output as it was, %d bytes, secret hidden", len(log), len(want))
	}
}

// failingWriter fails every write, counting them.
type failingWriter struct{ writes int }

func (f *failingWriter) Write([]byte) (int, error) {
	f.writes++
	return 0, errors.New("broken pipe")
}

// TestPrefixWriterFailure: a terminal that fails ends the live view
// only; the writer reports success, so that the session's log, written
// in the same writes, goes on.
func TestPrefixWriterFailure(t *testing.T) {
	bad := &failingWriter{}
	p := &prefixWriter{mu: &sync.Mutex{}, w: bad, prefix: []byte("[s] ")}
	var log bytes.Buffer
	w := &lockedWriter{ws: []io.Writer{io.MultiWriter(p, &log)}}
	for _, line := range []string{"one\n", "two\n", "three"} {
		if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", line, n, err)
		}
	}
	p.Flush()
	if log.String() != "one\ntwo\nthree" {
		t.Errorf("log %q", log.String())
	}
	if bad.writes != 1 {
		t.Errorf("%d writes to a failed terminal; want 1", bad.writes)
	}
}
