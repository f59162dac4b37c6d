package rmq_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

func topicMetrics(c *rmq.Client, topic string) rmq.TopicMetrics {
	for _, m := range c.TopicMetrics() {
		if m.Topic == topic {
			return m
		}
	}
	return rmq.TopicMetrics{}
}

func TestTopicMetricsCountDeliveriesAndLateness(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithRetryBackoff(rmq.NoBackoff))
		define(t, c, "fixed", 4, rmq.FixedTime)
		define(t, c, "other", 4, rmq.Priority)
		rec := newRecorder()
		rec.fail = func(m *rmq.Message) error {
			if string(m.Content) == "bad" {
				return errors.New("no")
			}
			return nil
		}
		require.NoError(t, c.Subscribe("fixed", rec, rmq.WithThreads(2)))
		run(t, c)
		due := func() time.Time { return time.Now().Add(50 * time.Millisecond) } // however slow the sends
		for i := range 5 {
			require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "fixed", Content: fmt.Appendf(nil, "m%d", i), FixedTime: due()}))
		}
		require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("bad"), FixedTime: due()}))
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "other", Content: []byte("x"), Priority: 20}))
		rec.waitCalls(t, 5+1+rmq.MaxRetries, 20*time.Second)
		eventually(t, 5*time.Second, "the dead message counted", func() bool { return topicMetrics(c, "fixed").Dead == 1 })

		m := topicMetrics(c, "fixed")
		assert.Equal(t, rmq.FixedTime, m.Type)
		assert.Equal(t, int64(6), m.Sent)
		assert.Equal(t, int64(5+1+rmq.MaxRetries), m.Delivered)
		assert.Equal(t, int64(rmq.MaxRetries), m.Redelivered)
		assert.Equal(t, int64(5), m.Committed)
		assert.Equal(t, int64(1+rmq.MaxRetries), m.Failed)
		assert.Equal(t, uint64(6), m.Lateness.Count, "first deliveries of a time topic")
		assert.Greater(t, m.Lateness.Quantile(0.99), time.Duration(0))
		assert.Less(t, m.Lateness.Quantile(0.5), 5*time.Second)
		assert.Equal(t, uint64(m.Delivered), m.ListenerDuration.Count)
		assert.Equal(t, 4, m.OwnedSlots, "every slot of the subscribed topic")
		o := topicMetrics(c, "other")
		assert.Equal(t, int64(1), o.Sent)
		assert.Zero(t, o.Delivered, "not subscribed here")
		assert.Zero(t, o.OwnedSlots)
	})
}

func TestBacklogCountsStatesAndTheOldestDueAge(t *testing.T) {
	testenv.ForEachReal(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "fixed", 8, rmq.FixedTime)
		var first time.Time // the earliest due time
		for i := range 10 {
			due := time.Now().Add(time.Duration(50+i*100) * time.Millisecond)
			if i == 0 {
				first = due
			}
			require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "fixed", Content: fmt.Appendf(nil, "m%d", i),
				FixedTime: due}))
		}
		time.Sleep(300 * time.Millisecond)
		before := time.Since(first)
		bl, err := c.Backlog(ctx, "fixed")
		require.NoError(t, err)
		after := time.Since(first)
		assert.Equal(t, int64(10), bl.Store)
		assert.Len(t, bl.Slots, 8)
		// The age is read by the Redis clock between before and after, and the
		// due time was rounded up to the millisecond.
		assert.GreaterOrEqual(t, bl.OldestDueAge, before-50*time.Millisecond)
		assert.LessOrEqual(t, bl.OldestDueAge, after+50*time.Millisecond)
		again, err := c.Backlog(ctx, "fixed")
		require.NoError(t, err)
		assert.Equal(t, bl.Read, again.Read, "within a second the last read is served")
		_, err = c.Backlog(ctx, "nope")
		assert.ErrorIs(t, err, rmq.ErrUnknownTopic)
	})
}

// Every client's metrics add up in the namespace's shared metrics, which the
// CLI and the dashboard read.
func TestNamespaceMetricsAddUpEveryClient(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ns := testenv.Namespace(t, b)
		var clients []*rmq.Client
		for range 2 {
			c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
			require.NoError(t, err)
			define(t, c, "fixed", 4, rmq.FixedTime)
			clients = append(clients, c)
		}
		rec := newRecorder()
		require.NoError(t, clients[0].Subscribe("fixed", rec))
		done := make(chan error, 1)
		go func() { done <- clients[0].Start(ctx) }()
		for i := range 10 {
			require.NoError(t, clients[i%2].Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "fixed",
				Content: fmt.Appendf(nil, "m%d", i), FixedTime: time.Now().Add(50 * time.Millisecond)}))
		}
		rec.waitCalls(t, 10, 10*time.Second)
		for _, c := range clients {
			require.NoError(t, c.Close(ctx))
		}
		require.NoError(t, <-done)

		m, minutes, err := clients[0].NamespaceMetrics(ctx, "fixed", 5)
		require.NoError(t, err)
		assert.Equal(t, int64(10), m.Sent, "both producers")
		assert.Equal(t, int64(10), m.Delivered)
		assert.Equal(t, int64(10), m.Committed)
		assert.Equal(t, uint64(10), m.Lateness.Count)
		assert.Equal(t, uint64(10), m.ListenerDuration.Count)
		require.Len(t, minutes, 5)
		var sent int64
		for _, mm := range minutes {
			sent += mm.Sent
		}
		assert.Equal(t, int64(10), sent, "the last minutes hold every send")
		assert.WithinDuration(t, time.Now(), minutes[4].Minute, time.Minute)
	})
}

// TopicMetrics (which the metrics flush calls every 2 s once the client has
// sent) may run while Subscribe adds subscriptions: the race detector, or
// the runtime's check of a map read while it is written, fails this.
func TestTopicMetricsWhileSubscribing(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		const topics = 64
		for i := range topics {
			define(t, c, fmt.Sprintf("t%d", i), 1, rmq.Priority)
		}
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t0", Content: []byte("m"), Priority: 20}))
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range topics {
				if err := c.Subscribe(fmt.Sprintf("t%d", i), newRecorder()); err != nil {
					t.Error(err)
				}
			}
		}()
		for {
			_ = c.TopicMetrics()
			select {
			case <-done:
				assert.Equal(t, 1, int(topicMetrics(c, "t0").Sent))
				return
			default:
			}
		}
	})
}
