package sandbox

import (
	"sync"
	"syscall"
)

// Probed is a Launcher that probes the kernel once, with a PID
// namespace, and remembers the answer: what a long-lived program keeps
// and hands to each run (local.Sandbox).
type Probed struct {
	Launcher
	once sync.Once
	err  error
}

// Probe reports, from the first call on, whether the sandbox with a
// PID namespace can be set up here (Launcher.Probe).
func (p *Probed) Probe() error {
	p.once.Do(func() { p.err = p.Launcher.Probe(true) })
	return p.err
}

// Wrap is Launcher.Wrap.
func (p *Probed) Wrap(spec Spec, path string, argv []string, sys *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error) {
	return p.Launcher.Wrap(spec, path, argv, sys)
}
