package rmq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// pendingContents returns the contents of ms in order.
func pendingContents(ms []rmq.PendingMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Content)
	}
	return out
}

// NextDue lists a time topic's waiting messages by due time, retried and
// retry-waiting ones included, with their scores decoded.
func TestNextDueOnATimeTopic(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "fixed", 2, rmq.FixedTime)
		now := time.Now()
		p := c.Producer()
		require.NoError(t, p.Send(ctx, rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("in 2h"), FixedTime: now.Add(2 * time.Hour), SlotBasis: "k"}))
		require.NoError(t, p.Send(ctx, rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("in 1h"), FixedTime: now.Add(time.Hour), SlotBasis: "k"}))
		slot := rmq.SlotIndex([]byte("k"), 2)
		keys := rdb.NewKeyspace(c.Namespace()).Slot("fixed", slot)
		retryDue := now.Add(30 * time.Minute).UnixMilli()
		require.NoError(t, b.Redis.ZAdd(ctx, keys.Store, redis.Z{Score: 7, Member: "retried"}).Err())
		require.NoError(t, b.Redis.ZAdd(ctx, keys.Retry, redis.Z{Score: float64(retryDue*32 + 5), Member: "backing off"}).Err())

		got, err := c.NextDue(ctx, "fixed", slot, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"retried", "backing off", "in 1h", "in 2h"}, pendingContents(got))
		assert.True(t, got[0].Due.IsZero())
		assert.Equal(t, 7, got[0].RetriesLeft)
		assert.False(t, got[0].Retrying)
		assert.Equal(t, retryDue, got[1].Due.UnixMilli())
		assert.Equal(t, 5, got[1].RetriesLeft)
		assert.True(t, got[1].Retrying)
		assert.WithinDuration(t, now.Add(time.Hour), got[2].Due, 2*time.Millisecond)
		assert.Equal(t, rmq.MaxRetries, got[2].RetriesLeft)
		for _, m := range got {
			assert.Equal(t, "fixed", m.Topic)
			assert.Equal(t, slot, m.Slot)
		}

		got, err = c.NextDue(ctx, "fixed", slot, 2)
		require.NoError(t, err)
		assert.Equal(t, []string{"retried", "backing off"}, pendingContents(got))
		got, err = c.NextDue(ctx, "fixed", 1-slot, 10)
		require.NoError(t, err)
		assert.Empty(t, got)
	})
}

// NextDue lists a Priority topic's messages highest priority first, then
// retried ones, then those waiting out a backoff.
func TestNextDueOnAPriorityTopic(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "prio", 1, rmq.Priority)
		p := c.Producer()
		require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "prio", Content: []byte("low"), Priority: 20}))
		require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "prio", Content: []byte("high"), Priority: 100}))
		keys := rdb.NewKeyspace(c.Namespace()).Slot("prio", 0)
		require.NoError(t, b.Redis.ZAdd(ctx, keys.Store, redis.Z{Score: 3, Member: "retried"}).Err())
		require.NoError(t, b.Redis.ZAdd(ctx, keys.Retry, redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()*32 + 9), Member: "backing off"}).Err())

		got, err := c.NextDue(ctx, "prio", 0, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"high", "low", "retried", "backing off"}, pendingContents(got))
		assert.Equal(t, int64(100), got[0].Priority)
		assert.True(t, got[0].Due.IsZero())
		assert.Equal(t, int64(0), got[2].Priority)
		assert.Equal(t, 3, got[2].RetriesLeft)
		assert.Equal(t, 9, got[3].RetriesLeft)
		assert.True(t, got[3].Retrying)
	})
}

