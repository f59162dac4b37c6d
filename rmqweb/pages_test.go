package rmqweb_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

// The three pages show the namespace, with user data escaped, no script,
// and links that stay under the mount point.
func TestPagesShowTheNamespace(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		c := seed(t, b)
		base, hc := dashboard(t, c, rmqweb.Options{Title: "Shop <queues>"})

		code, page := get(t, hc, base)
		require.Equal(t, http.StatusOK, code, page)
		noScript(t, page)
		assert.Contains(t, page, "<title>Topics · Shop &lt;queues&gt;</title>")
		for _, name := range []string{"orders", "renders", "reminders"} {
			assert.Contains(t, page, `href="topic?t=`+name+`"`)
		}
		assert.Regexp(t, `(?s)topic\?t=orders".*?<td>Priority</td>\s*<td class="num">8</td>\s*<td class="num">3</td>`, page)
		assert.Regexp(t, `(?s)topic\?t=renders".*?<td class="num has-dead">2</td>`, page)
		assert.Contains(t, page, `<svg class="chart"`)
		checkLinks(t, hc, base, page)

		code, page = get(t, hc, base+"topic?t=orders&slot="+itoa(rmq.SlotIndex([]byte(orders[2]), 8)))
		require.Equal(t, http.StatusOK, code, page)
		noScript(t, page)
		assert.Contains(t, page, `&#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;`, "markup in a content is shown as text")
		assert.Contains(t, page, `<svg class="heat"`)
		assert.Equal(t, 8, strings.Count(page, `<rect x=`), "one heat cell per slot")
		assert.Contains(t, page, "read-only")
		assert.NotContains(t, page, `method="post"`, "no forms on a read-only dashboard")
		checkLinks(t, hc, base, page)

		hot := rmq.SlotIndex([]byte("order-a"), 8)
		code, page = get(t, hc, base+"topic?t=orders&slot="+itoa(hot))
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, page, "Next messages due in slot "+itoa(hot))
		assert.Contains(t, page, `&#34;order-a&#34;`)

		code, page = get(t, hc, base+"topic?t=renders")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, page, `&#34;poison-1&#34;`)
		assert.Contains(t, page, `&#34;bin\x00\xff&lt;b&gt;&#34;`, "binary content escaped Go-style, then HTML-escaped")

		code, page = get(t, hc, base+"topic?t=reminders")
		require.Equal(t, http.StatusOK, code)
		assert.Regexp(t, `(?s)&#34;later&#34;.*?in 59m5\ds`, page, "the due time, relative")

		code, page = get(t, hc, base+"workers")
		require.Equal(t, http.StatusOK, code, page)
		noScript(t, page)
		assert.Contains(t, page, "No process consumes this namespace now.")
	})
}

var linkAttr = regexp.MustCompile(`(?:href|action|src)="([^"]*)"`)

// checkLinks checks that every link of page is relative and that the GET
// ones resolve under base and answer 200.
func checkLinks(t *testing.T, hc *http.Client, base, page string) {
	t.Helper()
	b, err := url.Parse(base)
	require.NoError(t, err)
	for _, m := range linkAttr.FindAllStringSubmatch(page, -1) {
		raw := strings.ReplaceAll(m[1], "&amp;", "&")
		require.False(t, strings.HasPrefix(raw, "/") || strings.Contains(raw, "://"), "link %q is not relative", raw)
		u := b.ResolveReference(&url.URL{Path: strings.Split(strings.Split(raw, "#")[0], "?")[0]})
		require.True(t, strings.HasPrefix(u.Path, "/rmq/"), "link %q leaves the mount point", raw)
		if strings.Contains(m[0], "action=") {
			continue
		}
		code, _ := get(t, hc, b.ResolveReference(mustParse(t, raw)).String())
		assert.Equal(t, http.StatusOK, code, "link %q", raw)
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

func itoa(n int) string { return strconv.Itoa(n) }

// Routing: the mount point without its slash redirects, unknown pages and
// topics are 404, HEAD works, other methods are refused, headers forbid
// scripts.
func TestRouting(t *testing.T) {
	c := seed(t, testenv.Mini(t))
	base, hc := dashboard(t, c, rmqweb.Options{})

	// Mounted without a mux, the mount point itself reaches the handler.
	bare := httptest.NewServer(http.StripPrefix("/rmq", rmqweb.Handler(c, rmqweb.Options{})))
	defer bare.Close()
	resp, err := hc.Get(bare.URL + "/rmq?x=1")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	assert.Equal(t, "rmq/", resp.Header.Get("Location"), "relative, so that it works behind any prefix")

	code, _ := get(t, hc, base+"nope")
	assert.Equal(t, http.StatusNotFound, code)
	code, page := get(t, hc, base+"topic?t=nope")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, page, `no topic &#34;nope&#34;`)
	code, _ = get(t, hc, base+"static/style.css")
	assert.Equal(t, http.StatusOK, code)
	code, _ = get(t, hc, base+"static/nope.css")
	assert.Equal(t, http.StatusNotFound, code)

	resp, err = hc.Head(base)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	csp := resp.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none'")
	assert.NotContains(t, csp, "script-src")
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))

	req, _ := http.NewRequest(http.MethodDelete, base+"topic?t=orders", nil)
	resp, err = hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	code, _ = get(t, hc, base+"requeue")
	assert.Equal(t, http.StatusMethodNotAllowed, code, "actions are POST only")
}
