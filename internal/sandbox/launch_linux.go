package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Main makes the program the launcher when its first argument is Arg,
// and otherwise returns at once. A program that starts sessions through
// a Launcher calls it first thing in main. The launcher sets up the
// sandbox its arguments describe and executes the session in it (or,
// with a PID namespace, runs it as its child); it never returns.
func Main() {
	if len(os.Args) < 2 || os.Args[1] != Arg {
		return
	}
	os.Exit(launch(os.Args[2:], os.Stderr))
}

// launch is the launcher: args are the encoded Spec, then the program's
// path and its arguments, or nothing to check the sandbox and exit. It
// returns the exit status to exit with, unless it executes the program.
func launch(args []string, stderr io.Writer) int {
	// Capabilities and no_new_privs belong to a thread: the thread that
	// drops them must be the one that executes or starts the session.
	runtime.LockOSThread()
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "flow: sandbox: %v\n", err)
		return code
	}
	if len(args) == 0 {
		return fail(ExitSetup, errors.New("no spec"))
	}
	spec, err := decodeSpec(args[0])
	if err != nil {
		return fail(ExitSetup, err)
	}
	cmd := args[1:]
	if len(cmd) == 1 {
		return fail(ExitSetup, errors.New("no arguments for the program"))
	}
	var files []*os.File
	var caught <-chan struct{}
	if spec.PIDNamespace && len(cmd) > 0 {
		// Found before anything here opens a file of its own.
		if files, err = inheritedFiles(); err != nil {
			return fail(ExitSetup, err)
		}
		// Asking for signals takes a few exchanges with a thread of
		// the runtime; they overlap with the mounts.
		caught = catchSignals()
	}
	if err := confine(spec); err != nil {
		return fail(ExitSetup, err)
	}
	if err := os.Chdir(spec.workDir()); err != nil {
		return fail(ExitSetup, fmt.Errorf("enter working directory: %w", err))
	}
	if spec.PIDNamespace {
		// Not even a thread of the launcher that has dropped nothing can
		// be traced by the session, which is in its user namespace.
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			return fail(ExitSetup, fmt.Errorf("make the launcher undumpable: %w", err))
		}
	}
	if err := dropPrivileges(); err != nil {
		return fail(ExitSetup, err)
	}
	if len(cmd) == 0 {
		if err := check(spec); err != nil {
			return fail(ExitSetup, err)
		}
		return 0
	}
	if !spec.PIDNamespace {
		err := unix.Exec(cmd[0], cmd[1:], os.Environ())
		return fail(execStatus(err), fmt.Errorf("exec %s: %w", cmd[0], err))
	}
	<-caught
	return runInit(cmd, files, stderr)
}

// confine makes the mounts of spec in the launcher's mount namespace.
// Mounts are made private first, so that none propagates back to the
// namespace the launcher came from.
func confine(spec Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	for _, m := range spec.mounts() {
		fi, err := os.Lstat(m.path)
		if err != nil {
			return fmt.Errorf("bind %s: %w", m.path, err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("bind %s: a symbolic link (sandbox paths must be real paths)", m.path)
		}
		if !fi.IsDir() && !fi.Mode().IsRegular() {
			return fmt.Errorf("bind %s: not a directory or a regular file", m.path)
		}
		if err := unix.Mount(m.path, m.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", m.path, err)
		}
		switch m.kind {
		case readOnly:
			// Recursively: what is mounted beneath is read-only too.
			attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
			if err := unix.MountSetattr(unix.AT_FDCWD, m.path, unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW, attr); err != nil {
				return fmt.Errorf("make %s read-only: %w", m.path, err)
			}
		case writable:
			// Only the new mount, a copy of the read-only one above
			// it: mounts beneath keep their own access.
			attr := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
			if err := unix.MountSetattr(unix.AT_FDCWD, m.path, unix.AT_SYMLINK_NOFOLLOW, attr); err != nil {
				return fmt.Errorf("make %s writable: %w", m.path, err)
			}
		}
	}
	if spec.PIDNamespace {
		// A /proc of the session's PID namespace: the one inherited
		// shows the processes of the namespace above by their numbers
		// there, which mean nothing or another process in the
		// session's (ps, pgrep, kill $(pidof ...)).
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount /proc of the PID namespace: %w", err)
		}
	}
	return nil
}

