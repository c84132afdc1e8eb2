package eventlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flow-run/flow/internal/faultfs"
	"github.com/flow-run/flow/internal/runlock"
	"github.com/spf13/afero"
)

// holdEnv, when set in the environment of this test binary, makes it a
// child process that opens the log named by it, says "held" on stdout
// and keeps the log open until killed or its stdin is closed.
const holdEnv = "EVENTLOG_TEST_HOLD"

func TestMain(m *testing.M) {
	if path := os.Getenv(holdEnv); path != "" {
		l, err := Open(afero.NewOsFs(), path)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("held")
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = l.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fsKind builds a file system and a log path on it.
type fsKind struct {
	name string
	make func(t *testing.T) (afero.Fs, string)
	os   bool // the log is a real file, locked by the kernel
}

var fsKinds = []fsKind{
	{"memory", func(*testing.T) (afero.Fs, string) { return afero.NewMemMapFs(), logPath }, false},
	{"faultfs", func(*testing.T) (afero.Fs, string) {
		return faultfs.New(afero.NewMemMapFs(), faultfs.Plan{}), logPath
	}, false},
	{"os", func(t *testing.T) (afero.Fs, string) {
		return afero.NewOsFs(), filepath.Join(t.TempDir(), "run", "events.jsonl")
	}, true},
}

// TestOpenRefusesSecondWriter: while a Log is open, a second Open of
// the same log on the same file system fails with a *LockedError; a
// reader is not refused; once the first is closed the log opens again.
func TestOpenRefusesSecondWriter(t *testing.T) {
	for _, k := range fsKinds {
		t.Run(k.name, func(t *testing.T) {
			fs, path := k.make(t)
			first, err := Open(fs, path)
			if err != nil {
				t.Fatal(err)
			}
			mustAppend(t, first, ev("a", ""))
			_, markerErr := fs.Stat(path + markerSuffix)
			if k.os != errors.Is(markerErr, os.ErrNotExist) {
				t.Errorf("writer marker: %v; want one only on a file system without descriptors", markerErr)
			}

			second, err := Open(fs, path)
			var locked *LockedError
			if !errors.As(err, &locked) || !errors.Is(err, ErrLocked) || locked.Path != path {
				t.Fatalf("second Open = %v, %v; want a *LockedError wrapping ErrLocked", second, err)
			}
			if !strings.Contains(err.Error(), "is open for writing by another runner") {
				t.Errorf("Error() = %q", err)
			}
			if !k.os && locked.PID != os.Getpid() {
				t.Errorf("LockedError names pid %d, want this process", locked.PID)
			}
			if events, err := Read(fs, path, 0); err != nil || len(events) != 1 {
				t.Errorf("Read while held = %d events, %v; want 1, nil", len(events), err)
			}
			mustAppend(t, first, ev("b", ""))

			if err := first.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := fs.Stat(path + markerSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("writer marker left after Close: %v", err)
			}
			third, err := Open(fs, path)
			if err != nil {
				t.Fatalf("Open after Close: %v", err)
			}
			defer third.Close()
			if got := mustAppend(t, third, ev("c", "")); got.Seq != 3 {
				t.Errorf("Seq after reopen = %d, want 3", got.Seq)
			}
		})
	}
}

// TestOpenRefusedWhileChildHoldsLog: a log held open by another process
// cannot be opened; once that process dies, without closing anything,
// the kernel has released the lock and the log opens.
func TestOpenRefusedWhileChildHoldsLog(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("needs flock(2)")
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	fs := afero.NewOsFs()
	l, err := Open(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, ev("a", ""))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), holdEnv+"="+path)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "held\n" {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatalf("child said %q, %v; want held", line, err)
	}

	if l, err := Open(fs, path); !errors.Is(err, ErrLocked) {
		if err == nil {
			l.Close()
		}
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatalf("Open while a child holds the log = %v, want ErrLocked", err)
	}
	if events, err := Read(fs, path, 0); err != nil || len(events) != 1 {
		t.Errorf("Read while a child holds the log = %d events, %v", len(events), err)
	}

	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	l, err = Open(fs, path)
	if err != nil {
		t.Fatalf("Open after the child died: %v", err)
	}
	defer l.Close()
	if got := mustAppend(t, l, ev("b", "")); got.Seq != 2 {
		t.Errorf("Seq = %d, want 2", got.Seq)
	}
}

