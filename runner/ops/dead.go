package ops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/notify"
	"github.com/flow-run/flow/internal/sandbox"
	"github.com/flow-run/flow/runner/record"
)

// A runner cannot tell of its own death. A reader of the record that
// finds a run dead — flow status, flow serve — tells the workflow's
// notifiers (notify.on: [dead]) instead, once per runner that died: the
// first reader to create the run's marker notified/dead-<heartbeat>
// sends, every later one sees the marker and does not.

// DeadNotifier sends a dead run's notification; nil is the real one
// (a command and a webhook, internal/notify).
type DeadNotifier interface {
	Send(ctx context.Context, n notify.Notification, cfg notify.Config) []notify.Result
}

// deadMarkers is the directory of a run that holds its markers of
// notifications told by readers.
const deadMarkers = "notified"

// tellDead tells the notifiers of wf that the run of st is dead, when
// it is, wf asks to hear it, and no reader told of this death before.
func (s *Service) tellDead(repo string, st Status, wf *config.Workflow) {
	if st.Liveness.State != record.LiveDead || wf == nil || wf.Notify == nil || !wf.Notify.Notifies(notify.EventDead) || st.State == nil {
		return
	}
	var beat time.Time
	if r := st.State.Runner; r != nil && r.HeartbeatAt != nil {
		beat = r.HeartbeatAt.Time
	}
	key := notify.DeadKey(st.State.RunID, beat)
	name := "dead-" + strings.NewReplacer(":", "", "@", "-", ".", "-").Replace(key)
	dir := filepath.Join(st.RunDir, deadMarkers)
	if err := s.FS.MkdirAll(dir, 0o755); err != nil {
		return
	}
	f, err := s.FS.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return // told already (fs.ErrExist), or the run cannot be marked: tell nobody twice
	}
	defer f.Close()
	url := ""
	if base := publicURL(s.Environ); base != "" {
		url = base + "r/" + st.State.RunID
	}
	n := notify.Dead(st.State.RunID, st.State.WorkflowName, st.RunDir, url, beat, s.clock().Now())
	sender := s.DeadNotifier
	if sender == nil {
		sender = notify.Sender{Environ: s.Environ}
	}
	cfg := wf.Notify
	c := notify.Config{Command: cfg.Command, Webhook: cfg.Webhook, Timeout: cfg.Timeout, Dir: repo}
	if c.Command != "" {
		// flow run --sandbox, kept in the run's invocation, is a
		// person's choice: it wins over the workflow's mode here too.
		inv, _ := record.ReadInvocation(s.FS, st.RunDir)
		c.Wrap = s.notifyWrap(repo, wf, inv.Sandbox)
	}
	// The marker records how it went: a reader holds no lock on the run,
	// so it appends no event.
	for _, r := range sender.Send(context.Background(), n, c) {
		line := r.Via + ": told\n"
		if r.Err != nil {
			line = r.Via + ": failed: " + r.Err.Error() + "\n"
		}
		_, _ = f.Write([]byte(line))
	}
}

// notifyWrap starts a notification command of wf sandboxed as wf's
// sessions are (its defaults' sandbox mode, or override when the run
// was given one): confined, or unconfined where no sandbox works and
// the mode allows it, or — sandbox: required where none works — not at
// all, the command failing with why.
func (s *Service) notifyWrap(repo string, wf *config.Workflow, override string) notify.Wrap {
	mode := wf.StepSandbox(nil)
	if override != "" {
		mode = override
	}
	if mode == config.SandboxOff {
		return nil
	}
	fail := func(err error) notify.Wrap {
		return func(string, []string, *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error) {
			return "", nil, nil, err
		}
	}
	why := errors.New("this program starts no sandbox")
	if s.Sandbox != nil {
		why = s.Sandbox.Probe()
	}
	real := ""
	if why == nil {
		real, why = filepath.EvalSymlinks(repo)
	}
	if why != nil {
		if mode == config.SandboxRequired {
			return fail(fmt.Errorf("sandbox: required, but the command cannot be sandboxed here: %v", why))
		}
		return nil
	}
	spec := sandbox.Spec{Repo: real, PIDNamespace: true}
	if err := spec.Validate(); err != nil {
		return fail(err)
	}
	sb := s.Sandbox
	return func(path string, argv []string, sys *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error) {
		return sb.Wrap(spec, path, argv, sys)
	}
}
