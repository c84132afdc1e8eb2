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
//     file was damaged or edited. Read and Open then fail with an error
//     naming path:line rather than silently dropping history.
//   - A write that fails half way (a full disk) would leave a torn line
//     in the middle of the file once later appends succeed. Append
//     therefore truncates the file back to the end of the last complete
//     line. If that fails too, or if Sync fails (after a failed fsync the
//     kernel may have dropped the unwritten data), the Log refuses all
//     further appends; reopening it re-reads what really is on disk.
//   - Only one Log may append to a file at a time. The package does not
//     lock the file; callers hold a run lock (see package runlock).
package eventlog
