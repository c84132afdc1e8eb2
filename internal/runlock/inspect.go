package runlock

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Process is what this host's kernel says of a process: for flow resume
// --takeover to check that the process a lock names is the runner that
// took it — not another process that reused its pid — before it kills
// it.
type Process struct {
	PID int
	// Started is when the process started (to the kernel's clock tick,
	// and the second of the boot time).
	Started time.Time
	// Args is its command line; Exe the file it runs.
	Args []string
	Exe  string
	// State is the kernel's one-letter state: R running, S sleeping,
	// T stopped (SIGSTOP), D in uninterruptible sleep (a hung disk or
	// NFS write: no signal reaches it until the kernel call ends), Z
	// exited, not yet reaped.
	State string
}

// StateText says what State means, for a person.
func (p Process) StateText() string {
	switch p.State {
	case "R":
		return "running"
	case "S":
		return "sleeping"
	case "T", "t":
		return "stopped (SIGSTOP, or a debugger)"
	case "D":
		return "in uninterruptible sleep (a hung disk or NFS write)"
	case "Z", "X":
		return "exited"
	}
	return "in state " + p.State
}

// String names the process for a message: "pid 1234 (flow run wf.yaml,
// stopped (SIGSTOP, or a debugger), started 2025-01-15T14:30:00Z)".
func (p Process) String() string {
	return fmt.Sprintf("pid %d (%s, %s, started %s)", p.PID, strings.Join(p.Args, " "), p.StateText(), p.Started.UTC().Format(time.RFC3339))
}

// RunnerOf reports whether p is the runner that took a lock held by h:
// a flow process (its program's name is flow, or it runs the same file
// as self, this flow's executable) that started no later than h took
// the lock. why says what does not fit, for a process that is not.
func (p Process) RunnerOf(h Holder, self string) (ok bool, why string) {
	// The boot time has a second's precision, and the process starts a
	// little before it takes the lock.
	if !h.StartedAt.IsZero() && p.Started.After(h.StartedAt.Add(2*time.Second)) {
		return false, fmt.Sprintf("it started at %s, after the lock was taken at %s: the pid was reused",
			p.Started.UTC().Format(time.RFC3339), h.StartedAt.UTC().Format(time.RFC3339))
	}
	name := ""
	if len(p.Args) > 0 {
		name = filepath.Base(p.Args[0])
	}
	if name == "flow" || self != "" && (p.Exe == self || name == filepath.Base(self)) {
		return true, ""
	}
	return false, fmt.Sprintf("it runs %q, not flow", strings.Join(p.Args, " "))
}
