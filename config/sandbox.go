package config

// The sandbox modes of defaults.sandbox and a step's sandbox: whether a
// step's sessions run confined, so that they cannot write flow's state
// under .agents/ nor decide the run they are part of (docs/security.md,
// "The sandbox").
const (
	// SandboxOn sandboxes sessions where the kernel allows it, and runs
	// them unsandboxed, with a warning, where it does not (the default).
	SandboxOn = "on"
	// SandboxRequired fails a step whose sessions cannot be sandboxed.
	SandboxRequired = "required"
	// SandboxOff never sandboxes the step's sessions.
	SandboxOff = "off"
)

// StepSandbox returns the sandbox mode of step s: its own, else the
// defaults', else on.
func (w *Workflow) StepSandbox(s *Step) string {
	switch {
	case s != nil && s.Sandbox != "":
		return s.Sandbox
	case w.Defaults.Sandbox != "":
		return w.Defaults.Sandbox
	}
	return SandboxOn
}
