package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr returns a copy of base that starts the launcher in a new
// user and mount namespace (and PID namespace if spec asks for one).
//
// The launcher needs CAP_SYS_ADMIN in its user namespace to mount, and
// CAP_SETPCAP to empty its bounding set before it executes the session.
// A caller that is not root is mapped to its own uid and gid, so files
// keep their owners; as that uid is not 0 inside either, an exec would
// drop the capabilities that entering the namespace gave, so they are
// passed on as ambient capabilities, which the launcher clears again.
// Root is mapped to itself with every other id it has, so that the
// session sees the owners of files as they are.
func sysProcAttr(spec Spec, base *syscall.SysProcAttr) (*syscall.SysProcAttr, error) {
	sys := &syscall.SysProcAttr{}
	if base != nil {
		c := *base
		sys = &c
	}
	if sys.Cloneflags&(unix.CLONE_NEWUSER|unix.CLONE_NEWNS|unix.CLONE_NEWPID) != 0 ||
		sys.Unshareflags != 0 || sys.UidMappings != nil || sys.GidMappings != nil ||
		sys.Credential != nil || sys.Chroot != "" || len(sys.AmbientCaps) != 0 {
		return nil, errors.New("sandbox: the process attributes already ask for namespaces, credentials or a chroot")
	}
	sys.Cloneflags |= unix.CLONE_NEWUSER | unix.CLONE_NEWNS
	if spec.PIDNamespace {
		sys.Cloneflags |= unix.CLONE_NEWPID
	}
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		sys.GidMappingsEnableSetgroups = false
	} else {
		var err error
		if sys.UidMappings, err = identityMap("/proc/self/uid_map"); err != nil {
			return nil, err
		}
		if sys.GidMappings, err = identityMap("/proc/self/gid_map"); err != nil {
			return nil, err
		}
		sys.GidMappingsEnableSetgroups = true
	}
	sys.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	if sys.Pdeathsig == 0 {
		sys.Pdeathsig = syscall.SIGKILL
	}
	return sys, nil
}

// identityMap maps every id that the caller's user namespace has, as
// the map file at path lists them, to itself.
func identityMap(path string) ([]syscall.SysProcIDMap, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sandbox: read %s: %w", path, err)
	}
	m, err := parseIDMap(b)
	if err != nil {
		return nil, fmt.Errorf("sandbox: read %s: %w", path, err)
	}
	return m, nil
}

// parseIDMap reads the ids a uid_map or gid_map file gives the reading
// process's namespace ("inside outside count" per line) as ranges
// mapped to themselves.
func parseIDMap(b []byte) ([]syscall.SysProcIDMap, error) {
	var m []syscall.SysProcIDMap
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("malformed line %q", sc.Text())
		}
		inside, err1 := strconv.ParseUint(f[0], 10, 32)
		count, err2 := strconv.ParseUint(f[2], 10, 32)
		if err := errors.Join(err1, err2); err != nil || count == 0 {
			return nil, fmt.Errorf("malformed line %q", sc.Text())
		}
		m = append(m, syscall.SysProcIDMap{ContainerID: int(inside), HostID: int(inside), Size: int(count)})
	}
	if len(m) == 0 {
		return nil, errors.New("no ids mapped")
	}
	return m, nil
}
