//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
)

// errUnsupported is why there is no sandbox but on Linux.
var errUnsupported = errors.New("sandbox: only available on Linux")

// Main returns at once: there is no launcher but on Linux.
func Main() {}

func sysProcAttr(Spec, *syscall.SysProcAttr) (*syscall.SysProcAttr, error) {
	return nil, errUnsupported
}
