package gitwork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"

	"github.com/spf13/afero"
)

// Cmd is one git command: its arguments after "git" (and after the
// options every command gets), the directory it runs in, more
// environment variables (NAME=value) and its standard input.
type Cmd struct {
	Dir   string
	Args  []string
	Env   []string
	Stdin []byte
}

// Result is how a git command ended: its output (each stream at most
// the runner's limit, Truncated set when more was cut), its exit code,
// and Err when it could not be run or did not exit by itself.
type Result struct {
	Stdout, Stderr []byte
	Code           int
	Truncated      bool
	Err            error
}

// Runner runs a git command. Exec runs the git binary; a test may wrap
// a Runner to fail from a given command on, as if the process had been
// killed there.
type Runner func(ctx context.Context, c Cmd) Result

// DefaultOutputLimit bounds each stream of a command's output kept by
// Exec when it is given no limit.
const DefaultOutputLimit = 4 << 20

// Exec returns a Runner that runs the git binary found at path ("git"
// looks it up in PATH) with environ, from which any GIT_* variable is
// left out (a session's GIT_DIR must not redirect flow's commands),
// plus LC_ALL=C (messages are read) and GIT_TERMINAL_PROMPT=0. Each of
// stdout and stderr keeps at most limit bytes (DefaultOutputLimit when
// limit is 0).
func Exec(path string, environ []string, limit int) Runner {
	return ExecThrough(path, environ, limit, nil)
}

// Wrap turns the start of a git command (the binary's path, its
// arguments and process attributes) into the start of something that
// runs it, such as a sandbox's launcher; it is given the command, whose
// directory it may need.
type Wrap func(c Cmd, path string, argv []string, sys *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error)

// ExecThrough is Exec, each command started through wrap when wrap is
// not nil.
func ExecThrough(path string, environ []string, limit int, wrap Wrap) Runner {
	if path == "" {
		path = "git"
	}
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	base := make([]string, 0, len(environ)+2)
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "LC_ALL=") {
			continue
		}
		base = append(base, kv)
	}
	base = append(base, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
	return func(ctx context.Context, c Cmd) Result {
		cmd := exec.CommandContext(ctx, path, c.Args...)
		cmd.Dir = c.Dir
		cmd.Env = append(append([]string{}, base...), c.Env...)
		if c.Stdin != nil {
			cmd.Stdin = bytes.NewReader(c.Stdin)
		}
		out, errOut := &capped{max: limit}, &capped{max: limit}
		cmd.Stdout, cmd.Stderr = out, errOut
		if wrap != nil {
			if cmd.Err != nil {
				return Result{Code: -1, Err: cmd.Err}
			}
			p, argv, sys, err := wrap(c, cmd.Path, cmd.Args, cmd.SysProcAttr)
			if err != nil {
				return Result{Code: -1, Err: fmt.Errorf("start git: %w", err)}
			}
			cmd.Path, cmd.Args, cmd.SysProcAttr = p, argv, sys
		}
		err := cmd.Run()
		r := Result{Stdout: out.buf.Bytes(), Stderr: errOut.buf.Bytes(), Truncated: out.cut || errOut.cut}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.Exited():
			r.Code = ee.ExitCode()
		default:
			r.Code, r.Err = -1, err
		}
		return r
	}
}

// capped keeps the first max bytes written to it.
type capped struct {
	buf bytes.Buffer
	max int
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.cut = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

// baseArgs are the options of every command: no hooks, no file-system
// monitor, no signing, no automatic gc, no pager, paths as they are.
var baseArgs = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "commit.gpgSign=false",
	"-c", "tag.gpgSign=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "core.quotePath=false",
	"-c", "advice.detachedHead=false",
}

// Git performs flow's git operations through Run.
type Git struct {
	// Run runs each command.
	Run Runner
	// FS reads and writes the files Git handles itself (.gitignore,
	// copied files, the marks of a worktree on disk); nil means the
	// operating system's.
	FS afero.Fs
	// Name and Email are the identity of the commits flow makes;
	// DefaultName and DefaultEmail when empty.
	Name, Email string
}

// The identity of flow's commits when Git names none.
const (
	DefaultName  = "flow"
	DefaultEmail = "flow@localhost"
)

// New returns a Git that runs the git binary in PATH with environ.
func New(environ []string) *Git {
	return &Git{Run: Exec("", environ, 0), FS: afero.NewOsFs()}
}

func (g *Git) fs() afero.Fs {
	if g.FS == nil {
		return afero.NewOsFs()
	}
	return g.FS
}

