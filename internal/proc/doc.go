// Package proc runs sessions: shell commands in their own process group,
// with their combined output captured, a wall-clock limit, an idle limit
// (no output for too long) and a graceful stop when the caller's context
// is cancelled.
//
// A session is started as "sh -c Command" in a new process group, with a
// marker in its environment: FLOW_SESSION_ID (MarkerVar) lists a random
// token of the session, which every process it starts inherits, even one
// that leaves the group (setsid, nohup, a daemon that double forks). A
// process belongs to the session if it is in the session's group or, on
// Linux, if /proc/PID/environ carries the token — never because it
// happens to have been reparented to the runner, and never by a token of
// another session, so that ending one session does not touch another.
//
// Every stop — cancellation, Timeout or IdleTimeout — sends SIGTERM to
// the group and to the session's processes outside it, waits KillGrace
// for the main process to exit, and then sends SIGKILL to the group.
// When the main process has exited, for whatever reason, what is left of
// the session is ended before Wait returns: after a stop, what is left of
// KillGrace is waited out; after a normal exit each process gets SIGTERM
// and the drain timeout (1s, at most KillGrace) to exit — the session
// said it was done, and what it left behind should cost no more than the
// drain wait it used to hold up. Then the survivors are stopped with
// SIGSTOP (so that none forks while the others die), looked for again,
// and sent SIGKILL; one that has not exited 200ms later (stuck in the
// kernel, say on a disk) runs no more code of its own, and is reaped in
// the background once it exits. On Linux the group's pid cannot be
// reused in between: the main process is only reaped after the rest of
// its session was ended; and every other process is signalled through a
// pidfd opened before it was examined, so a pid reused meanwhile is never
// signalled (kernels before 5.3 have no pidfd: there the pid is used).
//
// On Linux, OS makes the runner a child subreaper, so that orphans of a
// session are reparented to the runner; the processes of a session it
// kills that are its children it reaps, each through its own pidfd: it
// never waits for "any child", so the exit statuses of the runner's other
// children stay theirs. KillMarked finds a dead runner's sessions'
// processes by their token.
//
// Output is read from a pipe by the package itself, which records the
// time of the last byte for idle detection and forwards every byte to
// Spec.Output. Stdout and stderr share the pipe, so they arrive in the
// order the session wrote them.
//
// What can go wrong:
//
//   - A process caught in the middle of an exec shows no environment
//     for a moment; it is looked at again for up to 200ms, and again
//     after the others were killed, but one that stays that long in an
//     exec is missed.
//   - A process that leaves the group and whose environment does not
//     carry the marker escapes: one started with a scrubbed environment
//     (env -i, or an exec with its own environment), one that overwrote
//     its environment block, and one whose /proc/PID/environ the runner
//     may not read (another user's: setuid programs; or, for a runner
//     without CAP_SYS_PTRACE, one that made itself non-dumpable, as
//     ssh-agent does). A per-session cgroup would catch them; it is not
//     used yet. If such a process keeps the output pipe open, Wait stops
//     reading the drain timeout after the session ended and returns
//     without the rest of its output. On systems other than Linux, any
//     process that leaves the group escapes.
//   - A marked process that left the group, was reparented to the runner
//     and exited by itself before its session ended is a zombie whose
//     environment can no longer be read: it is not recognised, and stays
//     a zombie until the runner exits. So does any other orphan
//     reparented to the runner (from a process the runner started other
//     than a session) that exits.
//   - If the runner itself is killed with SIGKILL it cannot stop its
//     sessions. On Linux the main process of each session gets SIGKILL
//     from the kernel (Pdeathsig) when the runner dies; its other
//     processes are not reached and must be cleaned up by the next runner
//     (KillOrphans for what is left in the group, KillMarked for every
//     process carrying the session's marker).
//     Pdeathsig is tied to the OS thread that started the process, which
//     the Go runtime keeps alive for the life of an ordinary program.
//   - Spec.Env is the complete environment, plus the marker: nothing is
//     inherited from the runner, and a nil Env means one with only the
//     marker (sh then uses its built-in PATH).
//   - A session that traps SIGTERM and exits within KillGrace reports its
//     own exit code; Result.TimedOut, Idle or Interrupted still say why it
//     was stopped.
package proc
