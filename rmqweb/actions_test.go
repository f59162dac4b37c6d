package rmqweb_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

// stats returns a topic's counts or fails t.
func stats(t *testing.T, c *rmq.Client, topic string) rmq.Stats {
	t.Helper()
	st, err := c.Stats(context.Background(), topic)
	require.NoError(t, err)
	return st
}

// action posts a form with the page's CSRF token, expects the redirect back
// to the topic, follows it and returns the page.
func action(t *testing.T, hc *http.Client, base, name string, form url.Values) string {
	t.Helper()
	_, page := get(t, hc, base+"topic?t="+form.Get("t"))
	form.Set("csrf", csrfOf(t, page))
	resp, body := post(t, hc, base+name, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	loc := resp.Header.Get("Location")
	require.Regexp(t, `^topic\?`, loc, "a relative redirect back to the topic")
	code, page := get(t, hc, base+loc)
	require.Equal(t, http.StatusOK, code)
	return page
}

// The write actions work from their forms and report what they did.
func TestActions(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := seed(t, b)
		base, hc := dashboard(t, c, rmqweb.Options{AllowWrite: true})

		_, page := get(t, hc, base+"topic?t=renders")
		noScript(t, page)
		assert.Contains(t, page, "read-write")
		assert.Contains(t, page, `value="`+base64.RawURLEncoding.EncodeToString([]byte(deadRender[3]))+`"`, "the exact bytes ride in the form")

		page = action(t, hc, base, "requeue", url.Values{"t": {"renders"}, "content": {base64.RawURLEncoding.EncodeToString([]byte(deadRender[3]))}})
		assert.Contains(t, page, "Requeued 1 dead message with fresh retries.")
		st := stats(t, c, "renders")
		assert.Equal(t, int64(1), st.Dead)
		assert.Equal(t, int64(1), st.Slots[3].Store, "the binary message is back in its slot's store")

		page = action(t, hc, base, "delete", url.Values{"t": {"renders"}, "slot": {"1"}, "content": {base64.RawURLEncoding.EncodeToString([]byte("poison-1"))}})
		assert.Contains(t, page, "Deleted 1 dead message.")
		assert.Zero(t, stats(t, c, "renders").Dead)
		page = action(t, hc, base, "delete", url.Values{"t": {"renders"}, "slot": {"1"}, "content": {base64.RawURLEncoding.EncodeToString([]byte("poison-1"))}})
		assert.Contains(t, page, "That dead message was already gone.")

		_, err := c.PurgeDead(ctx, "renders")
		require.NoError(t, err)
		page = action(t, hc, base, "requeue", url.Values{"t": {"renders"}})
		assert.Contains(t, page, "Requeued 0 dead messages")

		page = action(t, hc, base, "cancel", url.Values{"t": {"reminders"}, "content": {"later"}, "basis": {"k"}})
		assert.Contains(t, page, "Cancelled the pending message.")
		assert.Zero(t, stats(t, c, "reminders").Store)
		page = action(t, hc, base, "cancel", url.Values{"t": {"orders"}, "content": {"order-a"}, "basis": {"elsewhere"}})
		assert.Contains(t, page, "No pending message with that content")
		page = action(t, hc, base, "cancel", url.Values{"t": {"orders"}, "content": {strconv.Quote(orders[2])}, "quoted": {"1"}})
		assert.Contains(t, page, "Cancelled the pending message.")
		assert.Equal(t, int64(2), stats(t, c, "orders").Store)
	})
}

