//go:build unix

package eventlog

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/spf13/afero"
)

// TestSyncOnAnyProcessorCount syncs a log on a real file with one
// processor (where fsync is issued without telling the scheduler) and
// with two, and checks that a failing fsync is reported either way.
func TestSyncOnAnyProcessorCount(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(map[int]string{1: "one processor", 2: "two"}[procs], func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			path := filepath.Join(t.TempDir(), "events.jsonl")
			l, err := Open(afero.NewOsFs(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if l.os == nil {
				t.Skip("no descriptor lock on this file system")
			}
			mustAppend(t, l, ev("a", ""))
			if err := l.Sync(); err != nil {
				t.Fatalf("Sync = %v", err)
			}
			b, err := os.ReadFile(path)
			if err != nil || len(b) == 0 {
				t.Fatalf("after Sync the log holds %q, %v", b, err)
			}
			bad := &osFile{fd: -1}
			if err := bad.sync(); !errors.Is(err, syscall.EBADF) {
				t.Errorf("sync of a closed descriptor = %v, want EBADF", err)
			}
		})
	}
}
