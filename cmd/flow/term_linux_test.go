package main

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// TestPseudoTerminalIsTerminal: the terminal end of a pseudo-terminal,
// what a terminal emulator gives flow, is a terminal.
func TestPseudoTerminalIsTerminal(t *testing.T) {
	tty := openPTY(t)
	if !isTerminal(tty) {
		t.Errorf("%s was not taken for a terminal", tty.Name())
	}
}

// openPTY opens a new pseudo-terminal and returns its terminal end,
// skipping the test where there is none to open.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	var unlock int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, ptm.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		t.Skipf("unlock the pseudo-terminal: %v", errno)
	}
	var n uint32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, ptm.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); errno != 0 {
		t.Skipf("number of the pseudo-terminal: %v", errno)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}
