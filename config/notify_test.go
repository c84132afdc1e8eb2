package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/google/go-cmp/cmp"
)

const notifyEvents = "; want waiting_on_human, failed, budget_exceeded, completed, dead"

func TestNotifyRules(t *testing.T) {
	steps := "steps:\n  - {id: s, run: r}\n"
	runRules(t, []ruleTest{
		{"webhook", "yaml", "name: x\nnotify: {webhook: https://hooks.slack.com/services/T0/B0/abc}\n" + steps, nil},
		{"command and env webhook", "yaml", "name: x\nnotify:\n  on: completed\n  command: ./notify.sh\n  webhook: https://hooks.example.com/$HOOK_PATH\n" + steps, nil},
		{"defaults give the command", "yaml", "name: x\ndefaults:\n  notify: {command: ./notify.sh}\nnotify: {on: [dead]}\n" + steps, nil},
		{"events", "yaml", "name: x\nnotify:\n  on: [faild, finished, failed, failed, waiting_on_human]\n  command: n\n" + steps,
			[]string{
				`3:8 notify.on: unknown event "faild" (did you mean "failed"?)` + notifyEvents,
				`3:15 notify.on: unknown event "finished"` + notifyEvents,
				`3:33 notify.on: "failed" is listed twice`,
			}},
		{"no events", "yaml", "name: x\nnotify: {on: [], command: n}\n" + steps,
			[]string{`2:10 notify.on is empty: give at least one of waiting_on_human, failed, budget_exceeded, completed, dead`}},
		{"no notifier", "yaml", "name: x\ndefaults:\n  notify: {timeout: 3s}\nnotify: {on: [failed]}\n" + steps,
			[]string{`4:1 notify: give a command, a webhook or both`}},
		{"empty", "yaml", "name: x\nnotify: {}\n" + steps,
			[]string{`2:1 notify is empty: give a command, a webhook or both`}},
		{"bad values", "yaml", "name: x\nnotify:\n  command: \" \"\n  webhook: ftp://example.com/x\n  timeout: 0s\ndefaults:\n  notify:\n    webhook: http://x/$1\n    timeout: 1h\n  max_items: 3\n" + steps,
			[]string{
				`3:12 notify.command is empty`,
				`4:12 notify.webhook: want an http or https URL`,
				`5:12 notify.timeout: must be positive, got 0s`,
				`8:14 notify.webhook: a $ must start a variable, $NAME or ${NAME}, with NAME of letters, digits and _, not starting with a digit`,
				`9:14 notify.timeout: 1h is longer than 5m0s; a run that ends waits for its notifications`,
			}},
		{"more bad webhooks", "yaml", "name: x\nnotify:\n  webhook: hooks.slack.com/services/x\n  timeout: soon\ndefaults:\n  notify: {webhook: \"${HOOK\"}\n" + steps,
			[]string{
				`3:12 notify.webhook: want an http or https URL`,
				`4:12 notify.timeout: invalid duration "soon" (want e.g. 90s, 30m, 1h30m, 2d)`,
				`6:21 notify.webhook: ${ without a closing }`,
			}},
		{"unknown key", "yaml", "name: x\nnotify: {comand: n, webhook: \"https://h.example/x\"}\n" + steps,
			[]string{`2:10 unknown key "comand" (did you mean "command"?)`}},

		{"webhook", "hcl", "name = \"x\"\nnotify {\n  webhook = \"$${SLACK_WEBHOOK_URL}\"\n}\nstep \"s\" {\n  run = \"r\"\n}\n", nil},
		{"rules", "hcl", "name = \"x\"\nnotify {\n  on      = [\"complete\"]\n  webhook = \"${SLACK_WEBHOOK_URL}\"\n}\ndefaults {\n  notify {}\n}\nstep \"s\" {\n  run = \"r\"\n}\n",
			[]string{
				`3:14 notify.on: unknown event "complete" (did you mean "completed"?)` + notifyEvents,
				`4:16 webhook: must be a literal value, not a reference (expressions are strings; templates use {{ }})`,
				`7:3 notify is empty: give a command, a webhook or both`,
			}},
	})
}

