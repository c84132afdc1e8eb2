package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The events a notification tells of (a workflow's notify.on). A runner
// sends the first four as its run reaches them; Dead is for a reader
// that finds a run whose runner is gone (see Dead).
const (
	EventWaitingOnHuman = "waiting_on_human"
	EventFailed         = "failed"
	EventBudgetExceeded = "budget_exceeded"
	EventCompleted      = "completed"
	EventDead           = "dead"
)

// The notifiers, as Result.Via names them.
const (
	ViaCommand = "command"
	ViaWebhook = "webhook"
)

// DefaultTimeout bounds a notifier whose Config gives no timeout.
const DefaultTimeout = 10 * time.Second

// maxExcerpt bounds what an error quotes of a command's output or a
// webhook's answer.
const maxExcerpt = 512

// Notification is what a notifier is told: the JSON on a command's
// stdin, and the flow member of a webhook's payload.
type Notification struct {
	// Event is one of the Event* constants.
	Event string `json:"event"`
	RunID string `json:"run_id"`
	// Workflow is the workflow's name.
	Workflow string `json:"workflow"`
	// Status is the run's status (waiting_on_human, failed, ...).
	Status string `json:"status"`
	// Step is the step the event is about (the one waiting on a human,
	// the one that failed), or "".
	Step string `json:"step,omitempty"`
	// Reason says why: a human step's message, the failure, the budget
	// spent.
	Reason string `json:"reason,omitempty"`
	RunDir string `json:"run_dir"`
	// URL is the run's page (flow serve --public-url), or "".
	URL string    `json:"url,omitempty"`
	At  time.Time `json:"at"`
}

// Config says how to notify: a command, a webhook, or both.
type Config struct {
	// Command is a shell command (sh -c), or "".
	Command string
	// Webhook is a URL, or "", in which $NAME and ${NAME} are read from
	// the environment (see ExpandWebhook).
	Webhook string
	// Timeout bounds each notifier; 0 means DefaultTimeout.
	Timeout time.Duration
	// Dir is the command's working directory; "" means the caller's.
	Dir string
	// Wrap, when set, starts the command through it (a sandbox).
	Wrap Wrap
}

// Result is how one notifier did.
type Result struct {
	// Via is ViaCommand or ViaWebhook.
	Via string
	// Err says what failed, or is nil. It never holds the webhook's
	// URL or the values of the variables it read.
	Err error
}

// Executor runs a notification command.
type Executor interface {
	// Run runs c to its end. Cancelling ctx stops it, and what it
	// started. A command that exits unsuccessfully is an error.
	Run(ctx context.Context, c Command) error
}

// Command is a notification command to run.
type Command struct {
	// Line is run as sh -c Line.
	Line string
	Dir  string
	// Env is the complete environment of the command.
	Env []string
	// Stdin is what the command reads on its standard input.
	Stdin []byte
	// Wrap, when set, turns the start of the command's shell into the
	// start of something that runs it (a sandbox's launcher), as
	// proc.Spec's Wrap does.
	Wrap Wrap
}

// Wrap turns the start of a process (its path, arguments and process
// attributes) into the start of another that runs it.
type Wrap func(path string, argv []string, sys *syscall.SysProcAttr) (string, []string, *syscall.SysProcAttr, error)

// Sender sends notifications. Its zero value sends through the network
// and the operating system, with the environment empty.
type Sender struct {
	// Client POSTs to webhooks; nil means a client that follows no
	// redirects.
	Client *http.Client
	// Exec runs commands; nil means OS().
	Exec Executor
	// Environ is the environment (os.Environ()): the variables a
	// webhook reads, and the environment of a command, which gets the
	// FLOW_* variables too.
	Environ []string
}

// Send tells n to the notifiers of cfg, at once, each within cfg's
// timeout, and returns how each did: the command's first, then the
// webhook's. It returns when both have ended, so no later than the
// timeout (and a moment to stop a command) after it was called.
func (s Sender) Send(ctx context.Context, n Notification, cfg Config) []Result {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var vias []func(context.Context) error
	var results []Result
	if cfg.Command != "" {
		results = append(results, Result{Via: ViaCommand})
		vias = append(vias, func(ctx context.Context) error { return s.command(ctx, n, cfg) })
	}
	if cfg.Webhook != "" {
		results = append(results, Result{Via: ViaWebhook})
		vias = append(vias, func(ctx context.Context) error { return s.webhook(ctx, n, cfg.Webhook) })
	}
	var wg sync.WaitGroup
	for i, send := range vias {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			err := send(ctx)
			if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("timed out after %s", timeout)
			}
			results[i].Err = err
		}()
	}
	wg.Wait()
	return results
}