// TestExistingMarker: a writer marker left beside a log on a file system
// without descriptors refuses Open while its writer may have the log
// open, and is taken over otherwise.
func TestExistingMarker(t *testing.T) {
	host, _ := os.Hostname()
	holder := func(w writer) string {
		b, _ := json.Marshal(w)
		return string(b)
	}
	tests := []struct {
		name       string
		holder     string // content of the holder file; "-" for none
		alive      bool
		wantLocked bool
	}{
		{"live process on this host", holder(writer{PID: 99999, Host: host, FS: "x", Token: "t"}), true, true},
		{"dead process on this host", holder(writer{PID: 99999, Host: host, FS: "x", Token: "t"}), false, false},
		{"process on another host", holder(writer{PID: 7, Host: "elsewhere", FS: "x", Token: "t"}), true, true},
		{"this process, another Fs value", holder(writer{PID: os.Getpid(), Host: host, FS: "*afero.MemMapFs@0x1", Token: "t"}), true, false},
		{"garbage", "{not json", true, false},
		{"no token", holder(writer{PID: 5, Host: host}), true, false},
		{"no holder file", "-", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := afero.NewMemMapFs()
			dir := logPath + markerSuffix
			if err := fs.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.holder != "-" {
				if err := afero.WriteFile(fs, filepath.Join(dir, holderFile), []byte(tt.holder), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var asked []runlock.Holder
			alive := func(h runlock.Holder) bool { asked = append(asked, h); return tt.alive }
			l, err := open(fs, logPath, alive)
			if tt.wantLocked {
				var locked *LockedError
				if !errors.As(err, &locked) {
					t.Fatalf("Open = %v, want *LockedError", err)
				}
				if len(asked) != 1 || asked[0].PID != locked.PID || locked.PID == 0 {
					t.Errorf("asked about %+v; LockedError names pid %d", asked, locked.PID)
				}
				if got, _ := afero.ReadFile(fs, filepath.Join(dir, holderFile)); string(got) != tt.holder {
					t.Errorf("a refused Open changed the marker to %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("take over: %v", err)
			}
			var w writer
			if raw, err := afero.ReadFile(fs, filepath.Join(dir, holderFile)); err != nil || json.Unmarshal(raw, &w) != nil || w.Token != l.marker.self.Token {
				t.Errorf("marker after takeover = %s, %v; want this Log's", raw, err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := fs.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("marker left after Close: %v", err)
			}
		})
	}
}

// TestCloseLeavesAnotherWritersMarker: a Log whose marker was taken over
// does not remove the new writer's marker when it is closed.
func TestCloseLeavesAnotherWritersMarker(t *testing.T) {
	fs := afero.NewMemMapFs()
	l, err := Open(fs, logPath)
	if err != nil {
		t.Fatal(err)
	}
	other := `{"pid":7,"host":"elsewhere","fs":"x","token":"theirs"}`
	holderPath := filepath.Join(logPath+markerSuffix, holderFile)
	if err := afero.WriteFile(fs, holderPath, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err == nil || !strings.Contains(err.Error(), "taken over by pid 7") {
		t.Errorf("Close = %v, want an error naming the new writer", err)
	}
	if got, _ := afero.ReadFile(fs, holderPath); string(got) != other {
		t.Errorf("marker after Close = %q, want the other writer's", got)
	}
}

// TestMarkerFaultLeavesNoLock: an Open whose marker could not be made
// fails, and leaves no marker that would refuse the next Open.
func TestMarkerFaultLeavesNoLock(t *testing.T) {
	tests := []faultfs.Plan{
		{Op: faultfs.OpMkdir, N: 2},                // the marker directory
		{Op: faultfs.OpCreate, N: 2},               // the holder file (the log is created first)
		{Op: faultfs.OpWrite, N: 1, Partial: true}, // the holder's content
		{Op: faultfs.OpWrite, N: 1, Partial: true, Sticky: true},
	}
	for _, plan := range tests {
		t.Run(fmt.Sprintf("%v-%d-sticky=%v", plan.Op, plan.N, plan.Sticky), func(t *testing.T) {
			base := afero.NewMemMapFs()
			if _, err := Open(faultfs.New(base, plan), logPath); !errors.Is(err, faultfs.ErrInjected) {
				t.Fatalf("Open = %v, want ErrInjected", err)
			}
			l, err := Open(base, logPath)
			if err != nil {
				t.Fatalf("Open after the fault: %v", err)
			}
			l.Close()
		})
	}
}

// TestForeignWrite: an append that finds the file changed by someone
// else writes nothing, and the Log refuses every later append.
func TestForeignWrite(t *testing.T) {
	foreign := `{"seq":3,"at":"2025-01-15T14:30:00.000000Z","type":"other"}` + "\n"
	changes := []struct {
		name   string
		change func(fs afero.Fs, path string) error
	}{
		{"appended", func(fs afero.Fs, path string) error {
			f, err := fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			_, err = f.Write([]byte(foreign))
			return errors.Join(err, f.Close())
		}},
		{"truncated", func(fs afero.Fs, path string) error {
			f, err := fs.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			return errors.Join(f.Truncate(int64(len(line1))), f.Close())
		}},
	}
	for _, k := range fsKinds {
		for _, c := range changes {
			t.Run(k.name+"/"+c.name, func(t *testing.T) {
				fs, path := k.make(t)
				l, err := Open(fs, path)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				mustAppend(t, l, ev("a", ""))
				mustAppend(t, l, ev("b", ""))
				if err := c.change(fs, path); err != nil {
					t.Fatal(err)
				}
				before, _ := afero.ReadFile(fs, path)
				for i := range 2 {
					_, err := l.Append(ev("c", ""))
					if !errors.Is(err, ErrForeignWrite) || !errors.Is(err, ErrBroken) {
						t.Fatalf("Append %d after a foreign change = %v, want ErrForeignWrite and ErrBroken", i+1, err)
					}
				}
				if err := l.Sync(); !errors.Is(err, ErrForeignWrite) {
					t.Errorf("Sync = %v, want ErrForeignWrite", err)
				}
				if after, _ := afero.ReadFile(fs, path); string(after) != string(before) {
					t.Errorf("the Log wrote after the foreign change:\n%s", after[len(before):])
				}
			})
		}
	}
}

// TestSecondWriterReadableUpToFault: a log that two writers appended to
// (as before writers were locked out: both continued from seq 4) reads
// up to the first repeated seq, with a *CorruptError saying where, and
// cannot be opened for appending.
func TestSecondWriterReadableUpToFault(t *testing.T) {
	var b strings.Builder
	line := func(seq int, who string) {
		fmt.Fprintf(&b, `{"seq":%d,"at":"2025-01-15T14:30:00.000000Z","type":"step_started","step":%q}`+"\n", seq, who)
	}
	for s := 1; s <= 4; s++ {
		line(s, "first")
	}
	for s := 5; s <= 9; s++ {
		line(s, "first")
		line(s, "second")
	}
	fs := afero.NewMemMapFs()
	if err := afero.WriteFile(fs, logPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	events, err := Read(fs, logPath, 2)
	if got := fmt.Sprint(seqs(events)); got != "[3 4 5]" {
		t.Errorf("Read seqs = %s, want [3 4 5]", got)
	}
	checkCorrupt(t, "Read", err, &CorruptError{Line: 6, Seq: 5, Prev: 5})
	want := logPath + ":6: seq 5 is not after 5: a second writer appended to the log from this line on; the events before line 6 can be read"
	if err == nil || err.Error() != want {
		t.Errorf("Error() = %q\nwant       %q", err, want)
	}
	if _, err := Open(fs, logPath); err == nil {
		t.Fatal("Open of a log with a fault succeeded")
	} else {
		checkCorrupt(t, "Open", err, &CorruptError{Line: 6, Seq: 5, Prev: 5})
	}
}
