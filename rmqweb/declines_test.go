package rmqweb_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

// releaser takes every slot it is given and hands it back when asked.
type releaser struct{}

func (releaser) Assigned(*coordinator.Lease)  {}
func (releaser) Revoked(l *coordinator.Lease) { l.Release() }

// A worker that declines slots (a Cluster master out of its reach) shows
// how many per topic among its flags.
func TestWorkersPageShowsDeclines(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := seed(t, b)
		require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "far", SlotAmount: 8, Type: rmq.Priority}))
		declines := coordinator.NewDeclines()
		declines.Set("far", []int{1, 5, 6})
		co := coordinator.NewRedis(b.Redis, coordinator.RedisConfig{WorkerID: "cut-off"})
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- co.Run(runCtx, coordinator.Member{Namespace: c.Namespace(), Declines: declines,
				Topics: []coordinator.TopicThreads{{Topic: "far", SlotAmount: 8, Threads: 1}}}, releaser{})
		}()
		t.Cleanup(func() {
			stop()
			require.NoError(t, <-done)
		})
		require.Eventually(t, func() bool {
			ws, err := c.Workers(ctx)
			return err == nil && len(ws) == 1 && len(ws[0].Declined["far"]) == 3
		}, 10*time.Second, 50*time.Millisecond, "the worker's description lists its declines")

		base, hc := dashboard(t, c, rmqweb.Options{})
		code, page := get(t, hc, base+"workers")
		require.Equal(t, http.StatusOK, code, page)
		assert.Contains(t, page, `<span class="flag declines"`)
		assert.Contains(t, page, `declines far: 3</span>`)

		declines.Set("far", nil)
		require.Eventually(t, func() bool {
			ws, err := c.Workers(ctx)
			return err == nil && len(ws) == 1 && len(ws[0].Declined) == 0
		}, 10*time.Second, 50*time.Millisecond, "the declines withdrawn")
		_, page = get(t, hc, base+"workers")
		assert.NotContains(t, page, `class="flag declines"`)
	})
}