// identity returns the options that make a commit flow's.
func (g *Git) identity() []string {
	name, email := g.Name, g.Email
	if name == "" {
		name = DefaultName
	}
	if email == "" {
		email = DefaultEmail
	}
	return []string{"-c", "user.name=" + name, "-c", "user.email=" + email}
}

// Error is a git command that failed: its arguments, exit code and
// what it said on stderr (its last lines).
type Error struct {
	Args   []string
	Code   int
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	cmd := "git " + strings.Join(e.Args, " ")
	if len(cmd) > 200 {
		cmd = cmd[:200] + "…"
	}
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", cmd, e.Err)
	}
	if e.Stderr == "" {
		return fmt.Sprintf("%s: exit %d", cmd, e.Code)
	}
	return fmt.Sprintf("%s: exit %d: %s", cmd, e.Code, e.Stderr)
}

func (e *Error) Unwrap() error { return e.Err }

// exec runs git with args in dir, and returns the result whatever its
// exit code.
func (g *Git) exec(ctx context.Context, dir string, env []string, args ...string) Result {
	full := append(append(make([]string, 0, len(baseArgs)+len(args)), baseArgs...), args...)
	return g.Run(ctx, Cmd{Dir: dir, Args: full, Env: env})
}

// git runs git with args in dir and returns its stdout, trimmed; any
// exit code but 0 is an *Error.
func (g *Git) git(ctx context.Context, dir string, args ...string) (string, error) {
	r := g.exec(ctx, dir, nil, args...)
	if err := failed(r, args, 0); err != nil {
		return "", err
	}
	return strings.TrimSpace(string(r.Stdout)), nil
}

// failed returns the *Error of a result whose exit code is not one of
// ok, or nil.
func failed(r Result, args []string, ok ...int) error {
	if r.Err == nil {
		for _, c := range ok {
			if r.Code == c {
				return nil
			}
		}
	}
	return &Error{Args: args, Code: r.Code, Stderr: tail(string(r.Stderr), 20), Err: r.Err}
}

// tail keeps the last n lines of s, trimmed.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// CheckBranch reports whether name is a branch name git accepts
// (git check-ref-format refs/heads/NAME).
func (g *Git) CheckBranch(ctx context.Context, dir, name string) error {
	if name == "" || strings.HasPrefix(name, "-") {
		return fmt.Errorf("branch name %q: not a valid branch name", name)
	}
	r := g.exec(ctx, dir, nil, "check-ref-format", "refs/heads/"+name)
	if r.Err != nil {
		return fmt.Errorf("check branch name %q: %w", name, r.Err)
	}
	if r.Code != 0 {
		return fmt.Errorf("branch name %q: not a valid branch name (git check-ref-format)", name)
	}
	return nil
}

// Resolve returns the commit rev names, in dir's repository.
func (g *Git) Resolve(ctx context.Context, dir, rev string) (string, error) {
	r := g.exec(ctx, dir, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if r.Err != nil {
		return "", fmt.Errorf("resolve %s: %w", rev, r.Err)
	}
	if r.Code != 0 {
		return "", fmt.Errorf("resolve %s: not a commit of the repository in %s", rev, dir)
	}
	return strings.TrimSpace(string(r.Stdout)), nil
}

// branchCommit returns the commit of a branch, or "" when there is no
// such branch.
func (g *Git) branchCommit(ctx context.Context, dir, branch string) (string, error) {
	r := g.exec(ctx, dir, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if r.Err != nil {
		return "", fmt.Errorf("look up branch %s: %w", branch, r.Err)
	}
	if r.Code != 0 {
		return "", nil
	}
	return strings.TrimSpace(string(r.Stdout)), nil
}

// isAncestor reports whether commit a is an ancestor of b (or b).
func (g *Git) isAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	args := []string{"merge-base", "--is-ancestor", a, b}
	r := g.exec(ctx, dir, nil, args...)
	if err := failed(r, args, 0, 1); err != nil {
		return false, err
	}
	return r.Code == 0, nil
}

// TopLevel returns the top directory of the working tree that holds
// dir, and the main working tree of its repository: the same directory
// unless dir is in a linked worktree (whose .git file points into
// <main>/.git/worktrees/).
func (g *Git) TopLevel(ctx context.Context, dir string) (top, main string, err error) {
	out, err := g.git(ctx, dir, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
	if err != nil {
		return "", "", fmt.Errorf("find the repository of %s: %w", dir, err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 2 {
		return "", "", fmt.Errorf("find the repository of %s: unexpected output of git rev-parse", dir)
	}
	top, common := lines[0], lines[1]
	main = top
	if strings.HasSuffix(common, "/.git") {
		main = strings.TrimSuffix(common, "/.git")
	}
	return top, main, nil
}
