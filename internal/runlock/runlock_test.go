package runlock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flow-run/flow/internal/faultfs"
	"github.com/spf13/afero"
)

const lockPath = "/runs/r1/lock.json"

var t0 = time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)

func holder(pid int) Holder {
	return Holder{PID: pid, Host: "h", StartedAt: t0}
}

func always(v bool) func(Holder) bool { return func(Holder) bool { return v } }

func TestAcquireFresh(t *testing.T) {
	fs := afero.NewMemMapFs()
	l, err := Acquire(fs, lockPath, holder(10), always(true))
	if err != nil {
		t.Fatal(err)
	}
	if l.Holder().Token == "" {
		t.Fatal("no token was generated")
	}
	got, err := Read(fs, lockPath)
	if err != nil {
		t.Fatal(err)
	}
	if got != l.Holder() {
		t.Errorf("Read = %+v, want %+v", got, l.Holder())
	}
	if err := l.Verify(); err != nil {
		t.Errorf("Verify = %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(lockPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file still there after Release: %v", err)
	}
	if err := l.Release(); !errors.Is(err, ErrNotHeld) {
		t.Errorf("second Release = %v, want ErrNotHeld", err)
	}
}

func TestAcquireExisting(t *testing.T) {
	tests := []struct {
		name     string
		existing string // file content; "" means the first holder's lock
		alive    bool
		wantHeld bool
	}{
		{"live holder", "", true, true},
		{"dead holder", "", false, false},
		{"garbage", "not json", true, false},
		{"empty file", " ", true, false},
		{"json without token", `{"pid": 5, "host": "h"}`, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := afero.NewMemMapFs()
			var first *Lock
			if tt.existing == "" {
				var err error
				if first, err = Acquire(fs, lockPath, holder(10), always(true)); err != nil {
					t.Fatal(err)
				}
			} else if err := afero.WriteFile(fs, lockPath, []byte(tt.existing), 0o644); err != nil {
				t.Fatal(err)
			}
			var asked []Holder
			alive := func(h Holder) bool { asked = append(asked, h); return tt.alive }

			second, err := Acquire(fs, lockPath, holder(20), alive)
			if tt.wantHeld {
				var held *HeldError
				if !errors.As(err, &held) {
					t.Fatalf("err = %v, want *HeldError", err)
				}
				if held.Holder != first.Holder() {
					t.Errorf("HeldError.Holder = %+v, want %+v", held.Holder, first.Holder())
				}
				want := "run is held by pid 10 on host h since 2025-01-15T14:30:00Z"
				if err.Error() != want {
					t.Errorf("Error() = %q, want %q", err.Error(), want)
				}
				if err := first.Verify(); err != nil {
					t.Errorf("first lock lost: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("take over: %v", err)
			}
			if first != nil && (len(asked) != 1 || asked[0] != first.Holder()) {
				t.Errorf("alive asked about %+v, want the first holder", asked)
			}
			got, _ := Read(fs, lockPath)
			if got != second.Holder() {
				t.Errorf("lock file = %+v, want %+v", got, second.Holder())
			}
			if first != nil {
				if err := first.Release(); !errors.Is(err, ErrNotHeld) {
					t.Errorf("old holder's Release = %v, want ErrNotHeld", err)
				}
				if _, err := fs.Stat(lockPath); err != nil {
					t.Errorf("old holder's Release removed the new lock: %v", err)
				}
			}
			if err := second.Release(); err != nil {
				t.Errorf("Release = %v", err)
			}
			names, _ := afero.ReadDir(fs, filepath.Dir(lockPath))
			if len(names) != 0 {
				t.Errorf("directory not empty after Release: %d entries", len(names))
			}
		})
	}
}

func TestAcquireKeepsGivenToken(t *testing.T) {
	h := holder(10)
	h.Token = "given"
	l, err := Acquire(afero.NewMemMapFs(), lockPath, h, always(true))
	if err != nil {
		t.Fatal(err)
	}
	if l.Holder().Token != "given" {
		t.Errorf("Token = %q, want %q", l.Holder().Token, "given")
	}
}

func TestAcquireFaults(t *testing.T) {
	tests := []struct {
		name string
		plan faultfs.Plan
	}{
		{"create fails", faultfs.Plan{Op: faultfs.OpCreate, N: 1}},
		{"write fails", faultfs.Plan{Op: faultfs.OpWrite, N: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := afero.NewMemMapFs()
			_, err := Acquire(faultfs.New(base, tt.plan), lockPath, holder(10), always(true))
			if !errors.Is(err, faultfs.ErrInjected) {
				t.Fatalf("err = %v, want ErrInjected", err)
			}
			if _, err := base.Stat(lockPath); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a half-written lock file was left: %v", err)
			}
			if _, err := Acquire(base, lockPath, holder(11), always(true)); err != nil {
				t.Errorf("Acquire after the fault: %v", err)
			}
		})
	}
}

