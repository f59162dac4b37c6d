package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// lockedBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var servingAt = regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/) \(([^)]*)\)`)

// startWeb runs "rmq web" with args until the test ends, and returns the
// dashboard's URL and the announced mode.
func startWeb(t *testing.T, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"web", "-listen", "127.0.0.1:0"}, args...), strings.NewReader(""), &out, &errs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case c := <-code:
			assert.Equal(t, exitOK, c, "rmq web after Ctrl-C; stderr:\n%s", errs.String())
		case <-time.After(10 * time.Second):
			t.Error("rmq web did not stop")
		}
	})
	var m []string
	require.Eventually(t, func() bool {
		m = servingAt.FindStringSubmatch(out.String())
		return m != nil
	}, 10*time.Second, 10*time.Millisecond, "rmq web did not announce its address; stderr:\n%s", errs.String())
	return m[1], m[2]
}

// fetch GETs u with an optional bearer token and returns status and body.
func fetch(t *testing.T, u, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// "rmq web" serves the dashboard on loopback, read-only by default.
func TestWeb(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		seed(t, b, ns)
		base, mode := startWeb(t, addrFlag(b), "-namespace", ns, "-title", "Seeded")
		assert.Equal(t, "read-only", mode)
		code, page := fetch(t, base, "")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, page, "<title>Topics · Seeded</title>")
		assert.Contains(t, page, `href="topic?t=renders"`)
		code, page = fetch(t, base+"topic?t=renders", "")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, page, "&#34;poison-1&#34;")
		resp, err := http.PostForm(base+"requeue", url.Values{"t": {"renders"}})
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}

// -token guards every page; -allow-write turns the forms on.
func TestWebWithTokenAndWrites(t *testing.T) {
	b := testenv.Mini(t)
	ns := testenv.Namespace(t, b)
	seed(t, b, ns)
	base, mode := startWeb(t, addrFlag(b), "-namespace", ns, "-allow-write", "-token", "t0ken")
	assert.Equal(t, "read-write, token required", mode)
	code, _ := fetch(t, base, "")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, page := fetch(t, base+"topic?t=renders", "t0ken")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, `action="purge"`)

	t.Setenv("RMQ_WEB_TOKEN", "from-env")
	base, mode = startWeb(t, addrFlag(b), "-namespace", ns)
	assert.Equal(t, "read-only, token required", mode)
	code, _ = fetch(t, base, "from-env")
	assert.Equal(t, http.StatusOK, code)
}

// Writes on an address other hosts reach need a token; bad addresses are
// usage errors.
func TestWebRefusesUnsafeSetups(t *testing.T) {
	t.Setenv("RMQ_WEB_TOKEN", "")
	code, _, stderr := rmqCmd(t, "", "web", "-listen", "0.0.0.0:0", "-allow-write")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "-allow-write on the non-loopback address 0.0.0.0:0 needs -token")
	code, _, stderr = rmqCmd(t, "", "web", "-listen", ":0", "-allow-write")
	assert.Equal(t, exitUsage, code, "an empty host listens on every interface")
	assert.Contains(t, stderr, "-allow-write on the non-loopback address :0 needs -token")
	code, _, stderr = rmqCmd(t, "", "web", "-listen", "nocolon")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `-listen "nocolon"`)
	code, _, _ = rmqCmd(t, "", "web", "extra")
	assert.Equal(t, exitUsage, code)

	out := mustRun(t, "", "help", "web")
	for _, flag := range []string{"-listen ADDR", "-allow-write", "-token TOKEN", "$RMQ_WEB_TOKEN", `(default "127.0.0.1:8080")`} {
		assert.Contains(t, out, flag)
	}
	assert.Regexp(t, `(?m)^  rmq web \[flags\]\s+serve the web dashboard`, mustRun(t, "", "help"))

	for addr, want := range map[string]bool{"127.0.0.1:80": true, "localhost:1": true, "[::1]:8080": true,
		"0.0.0.0:80": false, ":8080": false, "10.1.2.3:80": false} {
		got, err := isLoopback(addr)
		require.NoError(t, err)
		assert.Equal(t, want, got, addr)
	}
}
