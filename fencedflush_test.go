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

// A flush that the slot's owner record refuses (another owner took the slot
// while a listener held a message) settles nothing; the messages of the
// batch never started still go back to store at once, sent without the
// fence, as after a refused pop. They waited out the consume timeout in
// prepare, a retry spent.
func TestRefusedFlushHandsUnstartedMessagesBack(t *testing.T) {
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "t", 1, rmq.Priority)
		release := make(chan struct{})
		rec := newRecorder()
		rec.fail = func(m *rmq.Message) error {
			if string(m.Content) == "a" {
				<-release
			}
			return nil
		}
		require.NoError(t, c.Subscribe("t", rec))
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		p := c.Producer()
		require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("warm"), Priority: 100}))
		rec.waitCalls(t, 1, 10*time.Second)
		require.NoError(t, p.SendBatch(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("a"), Priority: 30},
			rmq.PriorityMessage{Topic: "t", Content: []byte("b"), Priority: 24},
			rmq.PriorityMessage{Topic: "t", Content: []byte("c"), Priority: 18}))
		rec.waitCalls(t, 2, 10*time.Second)
		require.Equal(t, int64(3), stats(t, c, "t").Prepare, "one pop took the three")

		// Another owner's record: the slot's next call is refused.
		owner := rdb.NewKeyspace(c.Namespace()).Slot("t", 0).Owner
		require.NoError(t, b.Redis.Set(ctx, owner, "999999999999999:another", 0).Err())
		closed := make(chan error, 1)
		go func() { closed <- c.Close(ctx) }()
		time.Sleep(200 * time.Millisecond)
		close(release)
		require.NoError(t, <-closed)
		require.NoError(t, <-done)

		st := stats(t, c, "t")
		assert.Equal(t, int64(2), st.Store, "b and c, never started, back in store")
		assert.Equal(t, int64(1), st.Prepare, "a's commit refused: it waits for the consume timeout")
		assert.Len(t, rec.snapshot(), 2, "b and c were not delivered")
	})
}
