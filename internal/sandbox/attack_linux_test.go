package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// attackEnv makes the test binary try, from inside a sandbox, to undo
// its mounts with system calls. Its value is the mode: "direct" tries
// as the session is; "nested" starts the binary again in a new user
// and mount namespace of its own, with CAP_SYS_ADMIN there, where it
// tries as "nested-child".
const attackEnv = "FLOW_SANDBOX_TEST_ATTACK"

// attack is the test binary as an attacker, in the repository
// FLOW_TEST_REPO. Every attempt to change the mounts must fail; it
// exits 0 if they all did, 1 if one did not, and 2 if it could not try.
func attack(mode string) int {
	repo := os.Getenv("FLOW_TEST_REPO")
	switch mode {
	case "direct":
		return attempts(repo)
	case "nested":
		self, err := os.Executable()
		if err != nil {
			fmt.Println(err)
			return 2
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), attackEnv+"=nested-child")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER | unix.CLONE_NEWNS,
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
		}
		if err := cmd.Run(); err != nil {
			fmt.Println("nested:", err)
			if cmd.ProcessState != nil {
				return cmd.ProcessState.ExitCode()
			}
			return 2
		}
		return 0
	case "nested-child":
		// The control: with CAP_SYS_ADMIN in its own namespaces, the
		// attacker can mount what it owns.
		m := filepath.Join(repo, "m-control")
		if err := os.Mkdir(m, 0o777); err != nil {
			fmt.Println(err)
			return 2
		}
		if err := unix.Mount("none", m, "tmpfs", 0, ""); err != nil {
			fmt.Println("control: mount a tmpfs:", err)
			return 2
		}
		return attempts(repo)
	}
	fmt.Println("unknown attack", mode)
	return 2
}

// attempts tries to make .agents writable, or reach it through a mount
// without the sandbox's, each way it can think of.
func attempts(repo string) int {
	agents := filepath.Join(repo, AgentsDir)
	mkdir := func(name string) string {
		d := filepath.Join(repo, name)
		if err := os.Mkdir(d, 0o777); err != nil {
			fmt.Println(err)
		}
		return d
	}
	bareBind, bareTree := mkdir("m-bind"), mkdir("m-tree")
	tries := []struct {
		name string
		do   func() error
	}{
		{"clear read-only", func() error {
			return unix.MountSetattr(unix.AT_FDCWD, agents, 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY})
		}},
		{"clear read-only recursively from the repository", func() error {
			return unix.MountSetattr(unix.AT_FDCWD, repo, unix.AT_RECURSIVE, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY})
		}},
		{"remount read-write", func() error {
			return unix.Mount("", agents, "", unix.MS_REMOUNT|unix.MS_BIND, "")
		}},
		{"unmount", func() error { return unix.Unmount(agents, unix.MNT_DETACH) }},
		{"unmount the repository", func() error { return unix.Unmount(repo, unix.MNT_DETACH) }},
		{"bind the repository without what is mounted on it", func() error {
			return unix.Mount(repo, bareBind, "", unix.MS_BIND, "")
		}},
		{"clone the repository without what is mounted on it", func() error {
			fd, err := unix.OpenTree(unix.AT_FDCWD, repo, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.MoveMount(fd, "", unix.AT_FDCWD, bareTree, unix.MOVE_MOUNT_F_EMPTY_PATH)
		}},
		{"move .agents away", func() error { return unix.Mount(agents, bareTree, "", unix.MS_MOVE, "") }},
	}
	if os.Getpid() != 1 && os.Getenv("FLOW_TEST_PIDNS") == "1" {
		// Process 1 is the launcher, some of whose threads may still
		// have the capabilities to undo the mounts: tracing any of
		// them would let the session run its own code with them.
		tasks, err := os.ReadDir("/proc/1/task")
		if err != nil || len(tasks) == 0 {
			fmt.Println("list the launcher's threads:", err)
			return 2
		}
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			tries = append(tries, struct {
				name string
				do   func() error
			}{"trace the launcher's thread " + task.Name(), func() error {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if err := unix.PtraceSeize(tid); err != nil {
					return err
				}
				return unix.PtraceDetach(tid)
			}})
		}
	}
	status := 0
	for _, try := range tries {
		if err := try.do(); err == nil {
			fmt.Printf("%s: succeeded\n", try.name)
			status = 1
		} else {
			fmt.Printf("%s: %v\n", try.name, err)
		}
	}
	// Were any of them to have succeeded, this shows what it gave.
	for _, p := range []string{agents, bareBind, bareTree} {
		ev := filepath.Join(p, "runs", "R", "events.jsonl")
		if p != agents {
			ev = filepath.Join(p, AgentsDir, "runs", "R", "events.jsonl")
		}
		if f, err := os.OpenFile(ev, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			_, err = f.WriteString("{}\n")
			f.Close()
			fmt.Printf("append to %s: %v\n", ev, err)
			if err == nil {
				status = 1
			}
		}
	}
	return status
}

// TestSandboxMountAttacks runs the attacker in the sandbox, as the
// session and in namespaces of its own.
func TestSandboxMountAttacks(t *testing.T) {
	needSandbox(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range pidModes {
		for _, how := range []string{"direct", "nested"} {
			t.Run(mode.name+"/"+how, func(t *testing.T) {
				f := newFixture(t)
				before := snapshot(t, f.agents, f.session, f.worktree)
				cmd, err := (Launcher{}).Command(f.spec(mode.pidns), self)
				if err != nil {
					t.Fatal(err)
				}
				cmd.Env = sessionEnv(f, attackEnv+"="+how)
				if mode.pidns {
					cmd.Env = append(cmd.Env, "FLOW_TEST_PIDNS=1")
				}
				out, err := cmd.CombinedOutput()
				t.Logf("%s", out)
				if err != nil {
					t.Errorf("attacker: %v", err)
				}
				if strings.Contains(string(out), "succeeded") {
					t.Errorf("an attack succeeded")
				}
				if diff := cmp.Diff(before, snapshot(t, f.agents, f.session, f.worktree)); diff != "" {
					t.Errorf("the attacker changed .agents (-before +after):\n%s", diff)
				}
			})
		}
	}
}