// command runs the notification command.
func (s Sender) command(ctx context.Context, n Notification, cfg Config) error {
	stdin, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode notification: %w", err)
	}
	env := append(s.Environ[:len(s.Environ):len(s.Environ)],
		"FLOW_NOTIFY_EVENT="+n.Event,
		"FLOW_RUN_ID="+n.RunID,
		"FLOW_RUN_DIR="+n.RunDir,
		"FLOW_RUN_STATUS="+n.Status,
		"FLOW_RUN_URL="+n.URL,
		"FLOW_WORKFLOW="+n.Workflow,
		"FLOW_STEP="+n.Step,
		"FLOW_REASON="+n.Reason,
	)
	ex := s.Exec
	if ex == nil {
		ex = OS()
	}
	return ex.Run(ctx, Command{Line: cfg.Command, Dir: cfg.Dir, Env: env, Stdin: append(stdin, '\n'), Wrap: cfg.Wrap})
}

// webhook POSTs the notification's Payload to the webhook.
func (s Sender) webhook(ctx context.Context, n Notification, webhook string) error {
	u, err := ExpandWebhook(webhook, s.getenv)
	if err != nil {
		return err
	}
	// hide removes the URL, and the values it read, from what an error
	// quotes.
	hidden := []string{u}
	if p, err := url.Parse(u); err == nil {
		// An endpoint may echo the path, where the secret part of a
		// webhook's URL usually is.
		hidden = append(hidden, p.RequestURI(), p.Path, p.User.String())
	}
	vars, _ := WebhookVars(webhook)
	for _, v := range vars {
		val, _ := s.getenv(v)
		hidden = append(hidden, val)
	}
	hide := func(msg string) string {
		for _, h := range hidden {
			if len(h) >= 4 {
				msg = strings.ReplaceAll(msg, h, "***")
			}
		}
		return msg
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(Payload(n)))
	if err != nil {
		return errors.New(hide("make request: " + err.Error()))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flow")
	client := s.Client
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errors.New(hide("POST: " + err.Error()))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxExcerpt))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := "answered " + resp.Status
		if b := strings.TrimSpace(string(body)); b != "" {
			msg += ": " + excerpt(b)
		}
		return errors.New(hide(msg))
	}
	return nil
}

func (s Sender) getenv(name string) (string, bool) {
	for i := len(s.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(s.Environ[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// Payload is the body POSTed to a webhook: text, which Slack-compatible
// incoming webhooks show (with <URL|open>, a link to the run's page,
// when n has one), and flow, the notification itself, which they
// ignore.
func Payload(n Notification) []byte {
	b, err := json.Marshal(struct {
		Text string       `json:"text"`
		Flow Notification `json:"flow"`
	}{Text(n), n})
	if err != nil {
		// A Notification holds strings and a time: it always encodes.
		panic(err)
	}
	return b
}

// Text is the line a person reads of n, in Slack's mrkdwn: &, < and >
// escaped, and the run's page as <URL|open>.
func Text(n Notification) string {
	run := fmt.Sprintf("run %s of %s", n.RunID, n.Workflow)
	var s string
	switch n.Event {
	case EventWaitingOnHuman:
		s = run + " is waiting on a human"
		if n.Step != "" {
			s += " at step " + n.Step
		}
	case EventFailed:
		s = run + " failed"
		if n.Step != "" {
			s += " at step " + n.Step
		}
	case EventBudgetExceeded:
		s = run + " stopped: its budget is spent"
	case EventCompleted:
		s = run + " completed"
	case EventDead:
		s = run + " is dead: its runner is gone"
	default:
		s = run + ": " + n.Event
	}
	if n.Reason != "" {
		s += ": " + excerpt(n.Reason)
	}
	s = "flow: " + mrkdwn(s)
	if n.URL != "" {
		s += " <" + strings.NewReplacer("|", "%7C", ">", "%3E", "<", "%3C").Replace(n.URL) + "|open>"
	}
	return s
}

// mrkdwn escapes the characters Slack's mrkdwn gives a meaning.
func mrkdwn(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// excerpt shortens s to maxExcerpt bytes, on a character boundary.
func excerpt(s string) string {
	if len(s) <= maxExcerpt {
		return s
	}
	cut := maxExcerpt
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// Dead returns the notification that run runID of workflow is dead: its
// runner is gone (docs/operating-runs.md, "Reading status": no heartbeat for 60 s, or its process
// ended) while the run had not ended. A runner cannot tell of its own
// death: a reader of run records that finds it (flow serve, flow
// status) calls Dead and sends the result to the run's notifiers, once
// per DeadKey, so that a run seen dead by several readers, or on every
// refresh, is told of once per runner that died.
func Dead(runID, workflow, runDir, url string, heartbeat, now time.Time) Notification {
	reason := "no heartbeat since " + heartbeat.UTC().Format(time.RFC3339)
	if heartbeat.IsZero() {
		reason = "it never beat"
	}
	return Notification{Event: EventDead, RunID: runID, Workflow: workflow, Status: EventDead, Reason: reason, RunDir: runDir, URL: url, At: now}
}

// DeadKey names one death of a run: its id and its runner's last
// heartbeat.
func DeadKey(runID string, heartbeat time.Time) string {
	return runID + "@" + heartbeat.UTC().Format(time.RFC3339Nano)
}
