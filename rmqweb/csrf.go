package rmqweb

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"net/http"
)

// csrfCookie identifies a browser to the CSRF check: a random value set by
// the first page it reads. A form's token is the HMAC of that value under
// the handler's key, which a page of another site can neither read nor
// compute.
const csrfCookie = "rmqweb_csrf"

// csrfField is the form field that carries the token.
const csrfField = "csrf"

// csrfToken returns the token of r's forms, setting the cookie it derives
// from when r has none.
func (s *server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 32 {
		return s.sign("csrf", c.Value)
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	v := hex.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: v}) // later calls for this request agree
	return s.sign("csrf", v)
}

// csrfValid reports whether POST r carries the token of its cookie.
func (s *server) csrfValid(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || len(c.Value) != 32 {
		return false
	}
	return hmac.Equal([]byte(r.PostFormValue(csrfField)), []byte(s.sign("csrf", c.Value)))
}
