package main

import (
	"os"
	"runtime"
	"testing"
)

// TestDevNullIsNoTerminal: output redirected to /dev/null is not shown
// live as on a terminal.
func TestDevNullIsNoTerminal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the terminal check asks the kernel on Linux only")
	}
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("/dev/null was taken for a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(w) {
		t.Error("a pipe was taken for a terminal")
	}
}
