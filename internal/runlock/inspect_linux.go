package runlock

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of a process's start time in /proc: USER_HZ,
// 100 on every Linux this runs on.
const clockTicks = 100

// InspectProcess reads what /proc says of pid: its start time, command
// line, executable and state.
func InspectProcess(pid int) (Process, error) {
	p := Process{PID: pid}
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return p, fmt.Errorf("inspect pid %d: %w", pid, err)
	}
	// The fields after the command name, which is in parentheses and
	// may hold anything: state is the first, starttime the 20th.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return p, fmt.Errorf("inspect pid %d: unreadable /proc stat", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return p, fmt.Errorf("inspect pid %d: unreadable /proc stat", pid)
	}
	p.State = f[0]
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return p, fmt.Errorf("inspect pid %d: start time: %w", pid, err)
	}
	boot, err := bootTime()
	if err != nil {
		return p, fmt.Errorf("inspect pid %d: %w", pid, err)
	}
	p.Started = boot.Add(time.Duration(ticks) * time.Second / clockTicks)
	if cmd, err := os.ReadFile(dir + "/cmdline"); err == nil {
		p.Args = strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
	}
	p.Exe, _ = os.Readlink(dir + "/exe")
	return p, nil
}

// bootTime reads when this host booted from /proc/stat.
func bootTime() (time.Time, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("boot time: %w", err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("boot time: no btime in /proc/stat")
}