// DeleteDead removes exactly one dead message.
func TestDeleteDead(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "jobs", 4, rmq.Priority)
		keys := rdb.NewKeyspace(c.Namespace()).Slot("jobs", 3)
		require.NoError(t, b.Redis.ZAdd(ctx, keys.Dead, redis.Z{Score: 1, Member: "x"}, redis.Z{Score: 2, Member: "y\x00"}).Err())

		ok, err := c.DeleteDead(ctx, "jobs", 3, []byte("y\x00"))
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = c.DeleteDead(ctx, "jobs", 3, []byte("y\x00"))
		require.NoError(t, err)
		assert.False(t, ok, "already deleted")
		ok, err = c.DeleteDead(ctx, "jobs", 2, []byte("x"))
		require.NoError(t, err)
		assert.False(t, ok, "another slot")
		dead, err := c.DeadMessages(ctx, "jobs", 0)
		require.NoError(t, err)
		require.Len(t, dead, 1)
		assert.Equal(t, "x", string(dead[0].Content))
	})
}

// Slots outside the topic and unknown topics fail with their sentinels.
func TestSlotCallsRejectBadInput(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	c := newClient(t, b)
	define(t, c, "jobs", 4, rmq.Priority)
	for _, slot := range []int{-1, 4} {
		_, err := c.NextDue(ctx, "jobs", slot, 1)
		assert.ErrorIs(t, err, rmq.ErrInvalidSlot)
		_, err = c.DeleteDead(ctx, "jobs", slot, []byte("x"))
		assert.ErrorIs(t, err, rmq.ErrInvalidSlot)
	}
	_, err := c.NextDue(ctx, "nope", 0, 1)
	assert.ErrorIs(t, err, rmq.ErrUnknownTopic)
	_, err = c.DeleteDead(ctx, "nope", 0, []byte("x"))
	assert.ErrorIs(t, err, rmq.ErrUnknownTopic)
	got, err := c.NextDue(ctx, "jobs", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// fillDead puts n dead messages into slot of topic.
func fillDead(t *testing.T, b testenv.Backend, c *rmq.Client, topic string, slot, n int) {
	t.Helper()
	keys := rdb.NewKeyspace(c.Namespace()).Slot(topic, slot)
	zs := make([]redis.Z, n)
	for i := range zs {
		zs[i] = redis.Z{Score: float64(i), Member: fmt.Sprintf("d%d-%d", slot, i)}
	}
	require.NoError(t, b.Redis.ZAdd(context.Background(), keys.Dead, zs...).Err())
}

// The progress variants report each step, ending at the total.
func TestRequeueAndPurgeDeadReportProgress(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "jobs", 4, rmq.Priority)
		fillDead(t, b, c, "jobs", 1, 2500)
		fillDead(t, b, c, "jobs", 3, 10)

		var steps []rmq.DeadProgress
		n, err := c.RequeueDeadProgress(ctx, "jobs", func(p rmq.DeadProgress) { steps = append(steps, p) })
		require.NoError(t, err)
		assert.Equal(t, int64(2510), n)
		var done []int64
		for _, s := range steps {
			done = append(done, s.Done)
			assert.Equal(t, int64(2510), s.Total)
			assert.Equal(t, 4, s.Slots)
			assert.Equal(t, "jobs", s.Topic)
		}
		assert.Equal(t, []int64{1000, 2000, 2500, 2510}, done, "chunks of 1000, then the next slot")
		assert.Equal(t, 3, steps[len(steps)-1].Slot)
		st := stats(t, c, "jobs")
		assert.Equal(t, int64(2510), st.Store)
		assert.Zero(t, st.Dead)

		fillDead(t, b, c, "jobs", 0, 5)
		fillDead(t, b, c, "jobs", 2, 7)
		steps = nil
		n, err = c.PurgeDeadProgress(ctx, "jobs", func(p rmq.DeadProgress) { steps = append(steps, p) })
		require.NoError(t, err)
		assert.Equal(t, int64(12), n)
		require.Len(t, steps, 2)
		assert.Equal(t, rmq.DeadProgress{Topic: "jobs", Slot: 0, Slots: 4, Done: 5, Total: 12}, steps[0])
		assert.Equal(t, rmq.DeadProgress{Topic: "jobs", Slot: 2, Slots: 4, Done: 12, Total: 12}, steps[1])
		assert.Zero(t, stats(t, c, "jobs").Dead)
	})
}
