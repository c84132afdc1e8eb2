package local

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

// closeBuffer is a session log in memory.
type closeBuffer struct {
	bytes.Buffer
	closed int
}

func (b *closeBuffer) Close() error { b.closed++; return nil }

// chunkings are the ways a test output is handed to the log: whole,
// one byte at a time, in small pieces, and split just before, at and
// after the head's end.
func chunkings(out []byte, head int) map[string][][]byte {
	split := func(at ...int) [][]byte {
		var parts [][]byte
		prev := 0
		for _, a := range at {
			if a > prev && a < len(out) {
				parts = append(parts, out[prev:a])
				prev = a
			}
		}
		return append(parts, out[prev:])
	}
	every := func(n int) [][]byte {
		var parts [][]byte
		for i := 0; i < len(out); i += n {
			parts = append(parts, out[i:min(i+n, len(out))])
		}
		return parts
	}
	return map[string][][]byte{
		"whole":            {out},
		"bytewise":         every(1),
		"threes":           every(3),
		"split before end": split(head - 1),
		"split at end":     split(head),
		"split after end":  split(head + 1),
		"split around":     split(head-2, head+3, len(out)-2),
	}
}

func TestCappedLogExactBytes(t *testing.T) {
	tests := []struct {
		name  string
		limit int64
		out   string
		want  string
	}{
		{name: "empty", limit: 16, out: "", want: ""},
		{name: "under the limit", limit: 16, out: "hello\n", want: "hello\n"},
		{name: "exactly the limit", limit: 16, out: "0123456789abcdef", want: "0123456789abcdef"},
		{name: "one byte over", limit: 16, out: "0123456789abcdefg",
			want: "0123456789ab\n[flow: 1 bytes of output cut here (log_limit 16 bytes)]\ndefg"},
		{name: "far over", limit: 16, out: strings.Repeat("x", 100) + "WXYZ",
			want: strings.Repeat("x", 12) + "\n[flow: 88 bytes of output cut here (log_limit 16 bytes)]\nWXYZ"},
		{name: "head ends a line", limit: 16, out: "01234567890\n" + strings.Repeat("y", 20) + "end!",
			want: "01234567890\n[flow: 20 bytes of output cut here (log_limit 16 bytes)]\nend!"},
		{name: "tail from a line start", limit: 40, out: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + "bbbbbb\nccccc\nlast\n",
			// Head 30, ring 10: "cccc\nlast\n", whose partial first
			// line is dropped.
			want: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n[flow: 13 bytes of output cut here (log_limit 40 bytes)]\nlast\n"},
		{name: "tail from a character start", limit: 16, out: strings.Repeat("z", 14) + "éé",
			// Head 12, ring 4: "éé", whole characters.
			want: strings.Repeat("z", 12) + "\n[flow: 2 bytes of output cut here (log_limit 16 bytes)]\néé"},
		{name: "tail cut in a character", limit: 16, out: strings.Repeat("z", 12) + "€xy",
			// Head 12, ring 4: the last two bytes of € and "xy".
			want: strings.Repeat("z", 12) + "\n[flow: 3 bytes of output cut here (log_limit 16 bytes)]\nxy"},
		{name: "a limit in MiB", limit: 4 << 20, out: strings.Repeat("m", 4<<20+1),
			want: strings.Repeat("m", 3<<20) + "\n[flow: 1 bytes of output cut here (log_limit 4 MiB)]\n" + strings.Repeat("m", 1<<20)},
	}
	for _, tt := range tests {
		head := int(tt.limit - min(tt.limit/4, maxLogTail))
		for how, parts := range chunkings([]byte(tt.out), head) {
			if tt.limit > 1<<10 && how == "bytewise" {
				continue
			}
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				var buf closeBuffer
				c := newCappedLog(&buf, tt.limit)
				for _, p := range parts {
					n, err := c.Write(p)
					if n != len(p) || err != nil {
						t.Fatalf("Write(%d bytes) = %d, %v", len(p), n, err)
					}
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				if got := buf.String(); got != tt.want {
					t.Errorf("log =\n%q\nwant\n%q", clip(got), clip(tt.want))
				}
				if buf.closed != 1 {
					t.Errorf("the file was closed %d times", buf.closed)
				}
			})
		}
	}
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:100] + "..." + s[len(s)-100:]
	}
	return s
}

