package safefs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// dirFlag opens a directory only to resolve names in it: O_PATH needs
// no permission to read the directory and does nothing to it.
const dirFlag = unix.O_PATH | unix.O_DIRECTORY

// openat2Beneath opens rel beneath dirfd with openat2, refusing every
// symlink and every way out of dirfd. It reports ok false, to have the
// caller walk the path instead, where openat2 is missing (Linux before
// 5.6) or forbidden (a seccomp filter), keeps failing because of
// concurrent renames, or fails on a non-directory on the way (the walk
// tells a symlink from the rest).
func openat2Beneath(dirfd int, rel string, flag int, perm uint32) (fd int, err error, ok bool) {
	how := unix.OpenHow{
		Flags:   uint64(flag | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	if flag&unix.O_CREAT != 0 {
		how.Mode = uint64(perm)
	}
	for range 10 {
		fd, err = unix.Openat2(dirfd, rel, &how)
		switch {
		case err == nil:
			return fd, nil, true
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ELOOP):
			return -1, ErrSymlink, true
		case errors.Is(err, unix.EXDEV):
			return -1, ErrOutside, true
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM), errors.Is(err, unix.E2BIG), errors.Is(err, unix.ENOTDIR):
			return -1, nil, false
		}
		return -1, err, true
	}
	return -1, nil, false
}
