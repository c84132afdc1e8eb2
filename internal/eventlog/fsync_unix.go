//go:build unix && !linux

package eventlog

import "syscall"

// fsync calls fsync(2) on fd.
func fsync(fd int) error { return syscall.Fsync(fd) }
