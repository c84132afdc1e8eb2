// Package sandbox runs a session so that it cannot open its own gate:
// it cannot write flow's state under the repository's .agents directory
// (the run record, decisions, the event log, the history), only the
// paths it is given back, such as its own session directory and its
// worktree, and the rest of the repository as before.
//
// # How
//
// Go cannot run code between fork and exec, so the launcher is flow
// itself, executed again: a Launcher starts its executable (Self,
// /proc/self/exe by default) with the hidden first argument Arg, the
// Spec encoded as the next argument, then the program and its
// arguments. The program's environment is the launcher's, unchanged;
// the spec is in the launcher's arguments only, which the exec replaces.
// The launcher starts in a new user and mount namespace (and PID
// namespace if the Spec asks), which the Go runtime creates from the
// parent side (SysProcAttr.Cloneflags): a caller that is not root is
// mapped to its own uid and gid, root to itself with every other id it
// has. Main, called first thing in main, sees Arg and becomes the
// launcher, which
//
//   - makes every mount private, so nothing propagates back;
//   - binds each directory above the read-only paths (the repository
//     and its parents, but /) onto itself, so that none of them can be
//     renamed or removed: a mount point cannot be, and a session that
//     could rename the repository could put a directory of its own
//     making where the runner will look for the record;
//   - binds .agents (and Spec.ReadOnly) onto itself and makes it
//     read-only with everything mounted beneath it (mount_setattr,
//     Linux 5.12), then binds each Spec.Writable path beneath it onto
//     itself read-write: shallowest first, so a path beneath another
//     keeps its own access;
//   - with a PID namespace, mounts a /proc of that namespace;
//   - enters Spec.Dir, after the mounts: a working directory entered
//     before would still be on the writable mount below;
//   - drops every capability (ambient, bounding set, permitted,
//     effective, inheritable) and sets no_new_privs, so that neither a
//     setuid program nor a file capability gives any back;
//   - executes the program, which takes its place (same pid, its exit
//     status and signals are the caller's to see); or, with a PID
//     namespace, starts it as its child and stays as process 1.
//
// The session cannot undo the mounts: it has no capability in the
// launcher's user namespace, which owns the mount namespace, and a user
// namespace it creates copies the mounts locked, read-only flag
// included, and refuses to unmount them or to bind a directory without
// what is mounted on it. Nor can it reach the mounts of the runner
// through /proc/PID/root, /cwd or /fd of a process outside: those need
// ptrace access, which a process in a child user namespace, or without
// the capabilities of its target, does not have.
//
// With Spec.PIDNamespace, the launcher is process 1 of the session's
// PID namespace. When it exits — because the session's main process
// exited, or it was killed, or the runner died (Pdeathsig) — the kernel
// kills every process of the session, whatever it did to escape its
// process group. The session's /proc shows only its own processes, and
// it cannot signal the runner or any process outside.
//
// # Use
//
// main calls Main before anything else:
//
//	func main() {
//		sandbox.Main() // never returns in a launcher
//		os.Exit(run())
//	}
//
// A test binary that starts sandboxed sessions with the default Self
// (itself) does the same in TestMain; a test binary that does not must
// not be given as Self, or Arg would make it run its tests.
//
// The caller probes once, applies the mode, and keeps the answer:
//
//	l := sandbox.Launcher{}
//	d, err := mode.Decide(func() error { return l.Probe(true) })
//	// err: mode required and no sandbox here; refuse to run.
//	// !d.Use && d.Reason != nil: mode on, no sandbox; warn d.Reason.
//
// A session starter that uses os.StartProcess turns each start into the
// launcher's with Wrap, keeping its own attributes:
//
//	path, argv, sys := sh, []string{sh, "-c", command}, &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
//	if d.Use {
//		spec := sandbox.Spec{Repo: repo, Writable: []string{sessionDir}, Dir: workDir, PIDNamespace: true}
//		path, argv, sys, err = l.Wrap(spec, path, argv, sys)
//	}
//	p, err := os.StartProcess(path, argv, &os.ProcAttr{Dir: workDir, Env: env, Files: files, Sys: sys})
//
// Command does the same for an exec.Cmd. The session's directory (and
// every Writable path) must exist before the start; every path must be
// absolute, clean and free of symbolic links (filepath.EvalSymlinks).
//
// # What can go wrong
//
//   - The kernel may not allow it: user namespaces off
//     (user.max_user_namespaces=0) or closed to unprivileged users (a
//     distribution's sysctl, AppArmor's restriction on Ubuntu), no
//     mount_setattr (Linux before 5.12), or, for a PID namespace, a
//     /proc that may not be mounted again (a container that masks parts
//     of its /proc). Probe says which; in mode On the sessions then run
//     unsandboxed, in mode Required flow refuses to run. A PID namespace
//     can fail where the rest works: probe with false then.
//   - A failure of the launcher after the start shows as the session's
//     exit status: ExitSetup (125) when the sandbox could not be set up
//     (a Writable path missing, say), ExitNotFound (127) or
//     ExitCannotRun (126) when the program could not be executed, each
//     with "flow: sandbox: ..." on the session's standard error.
//   - The sandbox protects paths, not files: .agents reached through
//     another mount of the same file system (a bind mount elsewhere, a
//     second mount of the device) is writable there, and so is a hard
//     link to one of its files made outside it before the session
//     started. Descriptors the session is given keep their access.
//   - Only .agents and the read-only paths are protected. The session
//     can read them, and write anything else its user can: other
//     repositories, the home directory, the network. Without a PID
//     namespace it can signal every process of its user, the runner's
//     included, and what it leaves running outlives it unless the
//     caller ends it.
//   - Sessions lose every capability: one run as root is still uid 0
//     for the owners of files, but cannot mount, change owners it does
//     not have, bind ports below 1024 or run setuid programs (sudo).
//   - With a PID namespace the launcher stays, as the session's parent:
//     a session killed by a signal is reported as an exit with status
//     128 plus the signal's number, not as killed; a signal sent to the
//     launcher's pid alone, rather than to the process group, is
//     dropped (but SIGKILL and SIGSTOP). The launcher makes itself
//     undumpable, so that the session cannot trace it; its /proc files
//     then belong to root, and a runner that is not root cannot read
//     its environment (the session's processes are as usual).
//   - Pdeathsig fires when the thread that started the launcher exits,
//     which for a Go program is when the program does.
//   - Every session costs one more execution of flow's executable: the
//     Go runtime's start and the package initialisers of the whole
//     binary, a few milliseconds, and about as much again with a PID
//     namespace (the launcher's own start of the program, its exit).
package sandbox
