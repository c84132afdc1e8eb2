package serve

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/flow-run/flow/runner/core"
)

// Token is a secret that opens the server, and the name recorded as who
// acted with it.
type Token struct {
	Name   string
	Secret string
}

// minSecret is the shortest secret accepted.
const minSecret = 16

// maxForm bounds the body of a POST.
const maxForm = 1 << 20

// ParseToken reads a --token value, NAME=SECRET. The name is 1 to 64
// letters, digits, '.', '_', '@' or '-'; the secret is at least 16
// characters.
func ParseToken(s string) (Token, error) {
	name, secret, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return Token{}, core.Usage("--token %q: want NAME=SECRET", redactSecret(s))
	}
	if len(name) > 64 || strings.TrimFunc(name, func(r rune) bool {
		return r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._@-", r))
	}) != "" {
		return Token{}, core.Usage("--token %s=...: a name is 1 to 64 letters, digits, '.', '_', '@' or '-'", name)
	}
	if len(secret) < minSecret {
		return Token{}, core.Usage("--token %s=...: the secret must be at least %d characters", name, minSecret)
	}
	return Token{Name: name, Secret: secret}, nil
}

// redactSecret hides what follows the first '=' of a --token value.
func redactSecret(s string) string {
	if name, _, ok := strings.Cut(s, "="); ok {
		return name + "=..."
	}
	return "..."
}

// NewSecret returns a fresh random secret for a token.
func NewSecret() (string, error) {
	b, err := randomBytes(32)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func randomBytes(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("read random bytes: %w", err)
	}
	return b, nil
}

// IsLoopback reports whether a listen address (host:port) accepts
// connections from this machine only: its host is "localhost" or a
// loopback IP. An address without a host listens everywhere.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return loopbackHost(host)
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// The cookies the server sets.
const (
	tokenCookie = "flow_token"
	csrfCookie  = "flow_csrf"
)

type ctxKey int

const (
	whoKey ctxKey = iota
	csrfKey
)

// who is the name of who makes a request: its token's name, or "local"
// on a server without tokens.
func who(r *http.Request) string {
	if s, _ := r.Context().Value(whoKey).(string); s != "" {
		return s
	}
	return "local"
}

// admit checks a request before it is served: on a server without
// tokens, that its Host is a loopback name; on one with tokens, that it
// carries one (except /login); for a POST, that the server is not
// read-only, that it comes from this origin and that it carries the
// CSRF token of its browser. It also gives a browser without a CSRF
// cookie one. It answers and returns false when the request is refused.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	ctx := r.Context()
	if len(s.tokens) == 0 {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if !loopbackHost(host) {
			http.Error(w, "this server answers only requests to a loopback address", http.StatusForbidden)
			return nil, false
		}
	} else if r.URL.Path != "/login" {
		name, ok := s.authenticate(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="flow"`)
			http.Error(w, "401 unauthorized", http.StatusUnauthorized)
			return nil, false
		}
		ctx = context.WithValue(ctx, whoKey, name)
	}
	csrf := ""
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
		csrf = c.Value
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		switch {
		case s.readOnly:
			http.Error(w, "403 forbidden: this server is read-only", http.StatusForbidden)
			return nil, false
		case !sameOrigin(r):
			http.Error(w, "403 forbidden: the request does not come from this server's pages", http.StatusForbidden)
			return nil, false
		case csrf == "" || !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(s.csrfToken(csrf))):
			http.Error(w, "403 forbidden: missing or wrong CSRF token; reload the page and try again", http.StatusForbidden)
			return nil, false
		}
	}
	if csrf == "" {
		b, err := randomBytes(32)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return nil, false
		}
		csrf = base64.RawURLEncoding.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: csrf, Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	}
	return r.WithContext(context.WithValue(ctx, csrfKey, csrf)), true
}

// authenticate returns the name of the token a request carries, as a
// Bearer header or the login cookie. Every token is compared, in
// constant time, so that the time taken says nothing of the secret.
func (s *Server) authenticate(r *http.Request) (string, bool) {
	given := ""
	if h := r.Header.Get("Authorization"); h != "" {
		if v, ok := strings.CutPrefix(h, "Bearer "); ok {
			given = strings.TrimSpace(v)
		}
	} else if c, err := r.Cookie(tokenCookie); err == nil {
		given = c.Value
	}
	if given == "" {
		return "", false
	}
	return s.match(given)
}

// match returns the name of the token whose secret is given.
func (s *Server) match(given string) (string, bool) {
	g := sha256.Sum256([]byte(given))
	name, found := "", 0
	for _, t := range s.tokens {
		h := sha256.Sum256([]byte(t.Secret))
		if subtle.ConstantTimeCompare(g[:], h[:]) == 1 && found == 0 {
			name, found = t.Name, 1
		}
	}
	return name, found == 1
}

// login checks ?token=SECRET, sets it as an HttpOnly, SameSite=Strict
// cookie and redirects to the list of runs; a wrong token is 401.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if len(s.tokens) == 0 {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	secret := r.URL.Query().Get("token")
	if code := r.URL.Query().Get("code"); code != "" {
		secret = s.useLoginCode(code)
	}
	if _, ok := s.match(secret); !ok || secret == "" {
		http.Error(w, "401 unauthorized", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: secret, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// sameOrigin reports whether a request's Origin, or without one its
// Referer, is this server's origin. A request with neither is refused.
func sameOrigin(r *http.Request) bool {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Header.Get("Referer")
	}
	if src == "" || src == "null" {
		return false
	}
	u, err := url.Parse(src)
	if err != nil || !strings.EqualFold(u.Host, r.Host) {
		return false
	}
	// Behind a TLS-terminating proxy the request arrives over plain
	// HTTP while the page is https: the host decides, and the scheme
	// only has to be one of the two.
	return u.Scheme == scheme || u.Scheme == "https"
}

// csrfToken is the form token of a browser's CSRF cookie: an HMAC of it
// under the server's key, so that it cannot be made without the key.
func (s *Server) csrfToken(cookie string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(cookie))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfField is the CSRF token the forms of a page carry.
func (s *Server) csrfField(r *http.Request) string {
	c, _ := r.Context().Value(csrfKey).(string)
	if c == "" {
		return ""
	}
	return s.csrfToken(c)
}

// useLoginCode returns the first token's secret for the one-time login
// code, once; "" for a wrong or used code.
func (s *Server) useLoginCode(code string) string {
	s.loginMu.Lock()
	defer s.loginMu.Unlock()
	if s.loginCode == "" || len(s.tokens) == 0 || subtle.ConstantTimeCompare([]byte(code), []byte(s.loginCode)) != 1 {
		return ""
	}
	s.loginCode = ""
	return s.tokens[0].Secret
}