// TestNotifyTwins loads notify blocks of the workflow and its defaults
// written in both formats: the models and digests are equal, and the
// workflow's keys win over the defaults'.
func TestNotifyTwins(t *testing.T) {
	y, h := loadTwins(t, "testdata/notify/notify")
	wantLine := map[string]int{"yaml": 7, "hcl": 11}
	for _, w := range []*config.Workflow{y, h} {
		n := w.Notify
		want := &config.Notify{On: []string{"waiting_on_human", "budget_exceeded", "completed"}, Command: "./scripts/notify.sh",
			Webhook: "${SLACK_WEBHOOK_URL}", Timeout: 5e9, Pos: n.Pos}
		if diff := cmp.Diff(want, n); diff != "" {
			t.Errorf("%s: notify (-want +got):\n%s", w.Format, diff)
		}
		if n.Pos.Line != wantLine[w.Format] || n.Pos.Col != 1 {
			t.Errorf("%s: notify at %d:%d, want %d:1", w.Format, n.Pos.Line, n.Pos.Col, wantLine[w.Format])
		}
		if !slices.Equal(w.Secrets, []string{"SLACK_WEBHOOK_URL"}) || !config.IsSecretName("SLACK_WEBHOOK_URL", w.Secrets) {
			t.Errorf("%s: secrets %v, want the webhook's variable", w.Format, w.Secrets)
		}
		if !n.Notifies("completed") || n.Notifies("failed") || n.Notifies("dead") {
			t.Errorf("%s: Notifies disagrees with On %v", w.Format, n.On)
		}
	}
}

// TestNotifyDefaults: without on, the events that want a person; without
// timeout, ten seconds; a webhook variable already secret is not listed
// again; no notify at all leaves the spec, and so digests, as they were.
func TestNotifyDefaults(t *testing.T) {
	w := parse(t, "yaml", "name: x\nsecrets: [HOOK]\nnotify: {webhook: \"https://h.example/$HOOK/${DEPLOY_TOKEN}\"}\nsteps:\n  - {id: s, run: r}\n")
	want := &config.Notify{On: config.DefaultNotifyOn, Webhook: "https://h.example/$HOOK/${DEPLOY_TOKEN}", Timeout: config.DefaultNotifyTimeout, Pos: w.Notify.Pos}
	if diff := cmp.Diff(want, w.Notify); diff != "" {
		t.Errorf("notify (-want +got):\n%s", diff)
	}
	if !slices.Equal(w.Secrets, []string{"HOOK"}) {
		t.Errorf("secrets %v, want [HOOK] once", w.Secrets)
	}
	var none *config.Notify
	if none.Notifies("failed") {
		t.Error("no notify notifies")
	}
	plain := parse(t, "yaml", "name: x\nsteps:\n  - {id: s, run: r}\n")
	if spec, _ := plain.Spec(); strings.Contains(string(spec), `"notify"`) {
		t.Errorf("spec of a workflow without notify has it:\n%s", spec)
	}
}

// TestNotifyDigest: every key of notify is part of the workflow's
// meaning; moving it from the defaults to the workflow is not.
func TestNotifyDigest(t *testing.T) {
	base := "name: x\nnotify: {on: [failed], command: n, webhook: \"https://h.example/a\", timeout: 3s}\nsteps:\n  - {id: s, run: r}\n"
	edits := map[string][2]string{
		"on":      {"on: [failed]", "on: [completed]"},
		"command": {"command: n", "command: m"},
		"webhook": {"/a\"", "/b\""},
		"timeout": {"timeout: 3s", "timeout: 4s"},
	}
	d := parse(t, "yaml", base).Digest()
	for name, e := range edits {
		src := strings.Replace(base, e[0], e[1], 1)
		if src == base {
			t.Fatalf("%s: edit %q not found", name, e[0])
		}
		if parse(t, "yaml", src).Digest() == d {
			t.Errorf("%s: digest unchanged by %q", name, e[1])
		}
	}
	moved := strings.Replace(base, "notify:", "defaults:\n  notify:", 1)
	if parse(t, "yaml", moved).Digest() != d {
		t.Error("notify under defaults has another digest than the same notify of the workflow")
	}
}
