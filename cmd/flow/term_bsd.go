//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"syscall"
	"unsafe"
)

// ttyFd reports whether fd is a terminal: whether it answers the
// terminal's own request (TIOCGETA), which /dev/null and other devices
// do not.
func ttyFd(fd uintptr) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGETA, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
