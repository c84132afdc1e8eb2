package local

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/eventlog"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/notify"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// hookServer is a webhook endpoint that records the payloads it gets
// and answers with status.
type hookServer struct {
	*httptest.Server
	mu       sync.Mutex
	payloads []map[string]any
}

func newHookServer(t *testing.T, status int) *hookServer {
	h := &hookServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p map[string]any
		_ = json.Unmarshal(body, &p)
		h.mu.Lock()
		h.payloads = append(h.payloads, p)
		h.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, "no_service "+r.URL.Path)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) texts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, p := range h.payloads {
		out = append(out, p["text"].(string))
	}
	return out
}

// stdinRecorder is a notify.Executor that records the stdin of the
// commands it runs.
type stdinRecorder struct {
	mu     sync.Mutex
	stdins []notify.Notification
	envs   [][]string
}

func (r *stdinRecorder) Run(_ context.Context, c notify.Command) error {
	var n notify.Notification
	if err := json.Unmarshal(c.Stdin, &n); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stdins = append(r.stdins, n)
	r.envs = append(r.envs, c.Env)
	return nil
}

// notifiedEvents returns the notified events of run r1, and its
// warnings.
func notifiedEvents(t *testing.T, fsys afero.Fs) (notified []string, warnings []string) {
	t.Helper()
	events, err := eventlog.Read(fsys, filepath.Join(record.RunDir(repo, "r1"), record.EventsFile), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		switch e.Type {
		case EvNotified:
			var d Notified
			_ = json.Unmarshal(e.Data, &d)
			notified = append(notified, e.Step.String()+":"+d.Event+"/"+d.Via)
		case core.EvWarning:
			var d core.Note
			_ = json.Unmarshal(e.Data, &d)
			warnings = append(warnings, d.Message)
		}
	}
	return notified, warnings
}

