//go:build windows || plan9 || js || wasip1

package serve

import "syscall"

// detached has no session to start on this system.
func detached() *syscall.SysProcAttr {
	return nil
}
