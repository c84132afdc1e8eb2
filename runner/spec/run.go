package spec

import (
	"fmt"
	"strings"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/redact"
	"github.com/flow-run/flow/runner/record"
)

// NewRunID returns a new run id: the UTC time and a random suffix, so
// that ids sort by age.
func NewRunID(now time.Time) string {
	var b [3]byte
	if _, err := record.RandRead(b[:]); err != nil {
		return now.UTC().Format("20060102-150405.000000")
	}
	return fmt.Sprintf("%s-%x", now.UTC().Format("20060102-150405"), b)
}

// EnvironMap turns KEY=value pairs (os.Environ()) into a map; a later
// pair wins.
func EnvironMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Secrets returns a Redactor for the values of the secrets in environ:
// the variables the workflow declares in secrets: and those whose names
// match the default patterns (config.IsSecretName). The values are read
// from the environment each time a runner starts, and never written.
func Secrets(wf *config.Workflow, environ []string) *redact.Redactor {
	var values []string
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" && config.IsSecretName(k, wf.Secrets) {
			values = append(values, v)
		}
	}
	return redact.New(values...)
}