// dropPrivileges leaves the calling thread no capability, now or after
// an exec, and sets no_new_privs, so that neither setuid programs nor
// file capabilities give any back. Without CAP_SYS_ADMIN in the
// launcher's user namespace the session cannot unmount or remount what
// confine mounted; a user namespace it creates for itself copies the
// mounts locked, read-only flag included.
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the last capability the kernel knows
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}

// check verifies, after dropPrivileges, what Probe promises: the first
// read-only path refuses a new file, every writable directory takes one,
// and the read-only mount cannot be made writable again.
func check(spec Spec) error {
	ro := filepath.Join(spec.Repo, AgentsDir)
	probe := filepath.Join(ro, ".flow-sandbox-probe")
	f, err := os.OpenFile(probe, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		f.Close()
		return fmt.Errorf("check: created %s in the read-only %s", probe, ro)
	}
	if !errors.Is(err, unix.EROFS) {
		return fmt.Errorf("check: want a read-only file system: %w", err)
	}
	for _, w := range spec.Writable {
		if fi, err := os.Stat(w); err != nil || !fi.IsDir() {
			continue
		}
		f, err := os.CreateTemp(w, ".flow-sandbox-probe-")
		if err != nil {
			return fmt.Errorf("check: writable path: %w", err)
		}
		f.Close()
		if err := os.Remove(f.Name()); err != nil {
			return fmt.Errorf("check: writable path: %w", err)
		}
	}
	attr := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, ro, 0, attr); err == nil {
		return fmt.Errorf("check: made %s writable again without privileges", ro)
	}
	return nil
}

// execStatus is the exit status for a failure to execute a program.
func execStatus(err error) int {
	if errors.Is(err, unix.ENOENT) {
		return ExitNotFound
	}
	return ExitCannotRun
}

// inheritedFiles returns the descriptors the launcher was started with,
// each at its number, for the session it starts as a child: those
// without close-on-exec, which the Go runtime sets on every descriptor
// it opens.
func inheritedFiles() ([]*os.File, error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("list inherited descriptors: %w", err)
	}
	var files []*os.File
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue // the directory's own descriptor, or the runtime's
		}
		for len(files) <= fd {
			files = append(files, nil)
		}
		files[fd] = os.NewFile(uintptr(fd), "fd"+e.Name())
	}
	return files, nil
}

// catchSignals has the launcher catch, and drop, every signal that
// would otherwise end it, and closes the channel it returns once it
// does. As process 1 of the session's PID namespace, the launcher gets
// from the namespace above only SIGKILL, SIGSTOP and the signals it has
// handlers for; but the Go runtime has handlers for all, and exits on
// those the program did not ask for. The launcher passes none on: the
// session is in its process group, so a signal sent to the group
// reaches the session directly, and passing it on would deliver it
// twice. Caught rather than ignored signals are reset by exec, so the
// session starts with the default dispositions.
func catchSignals() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		sigs := make(chan os.Signal, 16)
		signal.Notify(sigs, unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGUSR1, unix.SIGUSR2,
			unix.SIGALRM, unix.SIGVTALRM, unix.SIGPROF, unix.SIGPIPE, unix.SIGXCPU, unix.SIGXFSZ,
			unix.SIGIO, unix.SIGPWR, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU)
		close(done)
		for range sigs {
		}
	}()
	return done
}

// runInit runs the session as the child of the launcher, which is
// process 1 of the session's PID namespace: it reaps every process that
// is orphaned in the namespace, and exits when the session's process
// does, with its exit status or 128 plus the number of the signal that
// killed it (process 1 of a namespace cannot be killed by a signal it
// sends itself). The kernel then kills whatever is left in the
// namespace.
func runInit(cmd []string, files []*os.File, stderr io.Writer) int {
	p, err := os.StartProcess(cmd[0], cmd[1:], &os.ProcAttr{Env: os.Environ(), Files: files})
	if err != nil {
		fmt.Fprintf(stderr, "flow: sandbox: %v\n", err)
		return execStatus(err)
	}
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "flow: sandbox: wait for %s: %v\n", cmd[0], err)
			return ExitSetup
		}
		if pid != p.Pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}
