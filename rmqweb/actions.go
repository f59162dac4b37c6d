package rmqweb

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/rmq-go/rmq"
)

// maxFormBytes bounds an action's form (a cancelled content is at most the
// client's content limit, 1 MiB by default, written out as Go-quoted text).
const maxFormBytes = 8 << 20

// act runs a write action: POST only, only when writes are allowed, only
// with the CSRF token; then back to the topic page with the outcome.
func (s *server) act(w http.ResponseWriter, r *http.Request, action string) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		s.fail(w, r, http.StatusMethodNotAllowed, "actions are POST forms")
		return
	}
	if !s.opts.AllowWrite {
		s.fail(w, r, http.StatusForbidden, "this dashboard is read-only")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "unreadable form: "+err.Error())
		return
	}
	if !s.csrfValid(r) {
		s.log.Warn("rmqweb: an action without a valid CSRF token was refused", "action", action, "remote", r.RemoteAddr)
		s.fail(w, r, http.StatusForbidden, "missing or invalid CSRF token: reload the page and try again")
		return
	}
	topic := r.PostFormValue("t")
	if status, msg := s.defined(r, topic); status != 0 {
		s.fail(w, r, status, msg)
		return
	}
	n, err := s.run(r, action, topic)
	var bad *badInput
	switch {
	case errors.As(err, &bad):
		s.fail(w, r, http.StatusBadRequest, bad.msg)
		return
	case errors.Is(err, rmq.ErrUnknownTopic), errors.Is(err, rmq.ErrInvalidTopic):
		s.fail(w, r, http.StatusNotFound, err.Error())
		return
	case errors.Is(err, rmq.ErrInvalidSlot), errors.Is(err, rmq.ErrEmptyContent), errors.Is(err, rmq.ErrContentTooLarge):
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		s.log.Error("rmqweb: action failed", "action", action, "topic", topic, "messages", n, "err", err)
		s.fail(w, r, http.StatusInternalServerError, partly(action, n)+err.Error())
		return
	}
	s.log.Info("rmqweb: action", "action", action, "topic", topic, "messages", n, "remote", r.RemoteAddr)
	back := url.Values{"t": {topic}, "done": {action}, "n": {strconv.FormatInt(n, 10)}}
	if slot := r.PostFormValue("slot"); slot != "" {
		back.Set("slot", slot)
	}
	redirect(w, "topic?"+back.Encode(), http.StatusSeeOther)
}

// partly says what a requeue or purge that failed did before (it goes
// slot by slot, a thousand messages a step; a large one may reach the
// request's timeout): "" when nothing moved.
func partly(action string, n int64) string {
	if n <= 0 {
		return ""
	}
	messages := count(n) + " dead messages"
	if n == 1 {
		messages = "1 dead message"
	}
	switch action {
	case "requeue":
		return "Requeued " + messages + " before it failed (run it again for the rest): "
	case "purge":
		return "Purged " + messages + " before it failed (run it again for the rest): "
	}
	return ""
}

// defined checks that topic is defined in Redis now, not only in the
// client's cache of definitions (which keeps a topic another process
// deleted): it returns 0, or the status and message to fail with.
func (s *server) defined(r *http.Request, topic string) (int, string) {
	topics, _, err := s.topics(r.Context())
	if err != nil {
		return http.StatusInternalServerError, s.readFailed("the topics", err)
	}
	for _, t := range topics {
		if t.Name == topic {
			return 0, ""
		}
	}
	return http.StatusNotFound, fmt.Sprintf("no topic %q in namespace %q", topic, s.c.Namespace())
}

// badInput is a form the action cannot use.
type badInput struct{ msg string }

func (e *badInput) Error() string { return e.msg }

// run performs action on topic with the form of r and returns how many
// messages it touched.
func (s *server) run(r *http.Request, action, topic string) (int64, error) {
	ctx := r.Context()
	switch action {
	case "requeue":
		var contents [][]byte
		if raw := r.PostFormValue("content"); raw != "" {
			c, err := base64.RawURLEncoding.DecodeString(raw)
			if err != nil {
				return 0, &badInput{"content is not URL-safe base64"}
			}
			contents = append(contents, c)
		} else if sum := r.PostFormValue("sum"); sum != "" {
			c, err := s.deadBySum(ctx, topic, -1, sum)
			if c == nil || err != nil {
				return 0, err
			}
			contents = append(contents, c)
		}
		return s.c.RequeueDead(ctx, topic, contents...)
	case "purge":
		if r.PostFormValue("confirm") != "yes" {
			return 0, &badInput{"tick the box to confirm the purge"}
		}
		return s.c.PurgeDead(ctx, topic)
	case "delete":
		slot, err := strconv.Atoi(r.PostFormValue("slot"))
		if err != nil {
			return 0, &badInput{"slot is not a number"}
		}
		c, err := base64.RawURLEncoding.DecodeString(r.PostFormValue("content"))
		if err != nil {
			return 0, &badInput{"content is not URL-safe base64"}
		}
		if sum := r.PostFormValue("sum"); len(c) == 0 && sum != "" {
			if c, err = s.deadBySum(ctx, topic, slot, sum); c == nil || err != nil {
				return 0, err
			}
		}
		if len(c) == 0 {
			return 0, &badInput{"the content of the dead message to delete is missing"}
		}
		ok, err := s.c.DeleteDead(ctx, topic, slot, c)
		return boolCount(ok), err
	case "pause":
		return 0, s.c.PauseTopic(ctx, topic)
	case "resume":
		return 0, s.c.ResumeTopic(ctx, topic)
	case "cancel":
		content := r.PostFormValue("content")
		if r.PostFormValue("quoted") == "1" {
			u, err := strconvUnquote(content)
			if err != nil {
				return 0, &badInput{fmt.Sprintf("content is not a Go-quoted string: %v", err)}
			}
			content = u
		}
		ok, err := s.c.Producer().Cancel(ctx, topic, []byte(content), r.PostFormValue("basis"))
		return boolCount(ok), err
	}
	return 0, &badInput{"unknown action " + strconv.Quote(action)}
}

// strconvUnquote reads a Go-quoted string, with or without its quotes.
func strconvUnquote(s string) (string, error) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		s = `"` + s + `"`
	}
	return strconv.Unquote(s)
}

func boolCount(ok bool) int64 {
	if ok {
		return 1
	}
	return 0
}

// notice returns the line that reports the outcome of the action that led
// to r (its done and n parameters), from a fixed set of phrasings.
func notice(r *http.Request) string {
	q := r.URL.Query()
	n, err := strconv.ParseInt(q.Get("n"), 10, 64)
	if err != nil || n < 0 {
		return ""
	}
	messages := count(n) + " dead messages"
	if n == 1 {
		messages = "1 dead message"
	}
	switch q.Get("done") {
	case "pause":
		return "Paused: no consumer of the namespace takes new messages of this topic (within a second); sends go on."
	case "resume":
		return "Resumed: what is overdue is delivered at once, in order."
	case "requeue":
		return "Requeued " + messages + " with fresh retries."
	case "purge":
		return "Purged " + messages + "."
	case "delete":
		if n == 0 {
			return "That dead message was already gone."
		}
		return "Deleted 1 dead message."
	case "cancel":
		if n == 0 {
			return "No pending message with that content waits in its slot (already delivered, or another slot basis?)."
		}
		return "Cancelled the pending message."
	}
	return ""
}
