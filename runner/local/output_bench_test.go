package local

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/flow-run/flow/gates"
	"github.com/flow-run/flow/internal/redact"
)

// The benchmarks below write output as a session's output copier does,
// in 32 KiB writes, in two shapes: one line without a newline (the
// throughput must not fall as it grows: a writer that rescans or holds
// the unfinished line takes time in the square of its length, or
// memory in proportion to it) and `yes` output, two-byte lines (work
// per line).

// outputChunk is the size of the writes of a session's output copier
// (io.Copy's buffer).
const outputChunk = 32 << 10

// benchOutput writes size bytes of chunk, repeated, to the writer made
// by mk, reporting throughput and allocations.
func benchOutput(b *testing.B, size int, chunk []byte, mk func() io.Writer, end func(io.Writer)) {
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		w := mk()
		for n := 0; n < size; n += len(chunk) {
			w.Write(chunk)
		}
		if end != nil {
			end(w)
		}
	}
}

var (
	longChunk = bytes.Repeat([]byte("x"), outputChunk)
	yesChunk  = bytes.Repeat([]byte("y\n"), outputChunk/2)
)

// outputShapes are the line shapes and sizes each benchmark writes.
var outputShapes = []struct {
	name  string
	size  int
	chunk []byte
}{
	{"line=16MiB", 16 << 20, longChunk},
	{"line=64MiB", 64 << 20, longChunk},
	{"yes=16MiB", 16 << 20, yesChunk},
}

func BenchmarkPrefixWriter(b *testing.B) {
	for _, sh := range outputShapes {
		b.Run(sh.name, func(b *testing.B) {
			benchOutput(b, sh.size, sh.chunk, func() io.Writer {
				return &prefixWriter{mu: &sync.Mutex{}, w: io.Discard, prefix: []byte("[step] ")}
			}, func(w io.Writer) { w.(*prefixWriter).Flush() })
		})
	}
}

func BenchmarkSignalScanner(b *testing.B) {
	for _, sh := range outputShapes {
		b.Run(sh.name, func(b *testing.B) {
			benchOutput(b, sh.size, sh.chunk, func() io.Writer {
				return gates.NewSignalScanner(gates.SignalWords{})
			}, func(w io.Writer) { w.(*gates.SignalScanner).Result() })
		})
	}
}

func BenchmarkTailBuffer(b *testing.B) {
	for _, sh := range outputShapes {
		b.Run(sh.name, func(b *testing.B) {
			benchOutput(b, sh.size, sh.chunk, func() io.Writer { return &tailBuffer{max: outputTail} }, nil)
		})
	}
	// Small writes, as from a program that writes each line itself.
	b.Run("writes=8B", func(b *testing.B) {
		benchOutput(b, 1<<20, []byte("1234567\n"), func() io.Writer { return &tailBuffer{max: outputTail} }, nil)
	})
}

func BenchmarkCappedLogShapes(b *testing.B) {
	for _, sh := range outputShapes {
		b.Run(sh.name, func(b *testing.B) {
			benchOutput(b, sh.size, sh.chunk, func() io.Writer {
				return newCappedLog(&discardCloser{}, 8<<20)
			}, func(w io.Writer) { w.(*cappedLog).Close() })
		})
	}
}

func BenchmarkRedactWriter(b *testing.B) {
	r := redact.New("s3cr3t-value", "another-secret")
	for _, sh := range outputShapes {
		b.Run(sh.name, func(b *testing.B) {
			benchOutput(b, sh.size, sh.chunk, func() io.Writer { return r.Writer(io.Discard) },
				func(w io.Writer) { w.(io.Closer).Close() })
		})
	}
}

// BenchmarkSessionOutput is the whole path of a session's output with
// live output on, as (*run).session builds it: the lock, the hiding of
// secrets, the capped log and the live view, the tail and the signal
// scanner.
func BenchmarkSessionOutput(b *testing.B) {
	for _, secrets := range []bool{false, true} {
		var r *redact.Redactor
		if secrets {
			r = redact.New("s3cr3t-value")
		}
		for _, sh := range outputShapes {
			b.Run(fmt.Sprintf("secrets=%v/%s", secrets, sh.name), func(b *testing.B) {
				var live *prefixWriter
				var capped *cappedLog
				var hidden io.WriteCloser
				benchOutput(b, sh.size, sh.chunk, func() io.Writer {
					capped = newCappedLog(&discardCloser{}, 64<<20)
					live = &prefixWriter{mu: &sync.Mutex{}, w: io.Discard, prefix: []byte("[step] ")}
					hidden = r.Writer(io.MultiWriter(capped, live))
					tail := &tailBuffer{max: outputTail}
					return &lockedWriter{ws: []io.Writer{hidden, tail, gates.NewSignalScanner(gates.SignalWords{})}}
				}, func(io.Writer) {
					hidden.Close()
					capped.Close()
					live.Flush()
				})
			})
		}
	}
}
