package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/google/go-cmp/cmp"
)

func TestIsSecretName(t *testing.T) {
	declared := []string{"DEPLOY_CREDENTIAL", "SENTRY_DSN"}
	tests := []struct {
		name string
		want bool
	}{
		{"DEPLOY_CREDENTIAL", true},
		{"deploy_credential", true},
		{"SENTRY_DSN", true},
		{"GITHUB_TOKEN", true},
		{"github_token", true},
		{"_TOKEN", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"API_KEY", true},
		{"CLIENT_SECRET", true},
		{"PASSWORD", true},
		{"DB_PASSWORD_FILE", true},
		{"MyPassword", true},
		{"TOKEN", false},
		{"KEY", false},
		{"TOKENS", false},
		{"KEYBOARD", false},
		{"SECRET_SAUCE", false},
		{"MONKEY", false},
		{"HOME", false},
		{"DEPLOY", false},
		{"SENTRY_DSN_URL", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := config.IsSecretName(tt.name, declared); got != tt.want {
			t.Errorf("IsSecretName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if config.IsSecretName("DEPLOY_CREDENTIAL", nil) {
		t.Error("an undeclared name that matches no pattern is secret")
	}
}

func TestSecrets(t *testing.T) {
	y := parse(t, "yaml", "name: x\nsecrets: [DEPLOY_CREDENTIAL, SENTRY_DSN]\nsteps:\n  - {id: a, run: a}\n")
	h := parse(t, "hcl", "name = \"x\"\nsecrets = [\"DEPLOY_CREDENTIAL\", \"SENTRY_DSN\"]\nstep \"a\" { run = \"a\" }\n")
	if want := []string{"DEPLOY_CREDENTIAL", "SENTRY_DSN"}; !slices.Equal(y.Secrets, want) {
		t.Errorf("Secrets = %v, want %v", y.Secrets, want)
	}
	if diff := cmp.Diff(y, h, ignorePositions); diff != "" {
		t.Errorf("YAML and HCL models differ (-yaml +hcl):\n%s", diff)
	}
	bare := parse(t, "yaml", "name: x\nsteps:\n  - {id: a, run: a}\n")
	if y.Digest() != h.Digest() || y.Digest() == bare.Digest() {
		t.Errorf("digests: yaml %s hcl %s bare %s", y.Digest(), h.Digest(), bare.Digest())
	}
	empty := parse(t, "yaml", "name: x\nsecrets: []\nsteps:\n  - {id: a, run: a}\n")
	if empty.Secrets != nil || empty.Digest() != bare.Digest() {
		t.Errorf("secrets: [] gives %#v and digest %s, want nil and %s", empty.Secrets, empty.Digest(), bare.Digest())
	}

	tests := []struct {
		name, format, src string
		line, col         int
		text              string
	}{
		{"yaml bad name", "yaml", "secrets: [OK, 9LIVES]\n", 2, 15, `secrets: "9LIVES" is not a valid variable name`},
		{"yaml dash", "yaml", "secrets:\n  - DEPLOY-KEY\n", 3, 5, `"DEPLOY-KEY" is not a valid`},
		{"yaml twice", "yaml", "secrets: [A, A]\n", 2, 14, `"A" is declared twice`},
		{"yaml not a list", "yaml", "secrets: A\n", 2, 10, "secrets: want a list"},
		{"yaml mapping item", "yaml", "secrets: [{A: 1}]\n", 2, 11, "secrets: want a string, got a mapping"},
		{"yaml typo", "yaml", "secret: [A]\n", 2, 1, `did you mean "secrets"`},
		{"hcl bad name", "hcl", "secrets = [\"OK\", \"a b\"]\n", 2, 18, `secrets: "a b" is not a valid variable name`},
		{"hcl not a list", "hcl", "secrets = \"A\"\n", 2, 11, "secrets: want a list"},
		{"hcl twice", "hcl", "secrets = [\"A\", \"A\"]\n", 2, 17, `"A" is declared twice`},
		{"hcl typo", "hcl", "secret = [\"A\"]\n", 2, 1, `did you mean "secrets"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var src string
			if tt.format == "yaml" {
				src = "name: x\n" + tt.src + "steps: [{id: a, run: a}]\n"
			} else {
				src = "name = \"x\"\n" + tt.src + "step \"a\" { run = \"a\" }\n"
			}
			d := oneDiag(t, tt.format, src)
			if d.Pos.Line != tt.line || d.Pos.Col != tt.col || !strings.Contains(d.Message, tt.text) {
				t.Errorf("got %d:%d %q, want %d:%d %q", d.Pos.Line, d.Pos.Col, d.Message, tt.line, tt.col, tt.text)
			}
		})
	}
}