func TestReadMissing(t *testing.T) {
	if _, err := Read(afero.NewMemMapFs(), lockPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want os.ErrNotExist", err)
	}
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	return cmd.Process.Pid
}

func TestProcessAlive(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	tests := []struct {
		name string
		h    Holder
		want bool
	}{
		{"this process", Holder{PID: os.Getpid(), Host: host}, true},
		{"init", Holder{PID: 1, Host: host}, true},
		{"dead process", Holder{PID: deadPid(t), Host: host}, false},
		{"no pid", Holder{PID: 0, Host: host}, false},
		{"other host", Holder{PID: deadPid(t), Host: host + "-elsewhere"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProcessAlive(tt.h); got != tt.want {
				t.Errorf("ProcessAlive(%+v) = %v, want %v", tt.h, got, tt.want)
			}
		})
	}
}

func TestAcquireWithProcessAlive(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	fs := afero.NewOsFs()
	path := filepath.Join(t.TempDir(), "lock.json")

	dead, err := Acquire(fs, path, Holder{PID: deadPid(t), Host: host, StartedAt: t0}, ProcessAlive)
	if err != nil {
		t.Fatal(err)
	}
	me := Holder{PID: os.Getpid(), Host: host, StartedAt: t0}
	l, err := Acquire(fs, path, me, ProcessAlive)
	if err != nil {
		t.Fatalf("take over from a dead pid: %v", err)
	}
	if err := dead.Verify(); !errors.Is(err, ErrNotHeld) {
		t.Errorf("dead holder's Verify = %v, want ErrNotHeld", err)
	}
	_, err = Acquire(fs, path, Holder{PID: os.Getpid(), Host: host, StartedAt: t0}, ProcessAlive)
	var held *HeldError
	if !errors.As(err, &held) || held.Holder.Token != l.Holder().Token {
		t.Fatalf("second Acquire = %v, want *HeldError naming the live holder", err)
	}
	if !strings.Contains(err.Error(), "on host "+host) {
		t.Errorf("Error() = %q", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestRestore: a holder writes its lock file again after it was removed,
// and leaves alone a file that is still its own, names another holder,
// or cannot be read.
func TestRestore(t *testing.T) {
	other := holder(20)
	other.Token = "other"
	otherData, _ := encode(other)
	tests := []struct {
		name    string
		change  func(fs afero.Fs) error // what happens to the file while held
		want    string                  // content expected afterwards; "mine" for this lock's
		wantErr error
	}{
		{"intact", func(afero.Fs) error { return nil }, "mine", nil},
		{"removed", func(fs afero.Fs) error { return fs.Remove(lockPath) }, "mine", nil},
		{"taken over", func(fs afero.Fs) error { return afero.WriteFile(fs, lockPath, otherData, 0o644) }, string(otherData), ErrNotHeld},
		{"garbage", func(fs afero.Fs) error { return afero.WriteFile(fs, lockPath, []byte("{"), 0o644) }, "{", errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := afero.NewMemMapFs()
			l, err := Acquire(fs, lockPath, holder(10), always(true))
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.change(fs); err != nil {
				t.Fatal(err)
			}
			err = l.Restore()
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Restore = %v", err)
			case tt.wantErr == errAny && err == nil:
				t.Fatal("Restore succeeded")
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("Restore = %v, want %v", err, tt.wantErr)
			}
			want := tt.want
			if want == "mine" {
				data, _ := encode(l.Holder())
				want = string(data)
			}
			if got, _ := afero.ReadFile(fs, lockPath); string(got) != want {
				t.Errorf("lock file = %q, want %q", got, want)
			}
			if tt.wantErr == nil {
				if err := l.Release(); err != nil {
					t.Errorf("Release after Restore = %v", err)
				}
			}
		})
	}
}

// errAny in a test table stands for any error.
var errAny = errors.New("any error")

// TestZombieIsNotAlive: a holder that exited but is not reaped yet is
// not alive.
func TestZombieIsNotAlive(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	host, _ := os.Hostname()
	h := Holder{PID: cmd.Process.Pid, Host: host}
	deadline := time.Now().Add(5 * time.Second)
	for ProcessAlive(h) {
		if time.Now().After(deadline) {
			t.Fatal("an exited, unreaped process still counts as alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
