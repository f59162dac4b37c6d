package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// RequeueDead returns how many dead messages moved: a content named twice
// moves, and counts, once.
func TestRequeueDeadCountsAContentNamedTwiceOnce(t *testing.T) {
	b := testenv.Single(t)
	ctx := context.Background()
	c := newClient(t, b)
	define(t, c, "rq", 1, rmq.Priority)
	dead := c.Namespace() + ":{rq:0}:dead"
	require.NoError(t, b.Redis.ZAdd(ctx, dead, redis.Z{Score: float64(time.Now().UnixMilli()), Member: "x"}).Err())
	require.Equal(t, int64(1), stats(t, c, "rq").Dead)
	n, err := c.RequeueDead(ctx, "rq", []byte("x"), []byte("x"))
	require.NoError(t, err)
	st := stats(t, c, "rq")
	assert.Equal(t, int64(1), st.Store+st.Retry, "one message moved")
	assert.Equal(t, int64(1), n, "RequeueDead's count of messages moved")
}
