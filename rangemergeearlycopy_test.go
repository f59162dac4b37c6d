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

// TestRangeMergeCopyDueBeforeRetryMerges: README: "A message waiting
// out a retry's backoff waits too: a RangeMerge copy sent meanwhile merges
// into it". A copy whose own due time comes before the backoff ends must
// still make one delivery with the retry, not a delivery of its own and then
// the retry's.
func TestRangeMergeCopyDueBeforeRetryMerges(t *testing.T) {
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithRetryBackoff(rmq.SteppedBackoff(time.Second)))
		define(t, c, "rmb", 1, rmq.RangeMerge)
		r := newRecorder()
		r.fail = func(m *rmq.Message) error {
			if m.Attempt == 1 && len(r.snapshot()) == 1 {
				return errBoom
			}
			return nil
		}
		require.NoError(t, c.Subscribe("rmb", r))
		run(t, c)
		p := c.Producer()
		require.NoError(t, p.Send(ctx, rmq.RangeMergeMessage{Topic: "rmb", Content: []byte("sku"), TimeRange: time.Millisecond}))
		r.waitCalls(t, 1, 5*time.Second)
		eventually(t, 5*time.Second, "the failure waits out its backoff", func() bool { return stats(t, c, "rmb").Retry == 1 })
		require.NoError(t, p.Send(ctx, rmq.RangeMergeMessage{Topic: "rmb", Content: []byte("sku"), TimeRange: 100 * time.Millisecond}))
		time.Sleep(2500 * time.Millisecond)
		calls := r.snapshot()
		for i, d := range calls {
			t.Logf("call %d: attempt %d at %v", i, d.msg.Attempt, d.at.Format("15:04:05.000"))
		}
		assert.Equal(t, 2, len(calls), "the copy merged into the waiting retry: one more delivery, not two (the copy's at its own due time as a first delivery, then the retry's)")
	})
}
