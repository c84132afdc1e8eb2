package eventlog

import (
	"runtime"
	"syscall"
)

// fsync calls fsync(2) on fd. When the process runs Go code on one
// processor (a runner does: see cmd/flow), the call is made without
// telling the scheduler: a runner waits for its log to be synced
// before it does anything else, and a blocking system call that lasts
// longer than about 20 µs — every sync does — makes the scheduler take
// the processor away and wake another thread to look for work, only
// for both to go back once the sync returns: two thread switches per
// sync for nothing: 1% of a step that runs `true` on a quiet machine,
// 7% with another process busy on a core (bench/README.md).
// Meanwhile nothing else runs in the process (the output of parallel
// sessions waits in their pipes, timers fire late), for as long as the
// disk takes. With more processors the scheduler is told, as usual.
func fsync(fd int) error {
	if runtime.GOMAXPROCS(0) != 1 {
		return syscall.Fsync(fd)
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_FSYNC, uintptr(fd), 0, 0); errno != 0 {
		return errno
	}
	return nil
}
