package notify

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// A webhook is written as a URL, or with environment variables in it
// ($NAME or ${NAME}) that are read when a notification is sent, so that
// the URL's secret part lives only in the environment (docs/notifications.md).

// WebhookVars returns the names of the environment variables a webhook
// reads, in order, each once. Its error says what is wrong with a $ that
// starts no variable.
func WebhookVars(webhook string) ([]string, error) {
	var names []string
	_, err := expand(webhook, func(name string) (string, bool) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return "", true
	})
	return names, err
}

// CheckWebhook checks a webhook as written in a workflow: each $ starts a
// variable, and what is written before the first variable (all of it,
// when there is none) begins an http or https URL with a host. A webhook
// that starts with a variable is checked when it is sent.
func CheckWebhook(webhook string) error {
	if _, err := WebhookVars(webhook); err != nil {
		return err
	}
	lit, _, hasVar := strings.Cut(webhook, "$")
	if !hasVar {
		return checkURL(webhook)
	}
	if lit == "" {
		return nil
	}
	if l := strings.ToLower(lit); !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
		return fmt.Errorf("want an http or https URL")
	}
	return nil
}

// ExpandWebhook returns the URL a webhook names, its variables read
// with getenv. The error names the variables, never their values.
func ExpandWebhook(webhook string, getenv func(string) (string, bool)) (string, error) {
	var unset []string
	u, err := expand(webhook, func(name string) (string, bool) {
		v, ok := getenv(name)
		if !ok || v == "" {
			unset = append(unset, name)
		}
		return v, true
	})
	if err != nil {
		return "", err
	}
	if len(unset) > 0 {
		return "", fmt.Errorf("$%s is not set", strings.Join(unset, ", $"))
	}
	if err := checkURL(u); err != nil {
		vars, _ := WebhookVars(webhook)
		if len(vars) > 0 {
			return "", fmt.Errorf("the value of $%s: %w", strings.Join(vars, ", $"), err)
		}
		return "", err
	}
	return u, nil
}

// checkURL checks that u is an absolute http or https URL with a host.
// Its error never holds u, which may hold a secret.
func checkURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("want an http or https URL")
	}
	return nil
}

// expand replaces $NAME and ${NAME} in s with what lookup returns.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i+1:]
		var name string
		if strings.HasPrefix(s, "{") {
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return "", fmt.Errorf("${ without a closing }")
			}
			name, s = s[1:end], s[end+1:]
		} else {
			n := 0
			for n < len(s) && isNameByte(s[n], n == 0) {
				n++
			}
			name, s = s[:n], s[n:]
		}
		if !validName(name) {
			return "", fmt.Errorf("a $ must start a variable, $NAME or ${NAME}, with NAME of letters, digits and _, not starting with a digit")
		}
		v, _ := lookup(name)
		b.WriteString(v)
	}
}

func validName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isNameByte(name[i], i == 0) {
			return false
		}
	}
	return true
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
}