// TestCappedLogBound checks, for many sizes around the limit and every
// chunking, that the file holds the output whole when it fits and is
// never longer than the limit plus the marker line otherwise.
func TestCappedLogBound(t *testing.T) {
	const limit = 64
	for size := 0; size <= 3*limit; size++ {
		out := make([]byte, size)
		for i := range out {
			out[i] = "abc\n"[i%4]
		}
		for how, parts := range chunkings(out, limit-limit/4) {
			var buf closeBuffer
			c := newCappedLog(&buf, limit)
			for _, p := range parts {
				c.Write(p)
			}
			c.Close()
			got := buf.Bytes()
			if size <= limit {
				if !bytes.Equal(got, out) {
					t.Fatalf("size %d, %s: log %q; want the output whole", size, how, got)
				}
				continue
			}
			i := bytes.Index(got, []byte("[flow: "))
			j := bytes.IndexByte(got[max(i, 0):], '\n')
			if i < 0 || j < 0 {
				t.Fatalf("size %d, %s: no marker in %q", size, how, got)
			}
			marker := len("\n") + j + 1 // the newline before the marker, when the head needs one
			if len(got) > limit+marker {
				t.Fatalf("size %d, %s: log of %d bytes; want at most %d", size, how, len(got), limit+marker)
			}
			if !bytes.HasPrefix(got, out[:limit-limit/4]) || !bytes.HasSuffix(out, got[i+j+1:]) {
				t.Fatalf("size %d, %s: log %q is not the output's head and tail", size, how, got)
			}
			var n int
			fmt.Sscanf(string(got[i:]), "[flow: %d bytes", &n)
			if kept := len(got[i+j+1:]); n != size-(limit-limit/4)-kept {
				t.Fatalf("size %d, %s: marker says %d bytes cut, with %d of %d kept", size, how, n, kept, size)
			}
		}
	}
}

// TestCappedLogUnlimited checks that a limit of zero cuts nothing.
func TestCappedLogUnlimited(t *testing.T) {
	var buf closeBuffer
	c := newCappedLog(&buf, 0)
	out := strings.Repeat("0123456789", 1000)
	for i := 0; i < len(out); i += 7 {
		c.Write([]byte(out[i:min(i+7, len(out))]))
	}
	c.Close()
	if buf.String() != out {
		t.Fatalf("log of %d bytes; want the %d written", buf.Len(), len(out))
	}
}

// TestCappedLogLazyFile writes through the session log as the runner
// makes it: the file holds the head while the session runs, and the
// marker and tail once it is closed.
func TestCappedLogLazyFile(t *testing.T) {
	fsys := afero.NewMemMapFs()
	path := "/run/logs/s.1.1.log"
	c := newCappedLog(&lazyFile{fs: fsys, path: path}, 1000)
	line := []byte(strings.Repeat("x", 99) + "\n")
	for range 50 {
		c.Write(line)
	}
	during, _ := afero.ReadFile(fsys, path)
	if len(during) != 750 {
		t.Fatalf("while the session runs the log holds %d bytes; want the 750 of the head", len(during))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := afero.ReadFile(fsys, path)
	want := string(during) + "\n[flow: 4050 bytes of output cut here (log_limit 1000 bytes)]\n" + strings.Repeat(string(line), 2)
	if string(got) != want {
		t.Fatalf("log =\n%q\nwant\n%q", clip(string(got)), clip(want))
	}
	if _, err := c.Write([]byte("late")); err == nil {
		t.Fatal("a write after Close succeeded")
	}
}

// discardCloser counts what it is given and keeps nothing.
type discardCloser struct{ n int64 }

func (d *discardCloser) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }
func (d *discardCloser) Close() error                { return nil }

// TestCappedLogMemoryFlat writes 200 MB through a 64 MiB log and checks
// that the heap grows by the ring (1 MiB), not by the output.
func TestCappedLogMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200 MB")
	}
	chunk := bytes.Repeat([]byte("y\n"), 16<<10)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d := &discardCloser{}
	c := newCappedLog(d, 64<<20)
	for written := 0; written < 200<<20; written += len(chunk) {
		c.Write(chunk)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	c.Close()
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	if grew > 4<<20 {
		t.Fatalf("the heap grew by %d bytes writing 200 MB; want at most 4 MiB", grew)
	}
	if d.n > 64<<20+100 {
		t.Fatalf("%d bytes reached the file; want at most 64 MiB and a marker", d.n)
	}
	runtime.KeepAlive(c)
}

// BenchmarkCappedLog writes through a 1 MiB log far past its limit;
// allocations per operation stay at zero.
func BenchmarkCappedLog(b *testing.B) {
	chunk := bytes.Repeat([]byte("z"), 32<<10)
	c := newCappedLog(&discardCloser{}, 1<<20)
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		c.Write(chunk)
	}
}
