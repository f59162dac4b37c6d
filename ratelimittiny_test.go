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

// A tiny rate's wait for the next token, (1-tokens)/rate seconds, would
// overflow a Duration: the slot looks again after a second at most, never
// every millisecond (a busy loop it was, with the overflow made negative).
func TestTinyRateLimitDoesNotBusyLoop(t *testing.T) {
	b := testenv.Single(t)
	ctx := context.Background()
	c := newClient(t, b)
	define(t, c, "tiny", 1, rmq.Priority)
	define(t, c, "slow", 1, rmq.Priority)
	require.NoError(t, c.SetRateLimit(ctx, "tiny", rmq.RateLimit{PerSecond: 1e-12, Burst: 1}))
	require.NoError(t, c.SetRateLimit(ctx, "slow", rmq.RateLimit{PerSecond: 1e-3, Burst: 1}))
	r := newRecorder()
	require.NoError(t, c.Subscribe("tiny", r))
	require.NoError(t, c.Subscribe("slow", r))
	run(t, c)
	p := c.Producer()
	for _, topic := range []string{"tiny", "slow"} {
		for _, m := range []string{"a", "b"} {
			require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: topic, Content: []byte(m), Priority: 20}))
		}
	}
	r.waitCalls(t, 2, 10*time.Second) // each topic's burst of 1
	time.Sleep(200 * time.Millisecond)
	tiny0, slow0 := topicMetrics(c, "tiny").HeldBack["limit"], topicMetrics(c, "slow").HeldBack["limit"]
	time.Sleep(time.Second)
	tiny := topicMetrics(c, "tiny").HeldBack["limit"] - tiny0
	slow := topicMetrics(c, "slow").HeldBack["limit"] - slow0
	t.Logf("slot turns held back by the limit in 1 s: rate 1e-12/s %d, rate 1e-3/s %d", tiny, slow)
	assert.Less(t, tiny, int64(50), "a slot waiting for a token far away must not look again every millisecond")
}
