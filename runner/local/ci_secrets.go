package local

import (
	"slices"
	"strings"

	"github.com/flow-run/flow/config"
)

// SecretValues returns the values of the secrets in environ, as Secrets
// hides them: the variables the workflow declares in secrets: and those
// whose names match the default patterns (config.IsSecretName), each
// value once, in the order of environ. A CI front end registers them
// with its log masker before it prints anything.
func SecretValues(wf *config.Workflow, environ []string) []string {
	var values []string
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" && config.IsSecretName(k, wf.Secrets) && !slices.Contains(values, v) {
			values = append(values, v)
		}
	}
	return values
}
