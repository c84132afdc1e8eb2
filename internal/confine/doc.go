// Package confine reads files on a user's behalf without letting the
// path escape a directory tree, block the reader, or exhaust its memory.
//
// flow reads files named by workflows and by the sessions it runs:
// read_file and glob in expressions, prompt_file, a session's report.
// Any of those names may be hostile or careless: a symlink in the
// repository pointing at /etc, a FIFO whose open never returns, a
// report path that a session replaced with a link to /dev/zero, a
// directory that a session swaps for a symlink to / while flow reads
// below it. Every read goes through this package, which
//
//   - resolves symlinks component by component through the afero.Fs
//     (afero.Lstater and afero.LinkReader; a file system without
//     symlinks needs no resolution) and refuses a path whose real
//     location lies outside the allowed roots; links that stay inside
//     (absolute or relative, even into another allowed root) are
//     followed;
//   - refuses, from what the resolution saw, anything at the end that is
//     not a regular file, without opening it;
//   - opens the resolved location without following any link: on the
//     operating system's file system (afero.OsFs) through
//     internal/safefs, relative to an open directory (a Root's, held
//     from NewRoot on, or /), so that a directory swapped for a symlink
//     between the resolution and the open fails the open instead of
//     leading out of the roots; on other file systems (in memory, in
//     tests) by name, with O_NOFOLLOW on the last component;
//   - opens without blocking (O_NONBLOCK), then checks the open file,
//     not the name, is a regular file, so that nothing swapped in
//     between the check and the open is read;
//   - reads at most a given number of bytes, and says so when a file is
//     larger.
//
// A race can make a read fail (the path changed under it: the error
// wraps safefs.ErrSymlink or fs.ErrNotExist), never read elsewhere.
// What it cannot refuse: a hard link inside a root to a file outside it
// is a regular file inside, and is read like one.
//
// The errors are typed (*EscapeError, *NotRegularError,
// *TooLargeError) so that callers can tell a refusal from a missing
// file (fs.ErrNotExist is kept in the chain).
package confine
