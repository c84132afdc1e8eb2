//go:build !unix

package notify

import "os/exec"

// ownGroup leaves cmd as it is: its cancellation kills its main
// process only.
func ownGroup(*exec.Cmd) {}
