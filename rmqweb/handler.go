// Package rmqweb is a web dashboard of an RMQ namespace, as an http.Handler
// to mount in any server:
//
//	mux.Handle("/rmq/", http.StripPrefix("/rmq", rmqweb.Handler(c, rmqweb.Options{})))
//
// Its pages are rendered on the server and read fully without JavaScript
// (it sends none): the topics with their backlogs, delivery rates and
// lateness; one topic's slots with a heat strip of their backlogs, owners,
// next messages due and dead messages; the workers. Charts are inline SVG;
// the style sheet is embedded; nothing is loaded from the network. Every
// link is relative, so the handler works under any prefix.
//
// Safety: the dashboard is read-only unless Options.AllowWrite is set; then
// each action (requeue, purge and delete dead messages, cancel a pending
// one, pause and resume a topic) is a POST form carrying a CSRF token, an
// HMAC of a cookie set by the dashboard under a key drawn when the handler
// is made; a POST without a valid token is refused with 403. With
// Options.BearerToken, every request
// needs that token, as an "Authorization: Bearer" header or through the
// login form, which sets an HTTP-only session cookie. Pages are sent with a
// Content-Security-Policy that allows no script at all.
package rmqweb

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/rmq-go/rmq"
)

// Options configure the dashboard. The zero value is a read-only dashboard
// without authentication: bind it to loopback or put it behind your own.
type Options struct {
	// Title heads every page; default "RMQ".
	Title string
	// AllowWrite enables the actions that change Redis: requeue, purge and
	// delete dead messages, cancel pending ones, pause and resume a topic.
	// Off by default.
	AllowWrite bool
	// BearerToken, when not empty, is required by every request except the
	// style sheet: as "Authorization: Bearer <token>", or once through the
	// login form, which then sets a session cookie (HTTP-only, SameSite
	// strict) valid until the handler is made again. Spaces and line
	// breaks around it are dropped (a token read from a file or a variable
	// with its newline), as they are around the one a request shows.
	BearerToken string
	// Logger receives failed Redis reads and every action taken; default
	// none.
	Logger *slog.Logger
	// Minutes is how many minutes of history the rates, charts and lateness
	// percentiles cover; default 15, at most 120 (the namespace keeps two
	// hours).
	Minutes int
	// Timeout bounds the Redis reads of one request; default 10 s.
	Timeout time.Duration
}

// Defaults of Options.
const (
	defaultTitle   = "RMQ"
	defaultMinutes = 15
	maxMinutes     = 120
	defaultTimeout = 10 * time.Second
)

// server is the dashboard's handler.
type server struct {
	c     *rmq.Client
	opts  Options
	log   *slog.Logger
	key   []byte // signs CSRF tokens and session cookies
	pages pages
}

// Handler returns the dashboard of c's namespace.
func Handler(c *rmq.Client, opts Options) http.Handler {
	if opts.Title == "" {
		opts.Title = defaultTitle
	}
	if t := strings.TrimSpace(opts.BearerToken); t != "" {
		opts.BearerToken = t // (one of spaces alone is kept: it never matches, and stays required)
	}
	if opts.Minutes <= 0 {
		opts.Minutes = defaultMinutes
	}
	opts.Minutes = min(opts.Minutes, maxMinutes)
	if opts.Timeout <= 0 {
		opts.Timeout = defaultTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand panics instead)
	return &server{c: c, opts: opts, log: log, key: key, pages: parsePages()}
}

// ServeHTTP implements http.Handler.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")

	if r.URL.Path == "" { // the mount point without its slash: relative links need it
		redirect(w, path.Base(strings.TrimSuffix(r.RequestURI, "?"+r.URL.RawQuery))+"/", http.StatusMovedPermanently)
		return
	}
	route := strings.TrimPrefix(r.URL.Path, "/")
	if strings.HasPrefix(route, "static/") {
		serveStatic(w, r, strings.TrimPrefix(route, "static/"))
		return
	}
	if !s.authorized(r) {
		if route == "login" && r.Method == http.MethodPost {
			s.login(w, r)
			return
		}
		s.askLogin(w, r, http.StatusUnauthorized, "")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.Timeout)
	defer cancel()
	r = r.WithContext(ctx)
	switch route {
	case "":
		s.get(w, r, s.topicsPage)
	case "topic":
		s.get(w, r, s.topicPage)
	case "workers":
		s.get(w, r, s.workersPage)
	case "login":
		if r.Method == http.MethodPost {
			s.login(w, r)
			return
		}
		redirect(w, "./", http.StatusSeeOther)
	case "requeue", "purge", "delete", "cancel", "pause", "resume":
		s.act(w, r, route)
	default:
		s.fail(w, r, http.StatusNotFound, "no such page")
	}
}

// redirect sends the browser to the relative URL to. Unlike http.Redirect
// it leaves to relative: the request's path lost the mount point's prefix,
// the browser's URL did not.
func redirect(w http.ResponseWriter, to string, status int) {
	w.Header().Set("Location", to)
	w.WriteHeader(status)
}

// get serves a page for GET and HEAD.
func (s *server) get(w http.ResponseWriter, r *http.Request, page func(http.ResponseWriter, *http.Request)) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.fail(w, r, http.StatusMethodNotAllowed, "pages are read with GET")
		return
	}
	page(w, r)
}

// render executes the named page into a buffer and sends it with status.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages.execute(&buf, name, data); err != nil {
		s.log.Error("rmqweb: rendering a page failed", "page", name, "err", err)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// fail sends an error page.
func (s *server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "error", errorPage{page: s.page(w, r, ""), Status: status, StatusText: http.StatusText(status), Message: msg})
}

// page returns the fields every page shows; nav names the current tab.
func (s *server) page(w http.ResponseWriter, r *http.Request, nav string) page {
	p := page{Title: s.opts.Title, Namespace: s.c.Namespace(), Nav: nav, AllowWrite: s.opts.AllowWrite,
		Minutes: s.opts.Minutes, Now: time.Now()}
	if s.opts.AllowWrite {
		p.CSRF = s.csrfToken(w, r)
	}
	return p
}

// page is what the layout shows on every page.
type page struct {
	Title, Namespace, Nav string
	AllowWrite            bool
	CSRF                  string // the token of this client's forms
	Minutes               int
	Now                   time.Time
	Notice                string // the outcome of the last action
	Errors                []string
}

// errorPage is an error's page.
type errorPage struct {
	page
	Status     int
	StatusText string
	Message    string
}

// readFailed logs a failed Redis read and returns the line a page shows.
func (s *server) readFailed(what string, err error) string {
	s.log.Warn("rmqweb: reading "+what+" failed", "err", err)
	return "Reading " + what + " failed: " + err.Error()
}

// topics returns the namespace's topics that this version can read, and a
// message for the definitions it cannot (rmq.ErrUnreadableTopic): those are
// left out, not a failure of every page.
func (s *server) topics(ctx context.Context) ([]rmq.Topic, []string, error) {
	topics, err := s.c.Topics(ctx)
	if errors.Is(err, rmq.ErrUnreadableTopic) {
		return topics, []string{s.readFailed("some topic definitions", err)}, nil
	}
	return topics, nil, err
}
