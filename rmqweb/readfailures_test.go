package rmqweb_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

// failAfter is a redis hook that, once on, fails every command but the
// reads of the topics' definitions.
type failAfter struct {
	on     atomic.Bool
	topics string
}

var errInjected = errors.New("injected Redis failure")

func (f *failAfter) allowed(cmd redis.Cmder) bool {
	return !f.on.Load() || slices.ContainsFunc(cmd.Args(), func(a any) bool { s, ok := a.(string); return ok && s == f.topics })
}

func (f *failAfter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (f *failAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !f.allowed(cmd) {
			cmd.SetErr(errInjected)
			return errInjected
		}
		return next(ctx, cmd)
	}
}

func (f *failAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if !f.allowed(cmd) {
				for _, c := range cmds {
					c.SetErr(errInjected)
				}
				return errInjected
			}
		}
		return next(ctx, cmds)
	}
}

// failingDashboard serves the dashboard of a seeded namespace on miniredis
// through a client whose commands fail, but for the topics' definitions,
// once hook is on.
func failingDashboard(t *testing.T) (*rmq.Client, *failAfter, string, *http.Client) {
	t.Helper()
	b := testenv.Mini(t)
	seeded := seed(t, b)
	rc := redis.NewClient(&redis.Options{Addr: b.Mini.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	hook := &failAfter{topics: rdb.NewKeyspace(seeded.Namespace()).Topics()}
	rc.AddHook(hook)
	c, err := rmq.New(rc, rmq.WithNamespace(seeded.Namespace()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	base, hc := dashboard(t, c, rmqweb.Options{})
	return c, hook, base, hc
}

// When the topic's figures cannot be read, its page says so where they go
// and does not show them as zeros and empty lists ("No dead messages." for
// a topic whose dead messages could not be read).
func TestTopicPageDoesNotShowUnreadFiguresAsEmpty(t *testing.T) {
	c, hook, base, hc := failingDashboard(t)

	_, err := c.Topics(context.Background()) // the client's first reads (no backlog: it would be cached)
	require.NoError(t, err)

	hook.on.Store(true) // the topics' definitions still read: the page renders
	code, page := get(t, hc, base+"topic?t=renders")
	require.Equal(t, http.StatusOK, code)
	require.True(t, strings.Contains(page, "<h1>renders"), "the topic's page")
	require.True(t, strings.Contains(page, "injected Redis failure"), "the failed reads are reported")
	assert.False(t, strings.Contains(page, "No dead messages."), "the dead messages were not read")
	assert.False(t, strings.Contains(page, "Nothing waits in slot"), "the next messages were not read")
	if m := deadCard.FindStringSubmatch(page); m != nil {
		assert.NotEqual(t, "0", strings.TrimSpace(m[1]), "the dead count was not read")
	}
}

// The topics' list says where a topic's breaker states could not be read,
// as it says of its flow control; it showed nothing, as for a breaker
// closed everywhere.
func TestTopicsPageSaysABreakerStateIsUnread(t *testing.T) {
	_, hook, base, hc := failingDashboard(t)

	code, page := get(t, hc, base)
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, page, `breaker <span class="error">unreadable</span>`, "read: no word")
	hook.on.Store(true)
	code, page = get(t, hc, base)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 3, strings.Count(page, `breaker <span class="error">unreadable</span>`), "one per topic")
}
