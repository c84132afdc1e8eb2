// Package safefs opens, creates and removes files beneath a root
// directory without ever following a symbolic link, and opens only
// regular files (and directories, to list them) without blocking.
//
// flow writes its run directory inside the repository, which the
// sessions it runs may also write. A session can plant a symlink where
// flow is about to write a log (logs/step.1.1.log ->
// ~/.ssh/authorized_keys), replace a directory of the run by a symlink
// to elsewhere, leave a FIFO where flow will read (an open that never
// returns) or a symlink to /dev/zero (a read that never ends). Checking
// a name first and opening it afterwards does not help: the name can be
// swapped between the check and the open. This package resolves every
// path relative to an open directory, component by component, so that
// what is checked is what is opened:
//
//   - On Linux 5.6 and later one openat2 call with RESOLVE_BENEATH and
//     RESOLVE_NO_SYMLINKS does it in the kernel. Elsewhere, and where
//     openat2 is missing or forbidden, each directory on the path is
//     opened with openat(O_DIRECTORY|O_NOFOLLOW) relative to the one
//     before, and the last component with O_NOFOLLOW.
//   - Every open adds O_NONBLOCK, so that a FIFO's open returns at once;
//     the open file (not the name) is then checked with fstat, and
//     anything but a regular file, or a directory opened read-only, is
//     closed and refused with a *NotRegularError. O_NONBLOCK is cleared
//     before a regular file is handed out.
//   - A regular file opened for writing that already existed must have
//     no other hard link (ErrHardLinked): a session could otherwise link
//     a file of the user's into the run directory and have flow append to
//     it. O_TRUNC is applied only after that check, with ftruncate.
//   - O_CREATE without O_EXCL first tries to create the file exclusively,
//     and only when it exists opens it as an existing file, under the
//     rules above.
//
// FS is an afero.Fs over a root directory built on these rules, so that
// code written against afero (and tested with afero.NewMemMapFs) writes
// the real disk through it. Paths given to FS are absolute paths inside
// the root or paths relative to the root; anything that leads out of it
// lexically is refused with ErrOutside. Names are cleaned lexically
// first (a/../b is b): as no symlink is ever followed, that is where
// the kernel would arrive too. The root itself is opened by
// name on each operation, following any symlink in its own path: it is
// the caller's trusted directory (the repository), and only what lies
// below it is walked without links.
//
// Errors are *fs.PathError values whose Err is ErrSymlink, ErrOutside,
// ErrHardLinked, a *NotRegularError, or the system's error (so that
// errors.Is(err, fs.ErrNotExist) works as with the os package).
//
// What it cannot do: a hard link to a file outside the root is a
// regular file inside it, and is read like one (only writing is
// refused); a directory may be moved, within the same file system, from
// outside the root to inside it, and is then walked like any other. A
// removal (Remove, RemoveAll) never follows a link, but removes the link
// itself.
package safefs
