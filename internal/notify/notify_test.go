package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var at = time.Date(2026, 11, 26, 9, 30, 0, 0, time.UTC)

func waiting() Notification {
	return Notification{Event: EventWaitingOnHuman, RunID: "20261126-093000-abc123", Workflow: "sdlc", Status: "waiting_on_human",
		Step: "manual_approval", Reason: "Ship dark mode?", RunDir: "/repo/.agents/runs/20261126-093000-abc123",
		URL: "https://flow.example.com/runs/20261126-093000-abc123", At: at}
}

// hook is a webhook endpoint that records what it was sent.
type hook struct {
	*httptest.Server
	got chan request
}

type request struct {
	method, path, contentType string
	body                      []byte
}

func newHook(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *hook {
	k := &hook{got: make(chan request, 10)}
	k.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		k.got <- request{r.Method, r.URL.Path, r.Header.Get("Content-Type"), body}
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(k.Close)
	return k
}

func TestWebhookPayload(t *testing.T) {
	k := newHook(t, nil)
	s := Sender{Environ: []string{"SLACK_WEBHOOK_URL=" + k.URL + "/services/T0/B0/s3cr3t"}}
	res := s.Send(context.Background(), waiting(), Config{Webhook: "${SLACK_WEBHOOK_URL}"})
	if len(res) != 1 || res[0].Via != ViaWebhook || res[0].Err != nil {
		t.Fatalf("Send: %+v", res)
	}
	r := <-k.got
	if r.method != http.MethodPost || r.path != "/services/T0/B0/s3cr3t" || r.contentType != "application/json" {
		t.Errorf("request %s %s %s", r.method, r.path, r.contentType)
	}
	var p struct {
		Text string         `json:"text"`
		Flow map[string]any `json:"flow"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("payload %s: %v", r.body, err)
	}
	want := "flow: run 20261126-093000-abc123 of sdlc is waiting on a human at step manual_approval: Ship dark mode? <https://flow.example.com/runs/20261126-093000-abc123|open>"
	if p.Text != want {
		t.Errorf("text\n%s\nwant\n%s", p.Text, want)
	}
	wantFlow := map[string]any{"event": "waiting_on_human", "run_id": "20261126-093000-abc123", "workflow": "sdlc", "status": "waiting_on_human",
		"step": "manual_approval", "reason": "Ship dark mode?", "run_dir": "/repo/.agents/runs/20261126-093000-abc123",
		"url": "https://flow.example.com/runs/20261126-093000-abc123", "at": "2026-11-26T09:30:00Z"}
	for k, v := range wantFlow {
		if p.Flow[k] != v {
			t.Errorf("flow.%s = %v, want %v", k, p.Flow[k], v)
		}
	}
	if len(p.Flow) != len(wantFlow) {
		t.Errorf("flow has %d members, want %d: %v", len(p.Flow), len(wantFlow), p.Flow)
	}
}

func TestText(t *testing.T) {
	n := Notification{RunID: "r1", Workflow: "w"}
	tests := []struct {
		event, step, reason, url, want string
	}{
		{EventFailed, "tests", "exit 1 <&>", "", "flow: run r1 of w failed at step tests: exit 1 &lt;&amp;&gt;"},
		{EventBudgetExceeded, "", "the run's cost_usd budget is spent (5 of 5)", "", "flow: run r1 of w stopped: its budget is spent: the run's cost_usd budget is spent (5 of 5)"},
		{EventCompleted, "", "", "http://h/runs/r1?a=1|2", "flow: run r1 of w completed <http://h/runs/r1?a=1%7C2|open>"},
		{EventWaitingOnHuman, "", "", "", "flow: run r1 of w is waiting on a human"},
	}
	for _, tt := range tests {
		n.Event, n.Step, n.Reason, n.URL = tt.event, tt.step, tt.reason, tt.url
		if got := Text(n); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.event, got, tt.want)
		}
	}
	d := Dead("r1", "w", "/runs/r1", "", at, at.Add(time.Minute))
	if got := Text(d); got != "flow: run r1 of w is dead: its runner is gone: no heartbeat since 2026-11-26T09:30:00Z" || d.Status != "dead" {
		t.Errorf("dead: %q %+v", got, d)
	}
	if DeadKey("r1", at) == DeadKey("r1", at.Add(time.Second)) {
		t.Error("two deaths share a key")
	}
}

func TestWebhookFailures(t *testing.T) {
	secret := "/services/T0/B0/s3cr3t"
	failing := newHook(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "invalid_token for "+r.URL.Path, http.StatusForbidden)
	})
	release := make(chan struct{})
	defer close(release)
	slow := newHook(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	tests := []struct {
		name, url string
		timeout   time.Duration
		want      string
	}{
		{"non-2xx", failing.URL + secret, 0, "answered 403 Forbidden: invalid_token for ***"},
		{"timeout", slow.URL + secret, 100 * time.Millisecond, "timed out after 100ms"},
		{"refused", "http://127.0.0.1:1" + secret, 0, "POST: dial tcp 127.0.0.1:1: connect: connection refused"},
		{"unset", "", 0, "$HOOK is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := []string{}
			if tt.url != "" {
				env = append(env, "HOOK="+tt.url)
			}
			start := time.Now()
			res := Sender{Environ: env}.Send(context.Background(), waiting(), Config{Webhook: "$HOOK", Timeout: tt.timeout})
			if len(res) != 1 || res[0].Err == nil {
				t.Fatalf("Send: %+v, want an error", res)
			}
			if msg := res[0].Err.Error(); msg != tt.want {
				t.Errorf("error %q, want %q", msg, tt.want)
			}
			if strings.Contains(res[0].Err.Error(), "s3cr3t") {
				t.Errorf("error shows the URL: %v", res[0].Err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// TestCommand runs a real command that records its stdin and its
// environment, beside a webhook.
func TestCommand(t *testing.T) {
	dir := t.TempDir()
	k := newHook(t, nil)
	s := Sender{Environ: []string{"PATH=" + os.Getenv("PATH"), "HOOK=" + k.URL}}
	cfg := Config{Command: `cat > stdin.json; env | grep '^FLOW_' | sort > env.txt`, Webhook: "$HOOK/x", Dir: dir}
	res := s.Send(context.Background(), waiting(), cfg)
	if len(res) != 2 || res[0] != (Result{Via: ViaCommand}) || res[1] != (Result{Via: ViaWebhook}) {
		t.Fatalf("Send: %+v", res)
	}
	data, err := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got Notification
	if err := json.Unmarshal(data, &got); err != nil || got != waiting() {
		t.Errorf("stdin %s: %+v, %v", data, got, err)
	}
	env, _ := os.ReadFile(filepath.Join(dir, "env.txt"))
	want := []string{
		"FLOW_NOTIFY_EVENT=waiting_on_human",
		"FLOW_REASON=Ship dark mode?",
		"FLOW_RUN_DIR=/repo/.agents/runs/20261126-093000-abc123",
		"FLOW_RUN_ID=20261126-093000-abc123",
		"FLOW_RUN_STATUS=waiting_on_human",
		"FLOW_RUN_URL=https://flow.example.com/runs/20261126-093000-abc123",
		"FLOW_STEP=manual_approval",
		"FLOW_WORKFLOW=sdlc",
	}
	if lines := strings.Split(strings.TrimSpace(string(env)), "\n"); !slices.Equal(lines, want) {
		t.Errorf("environment\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if r := <-k.got; r.path != "/x" {
		t.Errorf("webhook path %s", r.path)
	}
}

func TestCommandFailures(t *testing.T) {
	tests := []struct {
		name, line string
		want       string
	}{
		{"exit", "echo no mail server >&2; exit 3", "exited 3: no mail server"},
		{"timeout", "sleep 30 & sleep 30", "timed out after 200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res := Sender{}.Send(context.Background(), waiting(), Config{Command: tt.line, Timeout: 200 * time.Millisecond})
			if len(res) != 1 || res[0].Err == nil || res[0].Err.Error() != tt.want {
				t.Errorf("Send: %+v, want %q", res, tt.want)
			}
			// The group is killed: what the command started holds it up
			// no longer than a moment.
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// fakeExec records the commands it is given.
type fakeExec struct{ got []Command }

func (f *fakeExec) Run(_ context.Context, c Command) error {
	f.got = append(f.got, c)
	return nil
}

func TestInjectedExecutor(t *testing.T) {
	f := &fakeExec{}
	res := Sender{Exec: f, Environ: []string{"A=1"}}.Send(context.Background(), waiting(), Config{Command: "./notify.sh", Dir: "/repo"})
	if len(res) != 1 || res[0].Err != nil || len(f.got) != 1 {
		t.Fatalf("Send: %+v, ran %d", res, len(f.got))
	}
	c := f.got[0]
	if c.Line != "./notify.sh" || c.Dir != "/repo" || c.Env[0] != "A=1" || !slices.Contains(c.Env, "FLOW_STEP=manual_approval") || !json.Valid(c.Stdin) {
		t.Errorf("command %+v", c)
	}
	if res := (Sender{}).Send(context.Background(), waiting(), Config{}); len(res) != 0 {
		t.Errorf("no notifiers: %+v", res)
	}
}
