package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// OS returns an Executor that runs commands as processes of the
// operating system, each in a process group of its own that is killed
// when the command's context ends.
func OS() Executor { return osExec{} }

type osExec struct{}

func (osExec) Run(ctx context.Context, c Command) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", c.Line)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	cmd.Stdin = bytes.NewReader(c.Stdin)
	out := &tail{}
	cmd.Stdout, cmd.Stderr = out, out
	ownGroup(cmd)
	if c.Wrap != nil {
		if cmd.Err != nil {
			return cmd.Err
		}
		path, argv, sys, err := c.Wrap(cmd.Path, cmd.Args, cmd.SysProcAttr)
		if err != nil {
			return fmt.Errorf("start the command: %w", err)
		}
		cmd.Path, cmd.Args, cmd.SysProcAttr = path, argv, sys
	}
	// What the command started may hold its output open: stop reading
	// a moment after it ended or was killed.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ee *exec.ExitError
	msg := err.Error()
	if errors.As(err, &ee) {
		msg = fmt.Sprintf("exited %d", ee.ExitCode())
		if ee.ExitCode() < 0 {
			msg = "ended by " + ee.String()
		}
	}
	if o := strings.TrimSpace(out.String()); o != "" {
		msg += ": " + o
	}
	return errors.New(msg)
}

// tail keeps the last maxExcerpt bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > maxExcerpt {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-maxExcerpt:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.ToValidUTF8(string(t.buf), "")
}
