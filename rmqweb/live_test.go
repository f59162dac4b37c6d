package rmqweb_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

// With a consumer at work, the pages show its rates, lateness, slots and
// the worker itself.
func TestPagesShowTrafficAndWorkers(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := seed(t, b)
		require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "fast", SlotAmount: 4, Type: rmq.FixedTime}))
		delivered := make(chan struct{}, 100)
		require.NoError(t, c.Subscribe("fast", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
			delivered <- struct{}{}
			return nil
		}), rmq.WithThreads(2)))
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		t.Cleanup(func() {
			require.NoError(t, c.Close(context.Background()))
			require.NoError(t, <-done)
		})
		for i := range 20 { // each due shortly after its send, however slow the sends
			due := time.Now().Add(50 * time.Millisecond)
			require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "fast", Content: fmt.Appendf(nil, "m%d", i), FixedTime: due}))
		}
		for range 20 {
			select {
			case <-delivered:
			case <-time.After(20 * time.Second):
				t.Fatal("the messages were not delivered")
			}
		}
		require.Eventually(t, func() bool { // shared metrics are flushed every 2 s
			m, _, err := c.NamespaceMetrics(ctx, "fast", 1)
			return err == nil && m.Delivered == 20
		}, 10*time.Second, 100*time.Millisecond)

		base, hc := dashboard(t, c, rmqweb.Options{})
		code, page := get(t, hc, base)
		require.Equal(t, http.StatusOK, code)
		row := regexp.MustCompile(`(?s)topic\?t=fast".*?</tr>`).FindString(page)
		require.NotEmpty(t, row)
		assert.Regexp(t, `20 delivered/s|[0-9.]+ delivered/s, 20 sent`, row, "the chart's minute")
		assert.Regexp(t, `<td class="num">\d[^<]*s / \d[^<]*s / \d[^<]*s</td>`, row, "lateness percentiles")

		var workers []rmq.Worker
		require.Eventually(t, func() bool {
			var err error
			workers, err = c.Workers(ctx)
			return err == nil && len(workers) == 1 && workers[0].OwnedSlots["fast"] == 4
		}, 10*time.Second, 100*time.Millisecond, "the worker claims its slots")
		code, page = get(t, hc, base+"workers")
		require.Equal(t, http.StatusOK, code)
		host, _ := os.Hostname()
		assert.Contains(t, page, "<code>"+workers[0].ID+"</code>")
		assert.Contains(t, page, "<td>"+host+"</td>")
		assert.Contains(t, page, "<td>fast: 2</td>")
		assert.Contains(t, page, "<td>fast: 4</td>")
		assert.Contains(t, page, `class="flag leader"`)
		assert.Regexp(t, `<td>[0-9.]+(µs|ms|s) ago</td>`, page, "the heartbeat's age")

		code, page = get(t, hc, base+"topic?t=fast")
		require.Equal(t, http.StatusOK, code)
		assert.Equal(t, 4*2, strings.Count(page, "<code>"+workers[0].ID+"</code>"), "every slot assigned to and held by the worker")
	})
}
