package runner

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// TestPrefixWriter checks that every line reaches the terminal whole
// behind its prefix, however the output is split into writes.
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
	}
	for _, tt := range tests {
		for _, size := range []int{1, 2, 3, 7, 1 << 20} {
			var got bytes.Buffer
			p := &prefixWriter{mu: &sync.Mutex{}, w: &got, prefix: []byte("[s] ")}
			for i := 0; i < len(tt.out); i += size {
				chunk := tt.out[i:min(i+size, len(tt.out))]
				if n, err := p.Write([]byte(chunk)); n != len(chunk) || err != nil {
					t.Fatalf("%s: Write = %d, %v", tt.name, n, err)
				}
				if !strings.HasSuffix(got.String(), "\n") && got.Len() > 0 {
					t.Fatalf("%s by %d: a partial line reached the terminal: %q", tt.name, size, got.String())
				}
			}
			p.Flush()
			if got.String() != tt.want {
				t.Errorf("%s by %d: got %q; want %q", tt.name, size, got.String(), tt.want)
			}
		}
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

// BenchmarkPrefixWriterLongLine writes one line without a newline in
// 32 KiB writes, as a session's output copier does, then ends it. The
// throughput (MB/s) must not fall as the line grows: a writer that
// rescans the unfinished line on every write takes time in the square
// of its length.
func BenchmarkPrefixWriterLongLine(b *testing.B) {
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	for _, size := range []int{4 << 20, 16 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				p := &prefixWriter{mu: &sync.Mutex{}, w: io.Discard, prefix: []byte("[step] ")}
				for n := 0; n < size; n += len(chunk) {
					p.Write(chunk)
				}
				p.Write([]byte("\n"))
			}
		})
	}
}
