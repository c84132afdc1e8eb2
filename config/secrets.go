package config

import "strings"

// IsSecretName reports whether the environment variable name is a
// secret (docs/security.md, "Secrets"): one of the names declared in a workflow's
// secrets:, or a name that matches one of the default patterns *_TOKEN,
// *_KEY, *_SECRET and *PASSWORD*. Both are matched case-insensitively,
// so that github_token and Deploy_Password are secrets too: hiding a
// value that was not secret costs less than printing one that was.
func IsSecretName(name string, declared []string) bool {
	for _, d := range declared {
		if strings.EqualFold(name, d) {
			return true
		}
	}
	u := strings.ToUpper(name)
	for _, suffix := range []string{"_TOKEN", "_KEY", "_SECRET"} {
		if strings.HasSuffix(u, suffix) {
			return true
		}
	}
	return strings.Contains(u, "PASSWORD")
}
