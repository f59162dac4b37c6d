package rmqweb_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

// Seeded data: pending orders (one with markup), dead renders (one binary),
// a reminder due in an hour.
var (
	orders     = []string{"order-a", "order-b", "<script>alert(1)</script>"}
	deadRender = map[int]string{1: "poison-1", 3: "bin\x00\xff<b>"}
)

// seed returns a client of a fresh namespace of b holding the seeded data.
func seed(t *testing.T, b testenv.Backend) *rmq.Client {
	t.Helper()
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	for _, tp := range []rmq.Topic{{Name: "orders", SlotAmount: 8, Type: rmq.Priority},
		{Name: "renders", SlotAmount: 4, Type: rmq.RangeMerge}, {Name: "reminders", SlotAmount: 2, Type: rmq.FixedTime}} {
		require.NoError(t, c.DefineTopic(ctx, tp))
	}
	p := c.Producer()
	for _, o := range orders {
		require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "orders", Content: []byte(o), Priority: 20}))
	}
	require.NoError(t, p.Send(ctx, rmq.FixedTimeMessage{Topic: "reminders", Content: []byte("later"), FixedTime: time.Now().Add(time.Hour), SlotBasis: "k"}))
	keys := rdb.NewKeyspace(ns)
	for slot, content := range deadRender {
		require.NoError(t, b.Redis.ZAdd(ctx, keys.Slot("renders", slot).Dead, redis.Z{Score: float64(time.Now().UnixMilli()), Member: content}).Err())
	}
	return c
}

// dashboard serves the dashboard of c under /rmq/ and returns its base URL
// ("…/rmq/") and a client that keeps cookies and does not follow redirects.
func dashboard(t *testing.T, c *rmq.Client, opts rmqweb.Options) (string, *http.Client) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/rmq/", http.StripPrefix("/rmq", rmqweb.Handler(c, opts)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return srv.URL + "/rmq/", hc
}

// get fetches base+path and returns the status and body.
func get(t *testing.T, hc *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := hc.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// post sends a form to u and returns the response (body read and closed).
func post(t *testing.T, hc *http.Client, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := hc.PostForm(u, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// csrfOf returns the CSRF token of the forms in page.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfInput.FindStringSubmatch(page)
	require.NotNil(t, m, "no CSRF token in the page")
	return m[1]
}

// noScript fails t if page carries any script.
func noScript(t *testing.T, page string) {
	t.Helper()
	lower := strings.ToLower(page)
	require.NotContains(t, lower, "<script", "pages carry no script (user data must be escaped)")
	require.NotContains(t, lower, " onclick=")
	require.NotContains(t, lower, "javascript:")
}
