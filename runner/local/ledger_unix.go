//go:build unix

package local

import (
	"errors"
	"syscall"

	"github.com/spf13/afero"
)

// flock takes an exclusive flock(2) on f, waiting for it; the kernel
// releases it when f is closed. A file with no descriptor (a test's
// memory file system) is not locked.
func flock(f afero.File) error {
	sc, ok := f.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = syscall.Flock(int(fd), syscall.LOCK_EX); !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
