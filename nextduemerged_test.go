package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A RangeMerge copy sent while its content waits out a retry's backoff
// merges into the retry (README: "due at the retry's time, its retries
// counted on"): NextDue lists the one message once, as the retry, and the
// consumer delivers it once more, Attempt 2. (NextDue listed it twice: the
// copy in store, due at once with fresh retries, and the retry.)
func TestNextDueListsACopyMergedIntoARetryOnce(t *testing.T) {
	t.Parallel() // waits out a backoff, reads nothing process-wide
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithRetryBackoff(rmq.SteppedBackoff(2*time.Second)))
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
		require.NoError(t, p.Send(ctx, rmq.RangeMergeMessage{Topic: "rm", Content: []byte("sku"), TimeRange: time.Millisecond}))
		time.Sleep(50 * time.Millisecond)
		nd, err := c.NextDue(ctx, "rm", 0, 10)
		require.NoError(t, err)
		for _, m := range nd {
			t.Logf("NextDue: %s due %v retrying %v retriesLeft %d", m.Content, m.Due, m.Retrying, m.RetriesLeft)
		}
		st := stats(t, c, "rm")
		t.Logf("stats: store %d retry %d pending %d", st.Store, st.Retry, st.Pending())
		calls := r.waitCalls(t, 2, 5*time.Second)
		time.Sleep(time.Second)
		require.Len(t, r.snapshot(), 2, "merged: delivered once more")
		require.Equal(t, 2, calls[1].msg.Attempt)
		require.Len(t, nd, 1, "one message waits: NextDue lists it once")
		require.True(t, nd[0].Retrying, "as the retry")
	})
}
