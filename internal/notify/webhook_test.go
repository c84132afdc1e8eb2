package notify

import (
	"slices"
	"strings"
	"testing"
)

func TestWebhookVars(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"https://hooks.slack.com/services/T/B/x", nil, ""},
		{"${SLACK_WEBHOOK_URL}", []string{"SLACK_WEBHOOK_URL"}, ""},
		{"https://h.example/$A/${B}/$A?x=1", []string{"A", "B"}, ""},
		{"https://h.example/$1", nil, "a $ must start a variable"},
		{"https://h.example/${}", nil, "a $ must start a variable"},
		{"${A", nil, "${ without a closing }"},
		{"$", nil, "a $ must start a variable"},
	}
	for _, tt := range tests {
		got, err := WebhookVars(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("WebhookVars(%q): %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("WebhookVars(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestCheckWebhook(t *testing.T) {
	for in, ok := range map[string]bool{
		"https://hooks.slack.com/services/T/B/x": true,
		"http://127.0.0.1:8080/hook":             true,
		"${HOOK}":                                true,
		"HTTPS://h.example/$PATH_PART":           true,
		"ftp://h.example/x":                      false,
		"h.example/x":                            false,
		"https:///nohost":                        false,
		"h.example/$X":                           false,
		"https://h.example/$9":                   false,
	} {
		if err := CheckWebhook(in); (err == nil) != ok {
			t.Errorf("CheckWebhook(%q) = %v, want ok %v", in, err, ok)
		}
	}
}

func TestExpandWebhook(t *testing.T) {
	env := map[string]string{"HOOK": "https://hooks.example.com/s3cr3t", "PART": "s3cr3t", "BAD": "not a url s3cr3t"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if u, err := ExpandWebhook("${HOOK}", getenv); err != nil || u != env["HOOK"] {
		t.Errorf("${HOOK}: %q, %v", u, err)
	}
	if u, err := ExpandWebhook("https://h.example/$PART/x", getenv); err != nil || u != "https://h.example/s3cr3t/x" {
		t.Errorf("$PART: %q, %v", u, err)
	}
	for in, want := range map[string]string{
		"${UNSET}/${NONE}": "$UNSET, $NONE is not set",
		"${BAD}":           "the value of $BAD: want an http or https URL",
		"$1":               "a $ must start a variable",
	} {
		_, err := ExpandWebhook(in, getenv)
		if err == nil || err.Error() != want && !strings.Contains(err.Error(), want) {
			t.Errorf("ExpandWebhook(%q): %v, want %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("ExpandWebhook(%q): error shows the value: %v", in, err)
		}
	}
}
