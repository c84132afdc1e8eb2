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
	"slices"
	"strings"

	"github.com/flow-run/flow/runner/ops"
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
		return Token{}, ops.Usage("--token %q: want NAME=SECRET", redactSecret(s))
	}
	if len(name) > 64 || strings.TrimFunc(name, func(r rune) bool {
		return r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._@-", r))
	}) != "" {
		return Token{}, ops.Usage("--token %s=...: a name is 1 to 64 letters, digits, '.', '_', '@' or '-'", name)
	}
	if len(secret) < minSecret {
		return Token{}, ops.Usage("--token %s=...: the secret must be at least %d characters", name, minSecret)
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
// carries one (except /login and the static assets); for a change,
// that the server is not read-only and then, under /api/, that it
// carries a token as an Authorization Bearer header (never the cookie,
// so that no other site's page can make a browser send it), else that
// it comes from this origin with the CSRF token of its browser. It
// also gives a browser without a CSRF cookie one. It answers and
// returns false when the request is refused.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	ctx := r.Context()
	api := strings.HasPrefix(r.URL.Path, "/api/")
	if len(s.tokens) == 0 {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if !loopbackHost(host) {
			http.Error(w, "this server answers only requests to a loopback address", http.StatusForbidden)
			return nil, false
		}
	} else if r.URL.Path != "/login" && !strings.HasPrefix(r.URL.Path, "/static/") {
		name, ok := s.authenticate(r, api && r.Method == http.MethodPost)
		if !ok {
			s.unauthorized(w, r, api)
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
		if s.readOnly {
			refuse(w, api, http.StatusForbidden, "this server is read-only")
			return nil, false
		}
		if api {
			name, ok := s.bearer(r)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="flow"`)
				refuse(w, true, http.StatusUnauthorized, "a change under /api/ needs an Authorization: Bearer header with a token of this server (the cookie of a browser is not accepted)")
				return nil, false
			}
			return r.WithContext(context.WithValue(ctx, whoKey, name)), true
		}
		switch {
		case !sameOrigin(r):
			http.Error(w, "403 forbidden: the request does not come from this server's pages", http.StatusForbidden)
			return nil, false
		case csrf == "" || !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(s.csrfToken(csrf))):
			http.Error(w, "403 forbidden: missing or wrong CSRF token; reload the page and try again", http.StatusForbidden)
			return nil, false
		}
	}
	if csrf == "" && !api {
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

// refuse answers a refused request: JSON under /api/, text otherwise.
func refuse(w http.ResponseWriter, api bool, code int, msg string) {
	if api {
		writeJSON(w, code, apiError{Error: msg, Code: code})
		return
	}
	http.Error(w, fmt.Sprintf("%d %s: %s", code, strings.ToLower(http.StatusText(code)), msg), code)
}

// unauthorized answers a request without a valid token: a page that
// says how to log in, or JSON under /api/.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, api bool) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="flow"`)
	if api {
		refuse(w, true, http.StatusUnauthorized, "this server needs a token: send Authorization: Bearer TOKEN")
		return
	}
	s.render(w, r, http.StatusUnauthorized, "message", &messageData{page: page{Title: "Log in"}, Back: "/",
		Text: "This server shows its runs to those who log in.\n\n" +
			"Open the login link flow serve printed when it started (…/login?code=…): it signs in this browser, and any other you open it in, until the server restarts.\n" +
			"With a token of your own (flow serve --token NAME=SECRET), open /login?token=SECRET once.\n" +
			"Scripts send Authorization: Bearer SECRET with every request."})
}

// authenticate returns the name of the token a request carries, as a
// Bearer header or (unless bearerOnly) the login cookie. Every token is
// compared, in constant time, so that the time taken says nothing of
// the secret.
func (s *Server) authenticate(r *http.Request, bearerOnly bool) (string, bool) {
	if h := r.Header.Get("Authorization"); h != "" || bearerOnly {
		return s.bearer(r)
	}
	c, err := r.Cookie(tokenCookie)
	if err != nil || c.Value == "" {
		return "", false
	}
	return s.match(c.Value, s.tokens)
}

// bearer returns the name of the token of a request's Authorization
// Bearer header: one of the tokens, or of the API tokens.
func (s *Server) bearer(r *http.Request) (string, bool) {
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(v) == "" {
		return "", false
	}
	return s.match(strings.TrimSpace(v), append(slices.Clip(s.tokens), s.apiTokens...))
}

// match returns the name of the token of tokens whose secret is given.
func (s *Server) match(given string, tokens []Token) (string, bool) {
	g := sha256.Sum256([]byte(given))
	name, found := "", 0
	for _, t := range tokens {
		h := sha256.Sum256([]byte(t.Secret))
		if subtle.ConstantTimeCompare(g[:], h[:]) == 1 && found == 0 {
			name, found = t.Name, 1
		}
	}
	return name, found == 1
}

// login checks ?token=SECRET, or ?code=CODE, the login code, sets the
// token as an HttpOnly, SameSite=Strict cookie and redirects to the
// list of runs; a wrong token or code is 401, with how to log in.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if len(s.tokens) == 0 {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	secret := r.URL.Query().Get("token")
	if code := r.URL.Query().Get("code"); code != "" {
		secret = s.useLoginCode(code)
	}
	if _, ok := s.match(secret, s.tokens); !ok || secret == "" {
		s.unauthorized(w, r, false)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: secret, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// revokeLogin stops the login code from signing more browsers in;
// those signed in stay so.
func (s *Server) revokeLogin(w http.ResponseWriter, r *http.Request) {
	s.loginMu.Lock()
	s.loginCode = ""
	s.loginMu.Unlock()
	s.message(w, r, http.StatusOK, "Login link revoked", "The login link no longer signs browsers in. Browsers signed in with it stay signed in until the server restarts.")
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

// useLoginCode returns the first token's secret for the login code,
// "" for a wrong or revoked code.
func (s *Server) useLoginCode(code string) string {
	s.loginMu.Lock()
	defer s.loginMu.Unlock()
	if s.loginCode == "" || len(s.tokens) == 0 || subtle.ConstantTimeCompare([]byte(code), []byte(s.loginCode)) != 1 {
		return ""
	}
	return s.tokens[0].Secret
}
