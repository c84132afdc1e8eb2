package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultSelf is the executable a Launcher starts when its Self is
// empty: the running program, whatever its path, even one replaced or
// removed since it started.
const DefaultSelf = "/proc/self/exe"

// Launcher starts commands inside a sandbox, through the launcher that
// Main runs in the executable at Self.
type Launcher struct {
	// Self is the executable whose main function calls Main first;
	// empty means DefaultSelf.
	Self string
}

func (l Launcher) self() string {
	if l.Self == "" {
		return DefaultSelf
	}
	return l.Self
}

// Command returns a command that runs name with args inside the sandbox
// that spec describes, as exec.Command would run it outside: name is
// looked for in the caller's PATH unless it holds a slash. The command
// starts the launcher, which sets up the sandbox, enters spec's working
// directory and executes name; its Path and first two arguments are the
// launcher's, and its SysProcAttr asks for the namespaces. The caller
// sets Env, Stdin, Stdout, Stderr and ExtraFiles as for any command, and
// may add to SysProcAttr (Setpgid, say) but must not replace it. Its Dir
// is not the session's working directory, which spec gives.
func (l Launcher) Command(spec Spec, name string, args ...string) (*exec.Cmd, error) {
	path := name
	if !strings.Contains(name, "/") {
		lp, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		path = lp
	}
	if !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("sandbox: resolve %s: %w", path, err)
		}
		path = abs
	}
	self, argv, sys, err := l.Wrap(spec, path, append([]string{name}, args...), nil)
	if err != nil {
		return nil, err
	}
	return &exec.Cmd{Path: self, Args: argv, SysProcAttr: sys}, nil
}

// Wrap turns the start of a process into the start of the launcher: a
// caller that would start the program at path with arguments argv
// (argv[0] included) and attributes sys starts self with arguments
// launchArgv and attributes launchSys instead, with the same
// environment and files; the launcher then executes path with argv
// inside the sandbox. path must be absolute. sys is not changed:
// launchSys is a copy of it, or new when sys is nil, with the clone
// flags, the user and group mappings and the ambient capabilities that
// the launcher needs, and Pdeathsig SIGKILL if sys set none. Wrap fails
// if sys already asks for namespaces, credentials or a chroot.
func (l Launcher) Wrap(spec Spec, path string, argv []string, sys *syscall.SysProcAttr) (self string, launchArgv []string, launchSys *syscall.SysProcAttr, err error) {
	if !filepath.IsAbs(path) {
		return "", nil, nil, fmt.Errorf("sandbox: program %q is not an absolute path", path)
	}
	if len(argv) == 0 {
		argv = []string{path}
	}
	return l.wrap(spec, append([]string{path}, argv...), sys)
}

// wrap returns the launcher's start for cmd, the program's path and its
// arguments, or for an empty cmd a launcher that checks the sandbox and
// exits.
func (l Launcher) wrap(spec Spec, cmd []string, sys *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error) {
	if err := spec.Validate(); err != nil {
		return "", nil, nil, err
	}
	arg, err := spec.encode()
	if err != nil {
		return "", nil, nil, err
	}
	launchSys, err := sysProcAttr(spec, sys)
	if err != nil {
		return "", nil, nil, err
	}
	self := l.self()
	return self, append([]string{self, Arg, arg}, cmd...), launchSys, nil
}

// Probe reports whether the sandbox can be set up here, with nil, or
// why not; pidNamespace asks whether it can with a PID namespace. It
// starts the launcher once on a scratch repository in the temporary
// directory, with a writable path, and the launcher checks that the
// read-only path refuses writes, that the writable one takes them and
// that the mounts cannot be changed back. It costs a process start; a
// caller probes once and keeps the answer.
func (l Launcher) Probe(pidNamespace bool) error {
	dir, err := os.MkdirTemp("", "flow-sandbox-probe-")
	if err != nil {
		return fmt.Errorf("sandbox: probe: %w", err)
	}
	defer os.RemoveAll(dir)
	repo, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("sandbox: probe: %w", err)
	}
	writable := filepath.Join(repo, AgentsDir, "session")
	if err := os.MkdirAll(writable, 0o700); err != nil {
		return fmt.Errorf("sandbox: probe: %w", err)
	}
	spec := Spec{Repo: repo, Writable: []string{writable}, PIDNamespace: pidNamespace}
	self, argv, sys, err := l.wrap(spec, nil, nil)
	if err != nil {
		return fmt.Errorf("sandbox: probe: %w", err)
	}
	var stderr bytes.Buffer
	cmd := &exec.Cmd{Path: self, Args: argv, SysProcAttr: sys, Stderr: &stderr}
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("sandbox: probe: %w: %s", err, msg)
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("sandbox: probe: launcher %s: %w (does its main call sandbox.Main?)", self, err)
		}
		return fmt.Errorf("sandbox: probe: %w", err)
	}
	return nil
}
