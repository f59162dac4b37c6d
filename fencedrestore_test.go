package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A worker whose pop is refused (another owner's record on its slot) hands
// the messages it popped ahead and had not started back as they were, not
// through the consume timeout: they are delivered at their due times as
// first deliveries, no retry spent.
func TestRefusedPopHandsHeldMessagesBack(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c, r, due := holdAhead(t, b, 4*time.Second)

		// Another owner's record on the slot: the worker's next pop is refused.
		owner := rdb.NewKeyspace(c.Namespace()).OwnerKeys("ahead", 1)[0]
		require.NoError(t, b.Redis.Set(ctx, owner, "1:ghost", 0).Err())
		require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "ahead", Content: []byte("now"), FixedTime: time.Now().Add(10 * time.Millisecond)}))
		// Back in store at once, they are popped ahead again once the slot
		// is claimed anew (the record names no live member), and delivered
		// at their due time; left in prepare, they would wait out the
		// consume timeout (30 s) and come with a retry spent.
		calls := r.waitCalls(t, 7, 10*time.Second)
		for _, d := range calls {
			assert.Equal(t, 1, d.msg.Attempt, "%s delivered with a retry spent", d.content)
			if d.content != "first" && d.content != "now" {
				assert.False(t, d.at.Before(due), "%s delivered early", d.content)
			}
		}
	})
}