// Purge needs its confirmation box; bad forms are 400, unknown topics 404.
func TestActionsCheckTheirForms(t *testing.T) {
	b := testenv.Mini(t)
	c := seed(t, b)
	base, hc := dashboard(t, c, rmqweb.Options{AllowWrite: true})
	_, page := get(t, hc, base+"topic?t=renders")
	token := csrfOf(t, page)

	resp, body := post(t, hc, base+"purge", url.Values{"csrf": {token}, "t": {"renders"}})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, "confirm")
	assert.Equal(t, int64(2), stats(t, c, "renders").Dead)
	resp, body = post(t, hc, base+"purge", url.Values{"csrf": {token}, "t": {"renders"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	assert.Zero(t, stats(t, c, "renders").Dead)
	_, page = get(t, hc, base+resp.Header.Get("Location"))
	assert.Contains(t, page, "Purged 2 dead messages.")

	for _, tc := range []struct {
		action string
		form   url.Values
		code   int
	}{
		{"delete", url.Values{"t": {"renders"}, "slot": {"x"}, "content": {"YQ"}}, http.StatusBadRequest},
		{"delete", url.Values{"t": {"renders"}, "slot": {"9"}, "content": {"YQ"}}, http.StatusBadRequest},
		{"delete", url.Values{"t": {"renders"}, "slot": {"1"}, "content": {"not base64!"}}, http.StatusBadRequest},
		{"requeue", url.Values{"t": {"nope"}}, http.StatusNotFound},
		{"cancel", url.Values{"t": {"orders"}, "content": {`"\q"`}, "quoted": {"1"}}, http.StatusBadRequest},
		{"cancel", url.Values{"t": {"orders"}, "content": {""}}, http.StatusBadRequest},
	} {
		tc.form.Set("csrf", token)
		resp, body := post(t, hc, base+tc.action, tc.form)
		assert.Equal(t, tc.code, resp.StatusCode, "%s %v: %s", tc.action, tc.form, body)
	}
}

// Without AllowWrite every action is refused, whatever the token.
func TestReadOnlyRefusesActions(t *testing.T) {
	c := seed(t, testenv.Mini(t))
	base, hc := dashboard(t, c, rmqweb.Options{})
	for _, a := range []string{"requeue", "purge", "delete", "cancel"} {
		resp, body := post(t, hc, base+a, url.Values{"t": {"renders"}, "confirm": {"yes"}})
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, a)
		assert.Contains(t, body, "read-only")
	}
	assert.Equal(t, int64(2), stats(t, c, "renders").Dead)
}

// A POST without the token of its cookie is refused with 403.
func TestActionsNeedTheCSRFToken(t *testing.T) {
	c := seed(t, testenv.Mini(t))
	base, hc := dashboard(t, c, rmqweb.Options{AllowWrite: true})
	_, page := get(t, hc, base+"topic?t=renders")
	token := csrfOf(t, page)
	form := func(csrf string) url.Values {
		return url.Values{"t": {"renders"}, "csrf": {csrf}}
	}

	resp, body := post(t, hc, base+"requeue", form(""))
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "no token")
	assert.Contains(t, body, "CSRF")
	wrong := token[:len(token)-1] + "0"
	if wrong == token {
		wrong = token[:len(token)-1] + "1"
	}
	resp, _ = post(t, hc, base+"requeue", form(wrong))
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a wrong token")

	fresh := &http.Client{CheckRedirect: hc.CheckRedirect} // the token, but not the cookie it belongs to
	resp, _ = post(t, fresh, base+"requeue", form(token))
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a token without its cookie")

	otherBase, other := dashboard(t, c, rmqweb.Options{AllowWrite: true}) // another handler, another key
	_, otherPage := get(t, other, otherBase+"topic?t=renders")
	resp, _ = post(t, hc, base+"requeue", form(csrfOf(t, otherPage)))
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "another dashboard's token")
	assert.Equal(t, int64(2), stats(t, c, "renders").Dead, "nothing was requeued")

	resp, _ = post(t, hc, base+"requeue", form(token))
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "the right token")
	assert.Zero(t, stats(t, c, "renders").Dead)
}

// With a bearer token, every request needs it, in a header or through the
// login form's session cookie; the style sheet is public.
func TestBearerToken(t *testing.T) {
	c := seed(t, testenv.Mini(t))
	base, hc := dashboard(t, c, rmqweb.Options{BearerToken: "s3cret"})

	code, page := get(t, hc, base)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, page, `<form method="post" action="login"`)
	assert.NotContains(t, page, "orders")
	code, _ = get(t, hc, base+"topic?t=orders")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = get(t, hc, base+"static/style.css")
	assert.Equal(t, http.StatusOK, code)

	for header, want := range map[string]int{"Bearer s3cret": 200, "Bearer wrong": 401, "Basic s3cret": 401} {
		req, _ := http.NewRequest(http.MethodGet, base, nil)
		req.Header.Set("Authorization", header)
		resp, err := (&http.Client{}).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, header)
		if want == 401 {
			assert.Equal(t, `Bearer realm="rmq"`, resp.Header.Get("WWW-Authenticate"))
		}
	}

	resp, page := post(t, hc, base+"login", url.Values{"token": {"nope"}})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, page, "That token is not the dashboard&#39;s.")
	resp, _ = post(t, hc, base+"login", url.Values{"token": {"s3cret"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "./", resp.Header.Get("Location"))
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "rmqweb_session" {
			session = ck
		}
	}
	require.NotNil(t, session)
	assert.True(t, session.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, session.SameSite)
	assert.NotContains(t, session.Value, "s3cret")
	code, page = get(t, hc, base)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, "orders")
}

// Pause and resume work from the topic page's buttons, change Redis for the
// whole namespace, and show on both pages; a read-only dashboard has no
// buttons and refuses the POST.
func TestPauseAndResumeButtons(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := seed(t, b)
		require.NoError(t, c.SetRateLimit(ctx, "orders", rmq.RateLimit{PerSecond: 500, Burst: 50}))
		base, hc := dashboard(t, c, rmqweb.Options{AllowWrite: true})

		_, page := get(t, hc, base+"topic?t=orders")
		assert.Contains(t, page, "500/s, burst 50")
		assert.Contains(t, page, `action="pause"`)
		assert.NotContains(t, page, `action="resume"`)

		page = action(t, hc, base, "pause", url.Values{"t": {"orders"}})
		assert.Contains(t, page, "Paused: no consumer of the namespace takes new messages")
		assert.True(t, stats(t, c, "orders").Paused, "paused in Redis")
		assert.Contains(t, page, `action="resume"`)
		_, list := get(t, hc, base)
		assert.Contains(t, list, `<span class="paused">paused</span>, ≤ 500/s`)

		page = action(t, hc, base, "resume", url.Values{"t": {"orders"}})
		assert.Contains(t, page, "Resumed")
		assert.False(t, stats(t, c, "orders").Paused, "resumed in Redis")
		assert.Contains(t, page, `action="pause"`)

		ro, rhc := dashboard(t, c, rmqweb.Options{})
		_, page = get(t, rhc, ro+"topic?t=orders")
		assert.NotContains(t, page, `action="pause"`)
		resp, _ := post(t, rhc, ro+"pause", url.Values{"t": {"orders"}})
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		assert.False(t, stats(t, c, "orders").Paused, "a read-only dashboard changed nothing")
	})
}
