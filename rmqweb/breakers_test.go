package rmqweb_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

// A breaker opened in another process of the namespace shows on the topics
// page and the topic's page, with the process; once that process stops, it
// shows no more.
func TestPagesShowWhereTheBreakerIsOpen(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := seed(t, b)
		worker, err := rmq.New(b.Redis, rmq.WithNamespace(c.Namespace()), rmq.WithRetryBackoff(rmq.NoBackoff))
		require.NoError(t, err)
		require.NoError(t, worker.Subscribe("orders", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
			return errors.New("payment service down")
		}), rmq.WithBreaker(rmq.Breaker{FailureRatio: 0.5, MinCalls: 3, OpenFor: time.Minute})))
		done := make(chan error, 1)
		go func() { done <- worker.Start(ctx) }()
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				require.NoError(t, worker.Close(context.Background()))
				require.NoError(t, <-done)
			}
		}
		t.Cleanup(stop)
		var open []rmq.ProcessBreaker
		require.Eventually(t, func() bool {
			open, err = c.OpenBreakers(ctx, "orders")
			return err == nil && len(open) == 1
		}, 15*time.Second, 50*time.Millisecond, "the worker's breaker opens and is shared")

		base, hc := dashboard(t, c, rmqweb.Options{})
		code, page := get(t, hc, base)
		require.Equal(t, http.StatusOK, code)
		row := regexp.MustCompile(`(?s)topic\?t=orders".*?</tr>`).FindString(page)
		assert.Contains(t, row, `<span class="breaker">breaker open in 1 process</span>`)
		other := regexp.MustCompile(`(?s)topic\?t=renders".*?</tr>`).FindString(page)
		assert.NotContains(t, other, "breaker open")

		code, page = get(t, hc, base+"topic?t=orders")
		require.Equal(t, http.StatusOK, code)
		assert.Regexp(t, `Breaker now</span><span class="value small"><span class="breaker">breaker open in 1 process</span>`, page)
		assert.Contains(t, page, "<code>"+html.EscapeString(open[0].Process)+"</code>", "the process, in the breakers table")
		code, page = get(t, hc, base+"topic?t=renders")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, page, "not open in any process")

		stop()
		code, page = get(t, hc, base+"topic?t=orders")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, page, "not open in any process", "the stopped process took its state away")
		assert.NotContains(t, page, `class="grid breakers"`)
	})
}
