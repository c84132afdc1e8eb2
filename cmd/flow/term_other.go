//go:build !linux

package main

// ttyFd reports whether fd is a terminal; off Linux a character device
// is taken for one.
func ttyFd(uintptr) bool { return true }
