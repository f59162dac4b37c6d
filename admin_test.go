package rmq_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

func TestCancelRemovesPendingMessages(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "orders", 16, rmq.FixedTime)
		p := c.Producer()
		at := time.Now().Add(time.Hour)
		require.NoError(t, p.Send(ctx, rmq.FixedTimeMessage{Topic: "orders", Content: []byte("order:9"), FixedTime: at}))
		require.NoError(t, p.Send(ctx, rmq.FixedTimeMessage{Topic: "orders", Content: []byte("order:10"), FixedTime: at, SlotBasis: "user:1"}))
		assert.Equal(t, int64(2), stats(t, c, "orders").Store)
		removed, err := p.Cancel(ctx, "orders", []byte("order:9"), "")
		require.NoError(t, err)
		assert.True(t, removed)
		removed, err = p.Cancel(ctx, "orders", []byte("order:9"), "")
		require.NoError(t, err)
		assert.False(t, removed, "already cancelled")
		removed, err = p.Cancel(ctx, "orders", []byte("order:10"), "user:1")
		require.NoError(t, err)
		assert.True(t, removed)
		assert.Equal(t, int64(0), stats(t, c, "orders").Store)
		_, err = p.Cancel(ctx, "nope", []byte("x"), "")
		assert.ErrorIs(t, err, rmq.ErrUnknownTopic)
		_, err = p.Cancel(ctx, "orders", nil, "")
		assert.ErrorIs(t, err, rmq.ErrEmptyContent)
	})
}

func TestDeadMessagesCanBeListedRequeuedAndPurged(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithRetryBackoff(rmq.NoBackoff))
		define(t, c, "d", 4, rmq.Priority)
		var healthy atomic.Bool
		r := newRecorder()
		r.fail = func(*rmq.Message) error {
			if healthy.Load() {
				return nil
			}
			return errBoom
		}
		require.NoError(t, c.Subscribe("d", r))
		var msgs []rmq.OutgoingMessage
		for i := range 3 {
			msgs = append(msgs, rmq.PriorityMessage{Topic: "d", Content: fmt.Appendf(nil, "x%d", i), Priority: 20})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
		run(t, c)
		eventually(t, 10*time.Second, "all dead", func() bool { return stats(t, c, "d").Dead == 3 })
		dead, err := c.DeadMessages(ctx, "d", 2)
		require.NoError(t, err)
		assert.Len(t, dead, 2, "limit applies")

		healthy.Store(true)
		before := len(r.snapshot())
		n, err := c.RequeueDead(ctx, "d", []byte("x1"))
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)
		r.waitCalls(t, before+1, 5*time.Second)
		last := r.snapshot()[before]
		assert.Equal(t, "x1", last.content)
		assert.Equal(t, 1, last.msg.Attempt, "requeued with fresh retries")
		eventually(t, 5*time.Second, "x1 done", func() bool { return stats(t, c, "d").Dead == 2 })

		purged, err := c.PurgeDead(ctx, "d")
		require.NoError(t, err)
		assert.Equal(t, int64(2), purged)
		eventually(t, 5*time.Second, "nothing left", func() bool {
			st := stats(t, c, "d")
			return st.Dead+st.Store+st.Prepare == 0
		})
		_, err = c.RequeueDead(ctx, "nope")
		assert.ErrorIs(t, err, rmq.ErrUnknownTopic)
	})
}
