// Package proc runs sessions: shell commands in their own process group,
// with their combined output captured, a wall-clock limit, an idle limit
// (no output for too long) and a graceful stop when the caller's context
// is cancelled.
//
// A session is started as "sh -c Command" in a new process group, so that
// stopping it reaches every process the command started. Every stop —
// cancellation, Timeout or IdleTimeout — sends SIGTERM to the group,
// waits KillGrace for the session to exit, and then sends SIGKILL to the
// group. When the session's main process exits, for whatever reason, any
// process left in its group is killed at once, so that no session process
// outlives the session and Wait never hangs on a background process
// holding the output pipe. On Linux the group's pid cannot be reused in
// between: the main process is only reaped after its group was killed.
//
// Output is read from a pipe by the package itself, which records the
// time of the last byte for idle detection and forwards every byte to
// Spec.Output. Stdout and stderr share the pipe, so they arrive in the
// order the session wrote them.
//
// What can go wrong:
//
//   - A process that leaves the group (setsid, or a daemon that double
//     forks into a new session) escapes the kill. If it keeps the output
//     pipe open, Wait stops reading a short while after the main process
//     exited and returns without the rest of its output.
//   - If the runner itself is killed with SIGKILL it cannot stop its
//     sessions. On Linux the main process of each session gets SIGKILL
//     from the kernel (Pdeathsig) when the runner dies; other processes of
//     the group are not reached and must be cleaned up by the next runner.
//     Pdeathsig is tied to the OS thread that started the process, which
//     the Go runtime keeps alive for the life of an ordinary program.
//   - Spec.Env is the complete environment: nothing is inherited from the
//     runner, and a nil Env means an empty one (sh then uses its built-in
//     PATH).
//   - A session that traps SIGTERM and exits within KillGrace reports its
//     own exit code; Result.TimedOut, Idle or Interrupted still say why it
//     was stopped.
package proc
