package sandbox

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestParseIDMap(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []syscall.SysProcIDMap
		err  bool
	}{
		{"initial namespace", "         0          0 4294967295\n", []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 4294967295}}, false},
		{"a container's", "0 100000 65536\n65536 1000 1\n", []syscall.SysProcIDMap{
			{ContainerID: 0, HostID: 0, Size: 65536}, {ContainerID: 65536, HostID: 65536, Size: 1},
		}, false},
		{"empty", "", nil, true},
		{"two fields", "0 0\n", nil, true},
		{"not a number", "0 0 x\n", nil, true},
		{"no ids", "0 0 0\n", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseIDMap([]byte(c.in))
			if (err != nil) != c.err {
				t.Fatalf("parseIDMap(%q) error %v", c.in, err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("parseIDMap(%q) (-want +got):\n%s", c.in, diff)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	spec := Spec{Repo: "/r", PIDNamespace: true}
	l := Launcher{Self: "/usr/libexec/flow"}

	t.Run("arguments", func(t *testing.T) {
		self, argv, _, err := l.Wrap(spec, "/bin/sh", []string{"sh", "-c", "echo hi"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		arg, _ := spec.encode()
		want := []string{"/usr/libexec/flow", Arg, arg, "/bin/sh", "sh", "-c", "echo hi"}
		if self != "/usr/libexec/flow" || !cmp.Equal(argv, want) {
			t.Errorf("Wrap = %q, %q; want %q", self, argv, want)
		}
		if _, argv, _, _ := l.Wrap(spec, "/bin/true", nil, nil); argv[len(argv)-1] != "/bin/true" {
			t.Errorf("Wrap without argv: %q, want the path as argv[0]", argv)
		}
		if self, _, _, _ := (Launcher{}).Wrap(spec, "/bin/true", nil, nil); self != DefaultSelf {
			t.Errorf("default self %q, want %q", self, DefaultSelf)
		}
	})

	t.Run("attributes", func(t *testing.T) {
		base := &syscall.SysProcAttr{Setpgid: true}
		_, _, sys, err := l.Wrap(spec, "/bin/true", nil, base)
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(*base, syscall.SysProcAttr{Setpgid: true}) {
			t.Errorf("Wrap changed the caller's attributes: %+v", base)
		}
		if !sys.Setpgid || sys.Pdeathsig != syscall.SIGKILL {
			t.Errorf("Setpgid %v, Pdeathsig %v; want the caller's, and SIGKILL", sys.Setpgid, sys.Pdeathsig)
		}
		if want := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID); sys.Cloneflags != want {
			t.Errorf("Cloneflags %#x, want %#x", sys.Cloneflags, want)
		}
		if len(sys.UidMappings) == 0 || len(sys.GidMappings) == 0 {
			t.Errorf("no id mappings: %+v", sys)
		}
		if os.Geteuid() != 0 {
			want := []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
			if !cmp.Equal(sys.UidMappings, want) || sys.GidMappingsEnableSetgroups {
				t.Errorf("uid mappings %+v, setgroups %v; want %+v and no setgroups", sys.UidMappings, sys.GidMappingsEnableSetgroups, want)
			}
		}
		_, _, sys, _ = l.Wrap(Spec{Repo: "/r"}, "/bin/true", nil, &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM})
		if sys.Cloneflags&unix.CLONE_NEWPID != 0 || sys.Pdeathsig != syscall.SIGTERM {
			t.Errorf("Cloneflags %#x, Pdeathsig %v; want no PID namespace, and the caller's signal", sys.Cloneflags, sys.Pdeathsig)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		cases := []struct {
			name string
			spec Spec
			path string
			sys  *syscall.SysProcAttr
			err  string
		}{
			{"relative program", spec, "sh", nil, "not an absolute path"},
			{"bad spec", Spec{Repo: "r"}, "/bin/sh", nil, "not an absolute path"},
			{"namespaces", spec, "/bin/sh", &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS}, "already ask"},
			{"credentials", spec, "/bin/sh", &syscall.SysProcAttr{Credential: &syscall.Credential{}}, "already ask"},
			{"chroot", spec, "/bin/sh", &syscall.SysProcAttr{Chroot: "/x"}, "already ask"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if _, _, _, err := l.Wrap(c.spec, c.path, nil, c.sys); err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("Wrap = %v, want an error with %q", err, c.err)
				}
			})
		}
	})

	t.Run("command", func(t *testing.T) {
		cmd, err := l.Command(spec, "sh", "-c", "true")
		if err != nil {
			t.Fatal(err)
		}
		if cmd.Path != "/usr/libexec/flow" || cmd.Args[3] != "/usr/bin/sh" && cmd.Args[3] != "/bin/sh" || cmd.Args[4] != "sh" {
			t.Errorf("Command: %q %q", cmd.Path, cmd.Args)
		}
		if _, err := l.Command(spec, "no-such-program-anywhere"); err == nil {
			t.Error("Command found a program that does not exist")
		}
	})
}

// TestProbeOfAnotherProgram checks that a probe of an executable whose
// main does not run the launcher fails, and says so.
func TestProbeOfAnotherProgram(t *testing.T) {
	err := Launcher{Self: "/bin/false"}.Probe(false)
	if err == nil || !strings.Contains(err.Error(), "sandbox.Main") {
		t.Errorf("Probe = %v, want an error that names sandbox.Main", err)
	}
}
