package ops

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"

	"github.com/flow-run/flow/internal/runlock"
	"github.com/flow-run/flow/runner/record"
)

// A frozen runner — stopped with SIGSTOP, stuck in a hung disk or NFS
// write, or wedged — still exists and holds its run's lock and event
// log, but no longer beats: flow status calls it dead, and flow resume
// refuses it as a live holder. flow resume --takeover takes such a run
// over. It checks that the process the lock names is that runner (a
// flow process that started before it took the lock), sends it SIGKILL
// (a stopped process ignores SIGTERM until it is continued; SIGKILL
// ends it where it stands), waits for it to be gone, and then the new
// runner takes the run over as after a crash: it kills what the dead
// runner's sessions left running (their process groups and the
// processes carrying their markers) and runs the step in flight again.
//
// It refuses, with exit 7 and what it saw: a runner that still beats
// (flow cancel stops that one), a runner on another host (it is out of
// reach: stop it there), and a process that outlives SIGKILL (one in
// uninterruptible sleep keeps the log open until its kernel call ends).
// A pid that another process reused is not killed: the runner is gone,
// and the run is taken over without it.

// killWait bounds how long takeover waits for a killed runner to be
// gone: SIGKILL ends a process at once unless it is in uninterruptible
// sleep, which can last as long as the kernel call that holds it.
const killWait = 5 * time.Second

// takeover stops the frozen runner of ref, if it has one, so that a new
// runner can take the run. It returns the lock holder the new runner is
// to treat as gone (a pid reused by another process), or nil.
func (s *Service) takeover(ref record.RunRef) (*runlock.Holder, error) {
	h, err := runlock.Read(s.FS, filepath.Join(ref.Dir, record.LockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no runner holds it: flow resume takes it
	}
	if err != nil {
		return nil, nil // an unreadable lock is taken over anyway (runlock.Acquire)
	}
	alive := s.alive()
	held := func(format string, args ...any) error {
		return &ExitError{Code: ExitHeld, Err: fmt.Errorf("run %s: "+format, append([]any{ref.ID}, args...)...)}
	}
	if h.Host != s.Host {
		return nil, held("its runner is pid %d on host %s, another host: flow cannot stop it from here; stop it there (kill -9 %d on %s) and run flow resume %s --takeover again, or, if that host is gone for good, remove %s and run flow resume %s",
			h.PID, h.Host, h.PID, h.Host, ref.ID, filepath.Join(ref.Dir, record.LockFile), ref.ID)
	}
	if !alive(h) {
		return nil, nil // gone already: flow resume takes it
	}
	now := s.clock().Now()
	age := time.Duration(-1)
	if st := ref.State; st != nil && st.Runner != nil && st.Runner.HeartbeatAt != nil {
		age = now.Sub(st.Runner.HeartbeatAt.Time)
	}
	if age >= 0 && age < 3*record.HeartbeatInterval {
		return nil, held("its runner (pid %d) is alive and beating (heartbeat %s old): it is not frozen; flow cancel %s stops it",
			h.PID, age.Round(time.Second), ref.ID)
	}
	inspect := s.Inspect
	if inspect == nil {
		inspect = runlock.InspectProcess
	}
	p, err := inspect(h.PID)
	if err != nil {
		return nil, held("its runner's pid %d exists, but flow cannot tell whether it is the runner: %v; stop it yourself, then flow resume %s", h.PID, err, ref.ID)
	}
	out := s.stdout()
	if ok, why := p.RunnerOf(h, s.Self); !ok {
		fmt.Fprintf(out, "run %s: the lock's pid %d is another process now (%s): its runner is gone; not killed\n", ref.ID, h.PID, why)
		return &h, nil
	}
	if s.Signal == nil {
		return nil, Unsupported("local", "takeover")
	}
	fmt.Fprintf(out, "run %s: its runner %s has not beaten for %s: killing it (SIGKILL)\n", ref.ID, p, age.Round(time.Second))
	if err := s.Signal(h.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return nil, held("kill its runner (pid %d): %v", h.PID, err)
	}
	for waited := time.Duration(0); alive(h); waited += 20 * time.Millisecond {
		if waited >= killWait {
			seen := p.String()
			if q, err := inspect(h.PID); err == nil {
				seen = q.String()
			}
			return nil, held("its runner survived SIGKILL for %s: %s; it keeps the run's event log open until its kernel call ends; try again later (or reboot), then flow resume %s --takeover",
				killWait, seen, ref.ID)
		}
		<-s.clock().After(20 * time.Millisecond)
	}
	fmt.Fprintf(out, "run %s: its runner (pid %d) is gone; taking the run over\n", ref.ID, h.PID)
	return nil, nil
}
