//go:build !unix

package runlock

import "os"

// ProcessAlive reports whether the holder's process may still be running.
// On this platform it cannot ask the kernel, so any holder with a pid is
// assumed alive.
func ProcessAlive(h Holder) bool {
	host, err := os.Hostname()
	if err != nil || h.Host != host {
		return true
	}
	return h.PID > 0
}
