package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A wake-up's due time is a time of the Redis clock, which judges
// due-ness: a consumer whose own clock runs 10 s behind the server's
// delivers a FixedTime message at its due time by the server's clock, not
// when its own clock reaches it. The wake-up's timer ran on the consumer's
// clock: 10 s late with an idle sweep of a minute (a Cluster's default),
// 2 s with the single node's 3 s sweep.
func TestWakeUpsFollowTheRedisClock(t *testing.T) {
	t.Parallel() // mostly waiting, on a server of its own
	srv := testenv.StartRedisClockAhead(t, 10*time.Second)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	rt, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	require.InDelta(t, 10, time.Until(rt).Seconds(), 1, "the server's clock runs 10 s ahead")

	c, err := rmq.New(rdb, rmq.WithNamespace("skew"), rmq.WithCoordinator(coordinator.NewLocal()),
		rmq.WithIdleSweep(time.Minute))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	define(t, c, "ft", 1, rmq.FixedTime)
	rec := newRecorder()
	require.NoError(t, c.Subscribe("ft", rec))
	run(t, c)
	require.Eventually(t, func() bool {
		m := c.TopicMetrics()
		return len(m) == 1 && m[0].OwnedSlots == 1
	}, 10*time.Second, 10*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // the slot looks once, finds nothing, parks

	for i, in := range []time.Duration{time.Second, 1500 * time.Millisecond} {
		rt, err := rdb.Time(ctx).Result()
		require.NoError(t, err)
		require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "ft", Content: []byte{byte('a' + i)},
			FixedTime: rt.Add(in)}))
		m := rec.waitCalls(t, i+1, 30*time.Second)[i].msg
		late := m.Delivered.Sub(m.Due) // both by the server's clock
		t.Logf("due in %v by the server's clock: delivered %v after", in, late.Round(time.Microsecond))
		assert.GreaterOrEqual(t, late, time.Duration(0), "delivered before its due time")
		assert.Less(t, late, 500*time.Millisecond, "a wake-up's timer ran on the consumer's clock")
	}
}
