package config

import (
	"slices"
	"strings"

	"github.com/flow-run/flow/internal/notify"
)

// Notifications (notify:) tell people when a run waits on a human or
// ends. A notify block of the workflow and one of its defaults are
// merged key by key, the workflow's winning; the result gives a command,
// a webhook or both. Event names are checked with a did-you-mean; a
// webhook written as a URL must be an http or https one, and one that
// reads the environment ($NAME, ${NAME}) is checked when it is sent. The
// variables a webhook reads are secrets: their values are hidden like
// those of secrets:.

// notify builds Workflow.Notify from the notify blocks of the defaults
// and of the workflow.
func (b *builder) notify() {
	blocks := []*rawNotify{b.raw.defaults.notify, b.raw.notify}
	var n *Notify
	for _, rn := range blocks {
		if rn == nil {
			continue
		}
		if n == nil {
			n = &Notify{Timeout: DefaultNotifyTimeout}
		}
		n.Pos = rn.pos
		if rn.empty {
			b.d.errorf(rn.pos, "notify is empty: give a command, a webhook or both")
			continue
		}
		if rn.onSet {
			n.On = b.notifyOn(rn)
		}
		if c := rn.command; c.ok() {
			if strings.TrimSpace(c.val) == "" {
				b.d.errorf(c.pos(), "notify.command is empty")
			}
			n.Command = c.val
		}
		if w := rn.webhook; w.ok() {
			if err := notify.CheckWebhook(w.val); err != nil {
				b.d.errorf(w.pos(), "notify.webhook: %v", err)
			}
			n.Webhook = w.val
		}
		if t := rn.timeout; t.ok() {
			if d, ok := b.constDuration("notify.timeout", t); ok {
				if d > MaxNotifyTimeout {
					b.d.errorf(t.pos(), "notify.timeout: %s is longer than %s; a run that ends waits for its notifications", t.val, MaxNotifyTimeout)
				} else {
					n.Timeout = d
				}
			}
		}
	}
	if n == nil {
		return
	}
	if n.On == nil {
		n.On = slices.Clone(DefaultNotifyOn)
	}
	if n.Command == "" && n.Webhook == "" && !slices.ContainsFunc(blocks, func(rn *rawNotify) bool { return rn != nil && rn.empty }) {
		b.d.errorf(n.Pos, "notify: give a command, a webhook or both")
	}
	// The variables a webhook reads are secrets.
	vars, _ := notify.WebhookVars(n.Webhook)
	for _, v := range vars {
		if !IsSecretName(v, b.w.Secrets) {
			b.w.Secrets = append(b.w.Secrets, v)
		}
	}
	b.w.Notify = n
}

// notifyOn checks the events of a notify block and returns them in the
// order of NotifyEvents.
func (b *builder) notifyOn(rn *rawNotify) []string {
	seen := map[string]bool{}
	for _, e := range rn.on {
		switch {
		case seen[e.val]:
			b.d.errorf(e.pos(), "notify.on: %q is listed twice", e.val)
		case slices.Contains(NotifyEvents, e.val):
			seen[e.val] = true
		default:
			b.d.unknown(e.pos(), "event", e.val, NotifyEvents)
			d := &b.d.list[len(b.d.list)-1]
			d.Message = "notify.on: " + d.Message + "; want " + strings.Join(NotifyEvents, ", ")
		}
	}
	if len(rn.on) == 0 {
		b.d.errorf(rn.onPos, "notify.on is empty: give at least one of %s", strings.Join(NotifyEvents, ", "))
	}
	on := []string{}
	for _, e := range NotifyEvents {
		if seen[e] {
			on = append(on, e)
		}
	}
	return on
}
