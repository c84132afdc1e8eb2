//go:build unix && !linux

package safefs

import "golang.org/x/sys/unix"

// dirFlag opens a directory to resolve names in it.
const dirFlag = unix.O_RDONLY | unix.O_DIRECTORY

// openat2Beneath reports ok false: only Linux has openat2, and the
// caller walks the path instead.
func openat2Beneath(dirfd int, rel string, flag int, perm uint32) (fd int, err error, ok bool) {
	return -1, nil, false
}
