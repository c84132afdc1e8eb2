// Package archtest holds tests over the module's own source code that
// enforce rules a compiler does not: it has no code of its own.
//
// TestNoRuntimeKnobs parses every .go file of the module that is not a
// test (of every platform: build constraints are not applied) and
// fails on each use of a runtime knob or a raw system call, naming it
// as file:line:col: package runtime's setter of the processor count,
// runtime/debug's collector percentage and memory release, and the raw
// system calls of package syscall and golang.org/x/sys/unix (knobs in
// knobs_test.go lists them by name). flow's speed is to come from what
// it keeps and how often it writes, not from tuning the Go runtime;
// and a raw system call hides a blocking call from the scheduler, which
// on one processor freezes every goroutine — timers, heartbeats, the
// copying of session output — until the kernel answers. The check
// resolves each file's imports, so an aliased import is caught and a
// function of the same name in another package, or the name in a
// comment or string, is not.
//
// What can go wrong: a file that does not parse fails the test, since
// it cannot be checked. Test files are not checked, nor are testdata,
// vendor and hidden directories or nested modules. A use through a
// dot import cannot be told from a local name, so a dot import of a
// package with knobs is itself reported. The check reads the source,
// not the built program: a dependency's knobs are not seen. Files
// whose owners still have to remove a use are listed, with what they
// use, in temporaryAllowlist; an entry that no longer matches a use
// fails the test, so that the list only shrinks.
package archtest
