package serve

import (
	"fmt"
	"os"
	"os/exec"
)

// ExecLauncher starts flow as a detached process: in a session of its
// own (on systems that have sessions), so that it outlives the server
// and a signal to the server's terminal does not reach it, with its
// standard input, output and error on the null device. It is reaped
// when it ends, never waited on by a request.
type ExecLauncher struct {
	// Path is the flow executable (os.Executable in the command).
	Path string
	// Dir is the process's working directory; "" is the server's.
	Dir string
	// Env is added to the server's environment (FLOW_PUBLIC_URL, so
	// that the runner's notifications link to this server).
	Env []string
}

// Launch starts Path with args and returns once it has started.
func (l ExecLauncher) Launch(args []string) error {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("start flow %s: %w", args[0], err)
	}
	defer null.Close()
	cmd := exec.Command(l.Path, args...)
	cmd.Dir = l.Dir
	if len(l.Env) > 0 {
		cmd.Env = append(os.Environ(), l.Env...)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start flow %s: %w", args[0], err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
