// Package confine reads files on a user's behalf without letting the
// path escape a directory tree, block the reader, or exhaust its memory.
//
// flow reads files named by workflows and by the sessions it runs:
// read_file and glob in expressions, prompt_file, a session's report.
// Any of those names may be hostile or careless: a symlink in the
// repository pointing at /etc, a FIFO whose open never returns, a
// report path that a session replaced with a link to /dev/zero. Every
// read goes through this package, which
//
//   - resolves symlinks component by component through the afero.Fs
//     (afero.Lstater and afero.LinkReader; a file system without
//     symlinks needs no resolution) and refuses a path whose real
//     location lies outside the allowed roots;
//   - opens the resolved path without following a final symlink and
//     without blocking (O_NOFOLLOW, O_NONBLOCK), then checks the open
//     file, not the name, is a regular file, so that nothing swapped in
//     between the check and the open is read;
//   - reads at most a given number of bytes, and says so when a file is
//     larger.
//
// The errors are typed (*EscapeError, *NotRegularError,
// *TooLargeError) so that callers can tell a refusal from a missing
// file (fs.ErrNotExist is kept in the chain).
package confine
