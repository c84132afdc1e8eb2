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
// Linux, if /proc/PID/environ carries the token, or if it descends from a
// process that belongs — never because it happens to have been
// reparented to the runner, and never by a token of another session, so
// that ending one session does not touch another.
//
// On Linux the session's processes are found as follows. OS makes the
// runner a child subreaper, and the main process of a session is left
// unreaped (a zombie) until what is left of the session has been ended.
// Every living descendant of a session therefore lies in the subtree of
// one of the runner's own children: the main process while it runs, and
// the session's orphans, which the kernel reparented to the runner when
// their parents exited.
//
//   - The runner lists its children from /proc/PID/task/TID/children
//     (CONFIG_PROC_CHILDREN). The kernel hands an orphan to the first
//     live thread of its subreaper, which in a Go program is always the
//     main thread, so only the main thread's list is read; on kernels
//     before 3.19, which did not follow that rule, every thread's list
//     is read.
//   - The main processes of the starter's sessions are left out: the
//     starter keeps a set of them from their start until they are
//     reaped, and starts and reaps them under the lock that the listing
//     holds. Each other child is examined: it belongs to the session if
//     it is in the session's group or if its environment carries the
//     token. A child of the runner that is in neither — a process the
//     runner started itself, an orphan of another session, or an orphan
//     of this session that both left the group and scrubbed its
//     environment — is left alone.
//   - When no child belongs, which is the common case of a session that
//     left nothing behind, the search is over: it costs a read of one
//     small file and no look at any other process. The group is still
//     sent SIGKILL, in case a process rejoined it from outside the
//     session's tree.
//   - Otherwise the subtrees of the children that belong are walked
//     through the lists of children of every thread of each process:
//     every descendant of a process of the session is the session's,
//     whatever its group or environment, so that a process started
//     with a scrubbed environment (env -i) under a marked daemon is
//     found. A process listed as a child is held through a pidfd and
//     kept only if /proc still names its parent after that. Since a
//     process whose parent exits during the walk moves to the runner's
//     list, that list is read again after every walk until it shows no
//     new process.
//   - On a kernel without these lists, or if the runner could not be
//     made a subreaper, every process in /proc is examined by its group
//     and its environment instead; descendants are then recognised only
//     by the marker. KillMarked, which looks for the processes of a dead
//     runner's sessions (not the calling runner's descendants), always
//     looks through all of /proc.
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
// The processes of a session that the runner kills and that are its
// children it reaps, each through its own pidfd: it never waits for "any
// child", so the exit statuses of the runner's other children stay
// theirs. KillMarked finds a dead runner's sessions' processes by their
// token.
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
//     carry the marker escapes once no process of the session is its
//     ancestor any more (its parent exited, so that it was reparented to
//     the runner; or, without the runner's process tree, at once): one
//     started with a scrubbed environment (env -i, or an exec with its
//     own environment), one that overwrote its environment block, and
//     one whose /proc/PID/environ the runner may not read (another
//     user's: setuid programs; or, for a runner without CAP_SYS_PTRACE,
//     one that made itself non-dumpable, as ssh-agent does). A
//     per-session cgroup would catch them; it is not used yet. If such a
//     process keeps the output pipe open, Wait stops reading the drain
//     timeout after the session ended and returns without the rest of
//     its output. On systems other than Linux, any process that leaves
//     the group escapes.
//   - The kernel builds a list of children one entry at a time; a child
//     that leaves the list while it is read (reaped by its parent) can
//     make it skip the next one. Such a process is missed by the SIGTERM
//     of a stop or of a session's end, and found again once the
//     session's processes are stopped with SIGSTOP, which keeps them
//     from reaping: it then gets SIGKILL. The runner's own list is not
//     affected by what this package reaps, which it reaps under the lock
//     the listing holds, but a child that other code in the runner reaps
//     while the list is read can make a session's orphan be missed.
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
