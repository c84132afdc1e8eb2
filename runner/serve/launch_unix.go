//go:build !windows && !plan9 && !js && !wasip1

package serve

import "syscall"

// detached puts the process in a new session.
func detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
