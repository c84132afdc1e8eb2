package local

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/notify"
	"github.com/flow-run/flow/internal/proc"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// Notifications (a workflow's notify:) tell people when the run waits
// on a human, fails, spends its budget or completes. The loop hands
// notifyOf each decision's events; a run_waiting names the steps that
// wait, a run_finished how the run ended. Each occurrence is told of
// once by a runner — a step waiting again after a loop-back, or in a
// resumed run, is told of again. Notifiers run on goroutines of their
// own, bounded by notify.timeout: they never hold up the loop, and
// their failure is a warning, never the run's. Their results come back
// to the loop, which records them (notified, or a warning); a run that
// ends waits for those in flight, no longer than the timeout. A Serial
// runner (flow test's simulated sessions) tells nobody.

// EvNotified records that a notifier was told of an event of the run.
// It changes nothing in the run's state.
const EvNotified = "notified"

// Notified is the data of EvNotified.
type Notified struct {
	// Event is what was told (waiting_on_human, failed, ...).
	Event string `json:"event"`
	// Via is command or webhook.
	Via string `json:"via"`
}

// Notifier sends a notification to the notifiers of cfg and says how
// each did (notify.Sender).
type Notifier interface {
	Send(ctx context.Context, n notify.Notification, cfg notify.Config) []notify.Result
}

// notices are the run's notifications: those told of, and those in
// flight.
type notices struct {
	// sent holds the occurrences told of by this runner.
	sent map[string]bool
	// done receives the results of notifications in flight; inFlight
	// counts them, and deadline is when the last may still answer.
	done     chan noticeDone
	inFlight int
	deadline time.Time
}

// noticeDone is how the notifiers of one notification did.
type noticeDone struct {
	n       notify.Notification
	results []notify.Result
}

// notifyOf starts the notifications the events call for.
func (x *run) notifyOf(events []core.Event) {
	cfg := x.wf.Notify
	if cfg == nil || x.r.Serial {
		return
	}
	if x.notices == nil {
		x.notices = &notices{sent: map[string]bool{}, done: make(chan noticeDone, 16)}
	}
	for _, e := range events {
		for key, n := range x.noticesOf(e) {
			if !cfg.Notifies(n.Event) || x.notices.sent[key] {
				continue
			}
			x.notices.sent[key] = true
			x.startNotice(n, cfg)
		}
	}
}

// noticesOf returns the notifications an event calls for, by the key of
// their occurrence.
func (x *run) noticesOf(e core.Event) map[string]notify.Notification {
	base := notify.Notification{RunID: x.st.RunID, Workflow: x.wf.Name, RunDir: x.dir, At: e.At.Time}
	if x.r.RunURL != nil {
		base.URL = x.r.RunURL(x.st.RunID, x.dir)
	}
	out := map[string]notify.Notification{}
	switch e.Type {
	case core.EvRunWaiting:
		for _, id := range x.st.StepOrder {
			s := x.st.Steps[id]
			if s == nil || s.Status != core.WaitingOnHuman || x.decided(s) {
				continue
			}
			n := base
			n.Event, n.Status, n.Step, n.Reason = notify.EventWaitingOnHuman, string(core.RunWaitingOnHuman), id.String(), x.humanMessage(id)
			out[strings.Join([]string{n.Event, id.String(), strconv.Itoa(s.Attempts), strconv.Itoa(s.IterationCount)}, ":")] = n
		}
	case core.EvRunFinished:
		var d core.RunFinished
		_ = jsonUnmarshal(e.Data, &d)
		n := base
		n.Status, n.Reason = string(d.Status), d.Reason
		switch d.Status {
		case core.RunCompleted:
			n.Event = notify.EventCompleted
		case core.RunBudgetExceeded:
			n.Event = notify.EventBudgetExceeded
		case core.RunFailed:
			n.Event = notify.EventFailed
			var failed []string
			for _, id := range x.st.StepOrder {
				if s := x.st.Steps[id]; s != nil && s.Status == core.Failed {
					failed = append(failed, id.String())
					if n.Reason == "a step failed" && s.LastError != nil {
						n.Reason = "step " + id.String() + " failed: " + *s.LastError
					}
				}
			}
			n.Step = strings.Join(failed, ", ")
		default:
			return nil
		}
		out["finished:"+n.Event] = n
	}
	for k, n := range out {
		n.Step, n.Reason, n.URL = x.redact.String(n.Step), x.redact.String(n.Reason), x.redact.String(n.URL)
		out[k] = n
	}
	return out
}

