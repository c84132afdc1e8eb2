//go:build unix

package record

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// statAt returns a function that stats a path relative to the
// directory rc is the descriptor of, following links as os.Stat does;
// ok is false when it could not ask. The function is for one goroutine:
// it reuses its buffer.
func statAt(rc syscall.RawConn) func(rel string) (size, mtime int64, err error, ok bool) {
	var (
		st   unix.Stat_t
		path string
		serr error
	)
	stat := func(fd uintptr) { serr = unix.Fstatat(int(fd), path, &st, 0) }
	return func(rel string) (int64, int64, error, bool) {
		path = rel
		if err := rc.Control(stat); err != nil {
			return 0, 0, nil, false
		}
		if serr != nil {
			return 0, 0, serr, true
		}
		return st.Size, st.Mtim.Nano(), nil, true
	}
}
