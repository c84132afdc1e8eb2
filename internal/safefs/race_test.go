//go:build unix

package safefs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestSwapRace writes and reads a run directory's logs while another
// goroutine swaps the logs directory for a symlink to a directory
// outside the root, again and again: an operation may fail, but none
// reaches the outside directory.
func TestSwapRace(t *testing.T) {
	const ops = 2000
	both(t, func(t *testing.T, fsys *FS, outside string) {
		logs := filepath.Join(fsys.Root(), "runs", "r1", "logs")
		// The file inside has the outside file's name, so that the
		// same name reaches the outside file while logs is the link.
		if err := os.WriteFile(filepath.Join(logs, "authorized_keys"), []byte("inside\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		aside, link := logs+".aside", logs+".link"
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var done sync.WaitGroup
		done.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = os.Rename(logs, aside)
				_ = os.Rename(link, logs)
				_ = os.Rename(logs, link)
				_ = os.Rename(aside, logs)
			}
		})
		escapes, ok := 0, 0
		for i := range ops {
			name := "runs/r1/logs/authorized_keys"
			var err error
			switch i % 3 {
			case 0:
				var f io.ReadCloser
				if f, err = fsys.Open(name); err == nil {
					b, _ := io.ReadAll(f)
					_ = f.Close()
					if string(b) == secret {
						escapes++
					}
				}
			case 1:
				var f io.WriteCloser
				if f, err = fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
					_, err = io.WriteString(f, "x")
					_ = f.Close()
				}
			case 2:
				var f io.WriteCloser
				if f, err = fsys.Create(fmt.Sprintf("runs/r1/logs/%d.log", i)); err == nil {
					_ = f.Close()
				}
			}
			if err == nil {
				ok++
			}
		}
		close(stop)
		done.Wait()
		if escapes > 0 {
			t.Errorf("%d of %d reads returned the outside file", escapes, ops)
		}
		t.Logf("%d of %d operations succeeded inside", ok, ops)
		// both checks, once this returns, that the outside directory
		// holds only its file, unchanged.
	})
}
