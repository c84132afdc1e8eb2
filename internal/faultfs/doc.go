// Package faultfs wraps an afero.Fs so that tests can make the N-th
// write, sync, rename, create, remove or mkdir fail, and so prove that
// code which must survive a crash or a full disk leaves its files in a
// state it can recover from.
//
// The usual pattern is a loop: run the operation under test once on
// New(base, Plan{}) — which never fails — and read Count for the kind of
// operation of interest; then, for k from 1 to that count, run it again
// on a fresh base with Plan{Op: op, N: k} and check the invariant (the
// old file intact, the log readable, no temp file left behind). Sticky
// plans model a dead disk: after the fault, every later mutating
// operation fails as well. Partial plans model a torn write: the failing
// write stores the first half of its data before it reports the error.
//
// What can go wrong: counts are shared by all files opened through one
// FS, so code that does unrelated I/O in goroutines makes N
// nondeterministic. Reads, Stat and Open without O_CREATE are never
// failed or counted. Files opened through the base Fs directly bypass
// the wrapper entirely.
package faultfs
