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

// A rate limit "applies within a second" (README, Flow control), yet
// messages a lookahead popped ahead before the limit was set are delivered
// at their due time all at once, seconds after the limit was read: here 60
// messages in one instant under a limit of 2/s with a burst of 1.
func TestRateLimitAppliesToMessagesHeldBeforeIt(t *testing.T) {
	b := testenv.Single(t)
	ctx := context.Background()
	c := newClient(t, b, rmq.WithIdlePoll(time.Minute))
	define(t, c, "ahead", 1, rmq.FixedTime)
	var calls atomic.Int64
	require.NoError(t, c.Subscribe("ahead", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
		calls.Add(1)
		return nil
	}), rmq.WithLookahead(10*time.Second)))
	run(t, c)
	awaitHeld(t, c, "ahead", 1, 0)
	now := time.Now()
	due := now.Add(4 * time.Second)
	msgs := []rmq.OutgoingMessage{rmq.FixedTimeMessage{Topic: "ahead", Content: []byte("first"), FixedTime: now.Add(100 * time.Millisecond)}}
	for i := range 60 {
		msgs = append(msgs, rmq.FixedTimeMessage{Topic: "ahead", Content: fmt.Appendf(nil, "m%d", i), FixedTime: due})
	}
	require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
	eventually(t, 5*time.Second, "first delivered", func() bool { return calls.Load() == 1 })
	eventually(t, 3*time.Second, "the messages popped ahead and held", func() bool { return stats(t, c, "ahead").Prepare == 60 })

	require.NoError(t, c.SetRateLimit(ctx, "ahead", rmq.RateLimit{PerSecond: 2, Burst: 1}))
	limited := time.Now()
	ahead := time.Until(due)
	require.Greater(t, ahead, 1500*time.Millisecond, "too slow to set up: the limit must be read before the due time")
	time.Sleep(time.Until(due) + 1500*time.Millisecond)
	got := calls.Load() - 1
	elapsed := time.Since(limited)
	t.Logf("delivered %d in the %v after a limit of 2/s (burst 1) was set", got, elapsed.Round(time.Millisecond))
	// Generous: the limit plus its burst plus a second of grace for the change to apply.
	assert.LessOrEqual(t, got, int64(2*elapsed.Seconds())+1+2,
		"messages held by the lookahead are delivered past the rate limit set %v before their due time", ahead.Round(time.Millisecond))
}
