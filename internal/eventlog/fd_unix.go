//go:build unix

package eventlog

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/spf13/afero"
)

// osFile is the descriptor of a log opened on a real file system. Its
// size is read with fstat(2) into a buffer kept for the Log's life, so
// that checking it costs no allocation.
type osFile struct {
	fd int
	st syscall.Stat_t
}

// lockOS takes an exclusive flock(2) on f if f is a real file. It
// returns nil and no error if f has no descriptor, or if its file system
// does not support flock: the caller then uses a writer marker. A lock
// held through another open file description — by another process or
// another Log in this one — is a *LockedError. The kernel releases the
// lock when the file is closed or its process dies.
func lockOS(f afero.File, path string) (*osFile, error) {
	sc, ok := f.(syscall.Conn)
	if !ok {
		return nil, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, nil
	}
	var (
		fd    = -1
		lkErr error
	)
	if err := rc.Control(func(u uintptr) {
		fd = int(u)
		lkErr = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		return nil, fmt.Errorf("lock event log %s: %w", path, err)
	}
	switch {
	case lkErr == nil:
		return &osFile{fd: fd}, nil
	case errors.Is(lkErr, syscall.EWOULDBLOCK):
		return nil, &LockedError{Path: path}
	case errors.Is(lkErr, syscall.ENOLCK), errors.Is(lkErr, syscall.EOPNOTSUPP), errors.Is(lkErr, syscall.ENOSYS):
		return nil, nil
	}
	return nil, fmt.Errorf("lock event log %s: %w", path, lkErr)
}

// size returns the file's size as the kernel sees it now.
func (o *osFile) size() (int64, error) {
	for {
		err := syscall.Fstat(o.fd, &o.st)
		if err == nil {
			return o.st.Size, nil
		}
		if !errors.Is(err, syscall.EINTR) {
			return 0, err
		}
	}
}
