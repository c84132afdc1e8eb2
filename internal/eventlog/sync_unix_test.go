//go:build unix

package eventlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// TestSyncBlocksOnlyItsCaller: while the log's sync is blocked in the
// kernel, as it is on a disk that is slow to answer, a ticker standing
// for the runner's heartbeat keeps firing and a goroutine copying a
// session's output pipe keeps copying: each makes progress n times
// before the sync is released, and Sync returns only once it is.
//
// The stand-in sync blocks in read(2) on a pipe until the test writes
// to it. Run with -cpu 1 it checks the case that matters most, one
// processor, where a system call that did not tell the scheduler would
// freeze the whole process and the test with it.
func TestSyncBlocksOnlyItsCaller(t *testing.T) {
	const n = 5
	for _, k := range fsKinds {
		t.Run(k.name, func(t *testing.T) {
			fs, path := k.make(t)
			l, err := Open(fs, path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()

			var gate [2]int
			if err := syscall.Pipe(gate[:]); err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(gate[0])
			defer syscall.Close(gate[1])
			entered := make(chan struct{})
			l.sync = func(f afero.File) error {
				close(entered)
				var b [1]byte
				for {
					_, err := syscall.Read(gate[0], b[:])
					if !errors.Is(err, syscall.EINTR) {
						if err != nil {
							return fmt.Errorf("wait for release: %w", err)
						}
						return f.Sync()
					}
				}
			}
			mustAppend(t, l, ev("step_completed", "s1"))
			synced := make(chan error, 1)
			go func() { synced <- l.Sync() }()
			<-entered

			beats, stopBeats := heartbeat()
			defer stopBeats()
			out, copied := sessionOutput(t)
			for i := range n {
				<-beats
				line := fmt.Sprintf("output line %d\n", i)
				if _, err := io.WriteString(out, line); err != nil {
					t.Fatal(err)
				}
				if got := <-copied; got != line {
					t.Fatalf("copied %q, want %q", got, line)
				}
				select {
				case err := <-synced:
					t.Fatalf("Sync returned (%v) before its sync was released", err)
				default:
				}
			}

			if _, err := syscall.Write(gate[1], []byte{1}); err != nil {
				t.Fatal(err)
			}
			if err := <-synced; err != nil {
				t.Fatalf("Sync = %v", err)
			}
			events, err := Read(fs, path, 0)
			if err != nil || len(events) != 1 || events[0].Step != sk("s1") {
				t.Errorf("Read after Sync = %+v, %v", events, err)
			}
		})
	}
}

// heartbeat starts a goroutine that sends on beats at every tick of a
// ticker, until stop is called.
func heartbeat() (beats <-chan struct{}, stop func()) {
	ch, done := make(chan struct{}), make(chan struct{})
	go func() {
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-tk.C:
				select {
				case ch <- struct{}{}:
				case <-done:
					return
				}
			case <-done:
				return
			}
		}
	}()
	return ch, func() { close(done) }
}

// sessionOutput makes a pipe standing for a session's output and starts
// a goroutine copying it, which sends what each read returned on
// copied. The pipe is closed at the end of the test.
func sessionOutput(t *testing.T) (out io.Writer, copied <-chan string) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan string)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		_, _ = io.Copy(chanWriter(ch), r)
	}()
	t.Cleanup(func() {
		_ = w.Close()
		<-finished
		_ = r.Close()
	})
	return w, ch
}

// chanWriter sends a copy of every write on its channel.
type chanWriter chan<- string

func (c chanWriter) Write(p []byte) (int, error) {
	c <- string(p)
	return len(p), nil
}
