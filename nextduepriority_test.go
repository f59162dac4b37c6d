package rmq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// On a Priority topic NextDue lists a retry whose backoff is over where the
// consumer takes it: its next cycle moves it to store with its retries left
// (9) as its score, before a retried message already there (3). (It was
// listed after every message in store.) The state arises when a retry falls
// due while the slot's listener is busy, after another failure was moved
// back to store; here it is written to the keys.
func TestNextDueListsAReadyRetryOfAPriorityTopicInPopOrder(t *testing.T) {
	t.Parallel() // reads nothing process-wide
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		topic := "nd"
		define(t, c, topic, 1, rmq.Priority)
		k := func(s string) string { return fmt.Sprintf("%s:{%s:0}:%s", c.Namespace(), topic, s) }
		nowMs := time.Now().UnixMilli()
		store := []redis.Z{{Score: 100, Member: "p100"}, {Score: 50, Member: "p50"}, {Score: 3, Member: "rolled3"}}
		require.NoError(t, b.Redis.ZAdd(ctx, k("store"), store...).Err())
		require.NoError(t, b.Redis.ZAdd(ctx, k("retry"),
			redis.Z{Score: float64((nowMs-50)*32 + 9), Member: "ready9"},
			redis.Z{Score: float64((nowMs+1000)*32 + 2), Member: "waiting2"}).Err())
		nd, err := c.NextDue(ctx, topic, 0, 10)
		require.NoError(t, err)
		var listed []string
		for _, m := range nd {
			listed = append(listed, string(m.Content))
		}
		r := newRecorder()
		require.NoError(t, c.Subscribe(topic, r, rmq.WithThreads(1)))
		run(t, c)
		calls := r.waitCalls(t, len(nd), 10*time.Second)
		t.Logf("NextDue %v, delivered %v", listed, r.contents())
		require.Equal(t, listed, r.contents()[:len(calls)], "NextDue's order is the consumer's")
	})
}
