// Package eventlog keeps an append-only log of events in a JSON Lines
// file (events.jsonl): one JSON object per line, each with a sequence
// number one greater than, or at least greater than, the line before.
//
// The log is the durable truth of a run; snapshots are derived from it.
// Log appends with one write per line and never re-reads the file, so an
// append costs the same however long the log has grown. Append does not
// sync: callers call Sync at the points where an event must survive a
// crash (for a runner, when a step has finished), and so pay for one
// fsync per batch instead of one per event.
//
// What can go wrong, and what the package does about it:
//
//   - A crash during a write leaves a torn final line: a prefix of the
//     JSON with no trailing newline, or garbage after a power loss. Read
//     ignores an invalid or unterminated final line, and Open truncates
//     it away so that the next append starts on a clean line. Events that
//     were never synced may be lost; events that were synced never are.
//   - An invalid line that is not the last cannot come from a crash: the
//     file was damaged or edited. Nor can an event whose seq is not after
//     the one before it, even on the last line: two writers appended to
//     the same log. Read then returns the events before the fault with a
//     *CorruptError naming path:line, so that the run can be shown up to
//     it, and Open refuses the log rather than append after the fault.
//   - A write that fails half way (a full disk) would leave a torn line
//     in the middle of the file once later appends succeed. Append
//     therefore truncates the file back to the end of the last complete
//     line. If that fails too, or if Sync fails (after a failed fsync the
//     kernel may have dropped the unwritten data), the Log refuses all
//     further appends; reopening it re-reads what really is on disk.
//   - A disk that is slow to answer makes Sync slow, and the Log's other
//     methods wait for it; nothing else in the process does. Sync is the
//     file's own Sync, an ordinary system call during which the Go
//     runtime runs the process's other goroutines (timers, heartbeats,
//     the copying of session output) on other threads.
//   - Only one Log may append to a file at a time. Open holds the log for
//     the Log's life and refuses a second writer with a *LockedError. On a
//     real file system the lock is an flock(2) on the file, per open file
//     description, so it refuses another process and another Log of this
//     one alike, and the kernel drops it when its holder dies. A file
//     system without descriptors (an in-memory one in tests, or a wrapper
//     such as faultfs) gets a writer marker instead: a directory made
//     beside the log, naming the writer, removed by Close, and taken over
//     when its writer's process is dead (see claimMarker for the rules).
//     The marker only sees writers that use it: a process writing the
//     same file through a real file system's flock does not. Read takes
//     no lock.
//   - A process that does not use this package (an older flow, an editor)
//     can still write to the file. Append checks before every write that
//     the file ends where the Log left it (one fstat) and otherwise
//     refuses, with the Log broken and an error wrapping ErrForeignWrite,
//     so that it never writes a second event with the same seq. A file
//     replaced or removed by its name is not noticed: the Log keeps
//     appending to the file it opened.
package eventlog
