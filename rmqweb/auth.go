package rmqweb

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// sessionCookie holds the proof that the login form was given the bearer
// token: an HMAC of the token under the handler's key.
const sessionCookie = "rmqweb_session"

// authorized reports whether r may see the dashboard: always without a
// bearer token, else with the token in its Authorization header or the
// session cookie.
func (s *server) authorized(r *http.Request) bool {
	if s.opts.BearerToken == "" {
		return true
	}
	// The scheme is case-insensitive (RFC 7235).
	if scheme, auth, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(auth)), []byte(s.opts.BearerToken)) == 1
	}
	c, err := r.Cookie(sessionCookie)
	return err == nil && hmac.Equal([]byte(c.Value), []byte(s.session()))
}

// session is the session cookie's value.
func (s *server) session() string {
	return s.sign("session", s.opts.BearerToken)
}

// sign returns the hex HMAC-SHA256 of purpose and value under the
// handler's key.
func (s *server) sign(purpose, value string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(value))
	return hex.EncodeToString(m.Sum(nil))
}

// maxLoginBytes bounds the login form, which anyone may send.
const maxLoginBytes = 64 << 10

// loginPage is the login form.
type loginPage struct {
	page
	Failed string
}

// askLogin answers with the login form.
func (s *server) askLogin(w http.ResponseWriter, r *http.Request, status int, failed string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="rmq"`)
	s.render(w, r, status, "login", loginPage{page: s.page(w, r, ""), Failed: failed})
}

// login checks the token typed into the login form and sets the session
// cookie.
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if s.opts.BearerToken == "" {
		redirect(w, "./", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBytes)
	if err := r.ParseForm(); err != nil { // a URL-encoded form only: no multipart body is read
		s.askLogin(w, r, http.StatusBadRequest, "That form is not the login form.")
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.opts.BearerToken)) != 1 {
		s.log.Warn("rmqweb: a login failed", "remote", r.RemoteAddr)
		s.askLogin(w, r, http.StatusUnauthorized, "That token is not the dashboard's.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.session(), HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	redirect(w, "./", http.StatusSeeOther)
}
