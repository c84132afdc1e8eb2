//go:build !linux

package runlock

import (
	"errors"
	"fmt"
)

// InspectProcess needs /proc; on this platform it cannot tell a runner
// from another process, and says so.
func InspectProcess(pid int) (Process, error) {
	return Process{PID: pid}, fmt.Errorf("inspect pid %d: %w", pid, errors.ErrUnsupported)
}
