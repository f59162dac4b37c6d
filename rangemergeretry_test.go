package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A RangeMerge copy sent while the message waits out its retry backoff
// merges into it and keeps its first due time (the retry's), as the same
// copy does when the retry is due at once (NoBackoff): it must not push the
// retry back to the copy's own, later, due time.
func TestRangeMergeCopyDuringRetryKeepsFirstDue(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithRetryBackoff(rmq.SteppedBackoff(700*time.Millisecond)))
		define(t, c, "rm", 1, rmq.RangeMerge)
		r := newRecorder()
		r.fail = func(m *rmq.Message) error {
			if m.Attempt == 1 {
				return errBoom
			}
			return nil
		}
		require.NoError(t, c.Subscribe("rm", r))
		run(t, c)
		p := c.Producer()
		require.NoError(t, p.Send(ctx, rmq.RangeMergeMessage{Topic: "rm", Content: []byte("sku"), TimeRange: time.Millisecond}))
		r.waitCalls(t, 1, 5*time.Second)
		eventually(t, 5*time.Second, "the failure waits out its backoff", func() bool { return stats(t, c, "rm").Retry == 1 })
		require.NoError(t, p.Send(ctx, rmq.RangeMergeMessage{Topic: "rm", Content: []byte("sku"), TimeRange: time.Hour}))
		calls := r.waitCalls(t, 2, 5*time.Second)
		require.Equal(t, 2, calls[1].msg.Attempt)
	})
}
