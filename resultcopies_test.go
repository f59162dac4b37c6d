package rmq_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Backlog's result is the caller's; changing it
// does not change what another caller reads from the cache.
func TestBacklogResultsAreTheCallers(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "t", 2, rmq.Priority)
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("a"), Priority: 20}))
		b1, err := c.Backlog(ctx, "t")
		require.NoError(t, err)
		orig := append([]rmq.SlotStats(nil), b1.Slots...)
		done := make(chan struct{})
		go func() {
			defer close(done)
			b2, err := c.Backlog(ctx, "t")
			if err == nil {
				_ = b2.Slots[0].Store + b2.Slots[1].Store
			}
		}()
		b1.Slots[0].Store, b1.Slots[1].Store = 999, 999 // the caller's own copy
		<-done
		b3, err := c.Backlog(ctx, "t")
		require.NoError(t, err)
		require.Equal(t, orig, b3.Slots, "a caller's change to its Backlog showed in another's")
	})
}

// A TopicMetrics result is the
// caller's; changing its histogram's bounds changes no later result (nor
// the package's LatenessBuckets).
func TestTopicMetricsBoundsAreTheCallers(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "t", 1, rmq.Priority)
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("a"), Priority: 20}))
		want := append([]float64(nil), rmq.LatenessBuckets...)
		defer copy(rmq.LatenessBuckets, want)
		tm := c.TopicMetrics()
		require.Len(t, tm, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = c.TopicMetrics()[0].Lateness.Quantile(0.5)
		}()
		tm[0].Lateness.Bounds[0] = 42 // the caller's own copy
		<-done
		require.Equal(t, want, c.TopicMetrics()[0].Lateness.Bounds, "a caller's change to its TopicMetrics showed in the next")
	})
}
