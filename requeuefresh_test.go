package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// TestRequeueDeadGivesFreshRetriesToAPendingCopy: RequeueDead promises fresh retries.
// Content x dies (17 failed deliveries); x is sent again and fails down to 2
// retries left, when its consumer shuts down (the rollback settled: x waits
// in store with 2 retries left). An operator requeues the dead x: it counts
// as requeued, yet the next delivery has 2 retries left, not 16.
func TestRequeueDeadGivesFreshRetriesToAPendingCopy(t *testing.T) {
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithRetryBackoff(rmq.NoBackoff))
		define(t, c, "fr", 1, rmq.Priority)
		admin := newClientIn(t, b, c.Namespace())
		closed := make(chan error, 1)
		var calls int
		require.NoError(t, c.Subscribe("fr", rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
			calls++
			if calls == 17+14 { // the second copy's delivery with 3 retries left
				go func() { closed <- c.Close(context.Background()) }()
				time.Sleep(300 * time.Millisecond) // the shutdown under way: no more pops
			}
			return errBoom
		}), rmq.WithBreaker(rmq.Breaker{})))
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		p := admin.Producer()
		require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "fr", Content: []byte("x"), Priority: 20}))
		eventually(t, 10*time.Second, "x dead", func() bool { return stats(t, admin, "fr").Dead == 1 })
		require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "fr", Content: []byte("x"), Priority: 20}))
		require.NoError(t, <-closed)
		require.NoError(t, <-done)
		pend, err := admin.NextDue(ctx, "fr", 0, 10)
		require.NoError(t, err)
		require.Len(t, pend, 1, "%+v %d", stats(t, admin, "fr"), calls)
		require.Equal(t, 2, pend[0].RetriesLeft, "x waits in store with 2 retries left")

		n, err := admin.RequeueDead(ctx, "fr", []byte("x"))
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "the dead x counts as requeued")
		assert.Equal(t, int64(0), stats(t, admin, "fr").Dead)

		c2 := newClientIn(t, b, c.Namespace())
		r := newRecorder()
		require.NoError(t, c2.Subscribe("fr", r))
		run(t, c2)
		got := r.waitCalls(t, 1, 10*time.Second)
		assert.Equal(t, 16, got[0].msg.RetriesLeft, "requeued with fresh retries (RequeueDead's doc); the dead x was merged into the copy with 2 left")
		assert.Equal(t, 1, got[0].msg.Attempt)
	})
}
