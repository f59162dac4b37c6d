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
	"github.com/rmq-go/rmq/internal/testenv"
)

// slotKeyOf is a slot key of topic in c's namespace.
func slotKeyOf(c *rmq.Client, topic string, slot int, kind string) string {
	return fmt.Sprintf("%s:{%s:%d}:%s", c.Namespace(), topic, slot, kind)
}

// TestNextDueLimitKeepsPopOrder: NextDue(limit) must be the first
// limit messages of the order the consumer takes them, which NextDue with a
// larger limit shows. Two retries whose backoff is over (retries left 15 and
// 2) and a retried message in store (retries left 5): the consumer's next
// cycle moves both retries to store with scores 15 and 2 and pops lowest
// first: the one with 2 left, then the store's, then the other.
func TestNextDueLimitKeepsPopOrder(t *testing.T) {
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "nd", 1, rmq.FixedTime)
		now := time.Now().UnixMilli()
		require.NoError(t, b.Redis.ZAdd(ctx, slotKeyOf(c, "nd", 0, "store"), redis.Z{Score: 5, Member: "stored"}).Err())
		require.NoError(t, b.Redis.ZAdd(ctx, slotKeyOf(c, "nd", 0, "retry"),
			redis.Z{Score: float64((now-2000)*32 + 15), Member: "early"},
			redis.Z{Score: float64((now-1000)*32 + 2), Member: "late"}).Err())
		all, err := c.NextDue(ctx, "nd", 0, 10)
		require.NoError(t, err)
		var order []string
		for _, m := range all {
			order = append(order, string(m.Content))
		}
		require.Equal(t, []string{"late", "stored", "early"}, order, "the full listing")
		first, err := c.NextDue(ctx, "nd", 0, 1)
		require.NoError(t, err)
		require.Len(t, first, 1)
		assert.Equal(t, "late", string(first[0].Content), "NextDue(1) must name the message the consumer takes first, as NextDue(10) does")
	})
}
