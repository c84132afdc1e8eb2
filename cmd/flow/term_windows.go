package main

import "syscall"

// ttyFd reports whether fd is a console: whether it has a console mode,
// which NUL, also a character device, has not.
func ttyFd(fd uintptr) bool {
	var mode uint32
	return syscall.GetConsoleMode(syscall.Handle(fd), &mode) == nil
}
