// Package runlock makes sure that at most one runner drives a run at a
// time, and lets a new runner take over a run whose runner died.
//
// The lock is a small JSON file naming its Holder: process id, host,
// start time and a random token that identifies one acquisition. Acquire
// creates the file exclusively. If the file already exists, the holder it
// names is asked about through an injected alive function (ProcessAlive
// in production): a live holder refuses the acquisition with a
// *HeldError; a dead holder, or a file that cannot be parsed, is taken
// over by atomically replacing the file and reading it back to confirm
// that the new token is the one in it. Release removes the file only
// while it still holds the releasing lock's token, so a runner that lost
// its lock never deletes its successor's.
//
// What can go wrong:
//
//   - The lock is advisory and lives in the run directory, not in the
//     kernel: a process that ignores it, or a user who removes the file
//     of a live run, is not stopped by it. The run's event log is the
//     backstop: package eventlog holds its own lock on the log for as
//     long as a runner has it open, and refuses a second writer. A
//     holder whose file was removed can write it again with Restore.
//   - ProcessAlive can only check processes on its own host; for a holder
//     on another host it answers true, and an operator must remove the
//     file of a run whose remote runner is gone. Process ids are reused,
//     so a long-dead holder can look alive to kill(2) until that pid is
//     free again.
//   - Two runners taking over the same dead run at the same instant both
//     replace the file; the read-back settles it in all but the narrowest
//     interleaving. Verify lets a holder check later that it still holds
//     the lock.
//   - Between the exclusive create and the write of its content, the file
//     is empty. Acquire rereads an unparsable file a few times before it
//     treats it as garbage, so it does not take over from a runner that is
//     just acquiring.
package runlock
