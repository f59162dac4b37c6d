package browsertest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqweb"
)

// serve mounts the dashboard of c under /rmq/ on a loopback listener and
// returns its URL.
func serve(t *testing.T, c *rmq.Client, opts rmqweb.Options) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/rmq/", http.StripPrefix("/rmq", rmqweb.Handler(c, opts)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/rmq/"
}

// browser starts a headless Chromium with a fresh profile and returns the
// context of its first tab; the browser stops when t ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", "new"),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "starting chromium") // no timeout here: it would end the browser
	return ctx
}

// do runs steps in the tab of ctx within a minute.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// text returns the text of the element sel selects.
func text(t *testing.T, ctx context.Context, sel chromedp.CSS) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	require.NoError(t, err, "text of %s", sel)
	return s
}

// screenshot saves PNGs of the page as dir/name.png (the whole page) and
// dir/name-view.png (what the 1280×900 window shows; the README's come
// from these).
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	view, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	full, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	for file, png := range map[string][]byte{name + ".png": full, name + "-view.png": view} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), png, 0o644))
		t.Logf("screenshot %s (%d bytes)", filepath.Join(dir, file), len(png))
	}
}

// TestDashboardInChromium reads the pages, requeues a dead message from
// its form and checks the result in Redis, checks that a POST without the
// CSRF token is refused, and reads the pages again with JavaScript off.
func TestDashboardInChromium(t *testing.T) {
	r := realRedis(t)
	ctx := browser(t)
	ns := namespace(t, r, "shop")
	c := seed(t, r, ns)
	base := serve(t, c, rmqweb.Options{AllowWrite: true})
	dir := artifacts(t)
	rctx := context.Background()

	// The topics page lists every topic.
	do(t, ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`table.topics`)))
	topics := text(t, ctx, `table.topics tbody`)
	for _, name := range []string{hotTopic, liveTopic, deadTopic, breakerTopic} {
		assert.Contains(t, topics, name)
	}
	// The failing topic's row says its breaker is open in this process; no other row does.
	flows, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(
		Array.from(document.querySelectorAll('table.topics tbody tr'), tr => [tr.querySelector('a.topic').textContent, tr.querySelector('td.flow').innerText]))`))
	require.NoError(t, err)
	for name, flow := range flows {
		if name == breakerTopic {
			assert.Contains(t, flow, "breaker open in 1 process")
		} else {
			assert.NotContains(t, flow, "breaker open", "only %s's breaker is open", breakerTopic)
		}
	}
	assert.Len(t, flows, 4)
	screenshot(t, ctx, dir, "topics")

	// The failing topic's page: where its breaker is open now, and the process.
	do(t, ctx, chromedp.Navigate(base+"topic?t="+breakerTopic), chromedp.WaitVisible(chromedp.CSS(`table.breakers`)))
	assert.Contains(t, text(t, ctx, `section.flow`), "Breaker now\nbreaker open in 1 process")
	assert.Contains(t, text(t, ctx, `table.breakers tbody`), "open")
	screenshot(t, ctx, dir, "topic-breaker")

	// The hot topic's page: its heat strip, the hot slot's messages first.
	do(t, ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`table.topics`)),
		chromedp.Click(chromedp.CSS(`a.topic[href="topic?t=`+hotTopic+`"]`)), chromedp.WaitVisible(chromedp.CSS(`svg.heat`)))
	assert.Contains(t, text(t, ctx, `h1`), hotTopic)
	assert.Equal(t, "Next messages due in slot "+strconv.Itoa(rmq.SlotIndex([]byte("customer-hot"), 64)), text(t, ctx, `#next`),
		"the hottest slot is shown first")
	screenshot(t, ctx, dir, "topic")

	// The dead topic: find the poison message and requeue it from its row.
	do(t, ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(`table.topics`)),
		chromedp.Click(chromedp.CSS(`a.topic[href="topic?t=`+deadTopic+`"]`)), chromedp.WaitVisible(chromedp.CSS(`table.deadlist`)))
	dead := text(t, ctx, `table.deadlist tbody`)
	assert.Contains(t, dead, `"poison-1"`)
	assert.Contains(t, dead, `"render sku:7 <b>bold</b>"`, "markup shown as text")
	assert.Contains(t, dead, `"bin\x00\xff\x1b"`, "bytes escaped Go-style")
	screenshot(t, ctx, dir, "topic-dead")

	requeue := `//table[contains(@class,"deadlist")]//tr[.//code[text()='"` + poison + `"']]//button[contains(@class,"requeue")]`
	do(t, ctx, chromedp.Click(requeue), chromedp.WaitVisible(chromedp.CSS(`p.notice`)))
	assert.Equal(t, "Requeued 1 dead message with fresh retries.", text(t, ctx, `p.notice`))
	store, deadKey := deadKeys(ns, poison)
	score, err := r.ZScore(rctx, store, poison).Result()
	require.NoError(t, err, "the requeued message is back in its slot's store")
	assert.Equal(t, float64(16), score, "due at once with 16 retries")
	assert.ErrorIs(t, r.ZScore(rctx, deadKey, poison).Err(), redis.Nil, "and no longer dead")

	// A POST without the CSRF token is refused: strip the token from the
	// purge form, tick its box, submit it.
	do(t, ctx,
		chromedp.Evaluate[chromedp.Void](`document.querySelector('form[action="purge"] input[name="csrf"]').remove()`),
		chromedp.Click(chromedp.CSS(`form[action="purge"] input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(`button.purge`)),
		chromedp.WaitVisible(chromedp.CSS(`p.error`)))
	refused := text(t, ctx, `main`)
	assert.Contains(t, refused, "Forbidden")
	assert.Contains(t, refused, "CSRF")
	st, err := c.Stats(rctx, deadTopic)
	require.NoError(t, err)
	assert.Equal(t, int64(len(deadContents)-1), st.Dead, "nothing was purged")
	resp, err := http.PostForm(base+"purge", url.Values{"t": {deadTopic}, "confirm": {"yes"}})
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "nor from outside the browser")

	// With JavaScript off the pages read the same, and the forms still work.
	_, err = chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
	require.NoError(t, err)
	for _, page := range []struct{ path, want string }{
		{"", hotTopic}, {"topic?t=" + liveTopic, `"reminder tomorrow"`}, {"workers", "redis"},
	} {
		do(t, ctx, chromedp.Navigate(base+page.path), chromedp.WaitReady(chromedp.CSS(`footer`)))
		html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS(`main`)))
		require.NoError(t, err)
		assert.Contains(t, html, page.want, page.path)
	}
	screenshot(t, ctx, dir, "workers")
	do(t, ctx,
		chromedp.Navigate(base+"topic?t="+deadTopic),
		chromedp.WaitReady(chromedp.CSS(`button.requeue-all`)),
		chromedp.Click(chromedp.CSS(`button.requeue-all`)),
		chromedp.WaitReady(chromedp.CSS(`p.notice`)))
	assert.Equal(t, "Requeued 2 dead messages with fresh retries.", text(t, ctx, `p.notice`), "a form posted with JavaScript off")
	st, err = c.Stats(rctx, deadTopic)
	require.NoError(t, err)
	assert.Zero(t, st.Dead)
	assert.Equal(t, int64(len(deadContents)), st.Store)
	screenshot(t, ctx, dir, "topic-nojs")
}