// decided reports whether a waiting step's decision is already there
// (approved while no runner ran): a resumed run takes it at once, and
// waits on nobody.
func (x *run) decided(s *core.StepState) bool {
	if s.ManualInputPath == nil {
		return false
	}
	in, err := record.ReadManualInput(x.r.FS, *s.ManualInputPath)
	return err == nil && in != nil && !record.DecidedBefore(in, s)
}

// startNotice sends n on a goroutine of its own; its results come back
// to the loop through the done channel.
func (x *run) startNotice(n notify.Notification, cfg *config.Notify) {
	var sender Notifier = notify.Sender{Environ: x.r.Environ}
	if x.r.Notifier != nil {
		sender = x.r.Notifier
	}
	c := notify.Config{Command: cfg.Command, Webhook: cfg.Webhook, Timeout: cfg.Timeout, Dir: x.opts.Repo}
	if c.Command != "" {
		// The command runs sandboxed as the workflow's sessions do: it
		// is the workflow's, which sessions may have written.
		sp := proc.Spec{Dir: x.opts.Repo}
		if err := x.confine(&sp, nil); err != nil {
			c.Wrap = func(string, []string, *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error) {
				return "", nil, nil, err
			}
		} else if sp.Wrap != nil {
			c.Wrap = sp.Wrap
		}
	}
	ns := x.notices
	ns.inFlight++
	// Send returns by the timeout; a command killed at the timeout
	// takes a moment more to end.
	if d := time.Now().Add(cfg.Timeout + 2*time.Second); d.After(ns.deadline) {
		ns.deadline = d
	}
	stopped := x.stopped
	go func() {
		res := sender.Send(context.Background(), n, c)
		select {
		case ns.done <- noticeDone{n, res}:
		case <-stopped:
		}
	}()
}

// noticeResults is the channel of the results of notifications in
// flight; nil (never ready) when there are none.
func (x *run) noticeResults() <-chan noticeDone {
	if x.notices == nil || x.notices.inFlight == 0 {
		return nil
	}
	return x.notices.done
}

// noticed records how the notifiers of a notification did.
func (x *run) noticed(d noticeDone) {
	x.notices.inFlight--
	// The notification names its step (or steps) as text.
	var step core.StepKey
	_ = step.UnmarshalText([]byte(d.n.Step))
	for _, r := range d.results {
		if r.Err != nil {
			x.warn(step, "notify via "+r.Via+" failed: "+x.redact.String(r.Err.Error()))
			continue
		}
		x.emit(newEvent(x.r.Clock.Now(), EvNotified, step, Notified{Event: d.n.Event, Via: r.Via}))
	}
}

// awaitNotices waits for the notifications in flight, as the run
// stops, so that their results are recorded: no longer than their
// timeout.
func (x *run) awaitNotices() {
	ns := x.notices
	if ns == nil || ns.inFlight == 0 {
		return
	}
	t := time.NewTimer(time.Until(ns.deadline))
	defer t.Stop()
	for ns.inFlight > 0 {
		select {
		case d := <-ns.done:
			x.noticed(d)
		case <-t.C:
			x.warn(core.StepKey{}, "notify: gave up waiting for "+plural(ns.inFlight, "a notification", strconv.Itoa(ns.inFlight)+" notifications")+" at the end of the run")
			return
		}
	}
}