// TestNotifications: a run that waits on a human, is resumed still
// waiting, then approved and completed, tells its command and its
// webhook of each occurrence once, and records each as notified.
func TestNotifications(t *testing.T) {
	hook := newHookServer(t, http.StatusOK)
	e := newEnv(t, `name: notified
notify:
  on: [waiting_on_human, completed, failed]
  command: ./notify.sh
  webhook: ${HOOK_URL}/services/T0/B0/s3cr3t
steps:
  - {id: code, run: make}
  - {id: approve, human: {message: "Ship {{ vars.what }}?"}}
  - {id: ship, run: ship}
vars: {what: dark mode}
`)
	rec := &stdinRecorder{}
	run := func(opts spec.Options) spec.Result {
		t.Helper()
		s := &scripted{fs: e.fs, fn: func(call) reply { return reply{} }}
		opts.Workflow, opts.Repo, opts.RunID = e.wf, repo, "r1"
		r := e.runner(e.fs, s)
		r.Notifier = notify.Sender{Exec: rec, Environ: []string{"HOOK_URL=" + hook.URL}}
		r.RunURL = func(id, _ string) string { return "https://flow.example.com/runs/0/" + id }
		res, err := r.Run(context.Background(), opts)
		if err != nil {
			t.Fatalf("run: %v\n%s", err, e.out.String())
		}
		return res
	}
	if res := run(spec.Options{NoWait: true}); res.ExitCode != 3 {
		t.Fatalf("exit %d, want 3 at the human step", res.ExitCode)
	}
	if res := run(spec.Options{Resume: true, NoWait: true}); res.ExitCode != 3 {
		t.Fatalf("resumed: exit %d, want 3 at the human step", res.ExitCode)
	}
	if _, err := record.SubmitDecision(e.fs, record.RunDir(repo, "r1"), keytest.K("approve"), core.HumanInput{Approved: true, By: "alice"}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if res := run(spec.Options{Resume: true, NoWait: true}); res.ExitCode != 0 {
		t.Fatalf("approved: exit %d, want 0", res.ExitCode)
	}

	waiting := "flow: run r1 of notified is waiting on a human at step approve: Ship dark mode? <https://flow.example.com/runs/0/r1|open>"
	want := []string{waiting, waiting, "flow: run r1 of notified completed <https://flow.example.com/runs/0/r1|open>"}
	if got := hook.texts(); !slices.Equal(got, want) {
		t.Errorf("webhook got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(rec.stdins) != 3 {
		t.Fatalf("command ran %d times, want 3: %+v", len(rec.stdins), rec.stdins)
	}
	first := rec.stdins[0]
	if first.Event != "waiting_on_human" || first.RunID != "r1" || first.Workflow != "notified" || first.Status != "waiting_on_human" ||
		first.Step != "approve" || first.Reason != "Ship dark mode?" || first.RunDir != record.RunDir(repo, "r1") || !first.At.Equal(e.clock.Now()) {
		t.Errorf("stdin %+v", first)
	}
	if !slices.Contains(rec.envs[2], "FLOW_NOTIFY_EVENT=completed") || rec.stdins[2].Status != "completed" || rec.stdins[2].Step != "" {
		t.Errorf("completed: %+v %v", rec.stdins[2], rec.envs[2])
	}
	notified, warnings := notifiedEvents(t, e.fs)
	wantEvents := []string{
		"approve:waiting_on_human/command", "approve:waiting_on_human/webhook",
		"approve:waiting_on_human/command", "approve:waiting_on_human/webhook",
		":completed/command", ":completed/webhook",
	}
	slices.Sort(notified)
	slices.Sort(wantEvents)
	if !slices.Equal(notified, wantEvents) || len(warnings) != 0 {
		t.Errorf("notified %v, want %v; warnings %v", notified, wantEvents, warnings)
	}
	e.state(e.fs) // the notified events replay
}

// TestNotifyFailure: a webhook that fails is a warning, without its
// URL; the run still completes with exit 0. A step that fails tells of
// its failure with the step and its error.
func TestNotifyFailure(t *testing.T) {
	hook := newHookServer(t, http.StatusInternalServerError)
	src := "name: n\nnotify: {on: [completed, failed], webhook: \"${HOOK_URL}/services/s3cr3t\"}\nsteps:\n  - {id: a, run: make}\n"
	e := newEnv(t, src)
	s := &scripted{fs: e.fs, fn: func(call) reply { return reply{} }}
	r := e.runner(e.fs, s)
	r.Environ = []string{"HOOK_URL=" + hook.URL}
	res, err := r.Run(context.Background(), spec.Options{Workflow: e.wf, Repo: repo, RunID: "r1"})
	if err != nil || res.ExitCode != 0 || res.Status != core.RunCompleted {
		t.Fatalf("run: %+v, %v", res, err)
	}
	notified, warnings := notifiedEvents(t, e.fs)
	if len(notified) != 0 || len(warnings) != 1 || warnings[0] != "notify via webhook failed: answered 500 Internal Server Error: no_service ***" {
		t.Errorf("notified %v, warnings %q", notified, warnings)
	}
	if len(hook.texts()) != 1 {
		t.Errorf("webhook got %v", hook.texts())
	}
	data, _ := afero.ReadFile(e.fs, filepath.Join(record.RunDir(repo, "r1"), record.EventsFile))
	if strings.Contains(string(data), "s3cr3t") || strings.Contains(string(data), hook.URL) || !strings.Contains(e.out.String(), "warning: notify via webhook failed") {
		t.Errorf("events show the webhook, or the warning is not printed:\n%s\n%s", data, e.out.String())
	}

	// A failing step.
	e = newEnv(t, strings.Replace(src, "run: make", "run: make, max_attempts: 1", 1))
	hook2 := newHookServer(t, http.StatusOK)
	s = &scripted{fs: e.fs, fn: func(call) reply { return reply{Exit: 2} }}
	r = e.runner(e.fs, s)
	r.Environ = []string{"HOOK_URL=" + hook2.URL}
	if res, err := r.Run(context.Background(), spec.Options{Workflow: e.wf, Repo: repo, RunID: "r1"}); err != nil || res.Status != core.RunFailed {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if got := hook2.texts(); len(got) != 1 || !strings.HasPrefix(got[0], "flow: run r1 of n failed at step a: step a failed: ") {
		t.Errorf("webhook got %q", got)
	}
	if notified, _ := notifiedEvents(t, e.fs); !slices.Equal(notified, []string{"a:failed/webhook"}) {
		t.Errorf("notified %v", notified)
	}
}

// TestNotifyEventsMatchConfig: the events config accepts are those
// internal/notify names.
func TestNotifyEventsMatchConfig(t *testing.T) {
	want := []string{notify.EventWaitingOnHuman, notify.EventFailed, notify.EventBudgetExceeded, notify.EventCompleted, notify.EventDead}
	if !slices.Equal(config.NotifyEvents, want) {
		t.Errorf("config %v, notify %v", config.NotifyEvents, want)
	}
}
