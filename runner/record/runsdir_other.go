//go:build !unix

package record

import "syscall"

// statAt cannot ask relative to a descriptor here: the caller stats the
// whole path.
func statAt(syscall.RawConn) func(rel string) (size, mtime int64, err error, ok bool) {
	return nil
}
