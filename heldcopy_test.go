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

// TestEarlierCopyOfAHeldMessageComesRightAfterIt: under a
// lookahead, a FixedTime message popped ahead and held (due at +800 ms) is
// sent again with an earlier time (+400 ms). The copy waits in store until
// the held one is settled (README: "delivered again after it"), but once the
// held one has been delivered, the copy is overdue: it must come right after
// it, not when the held message's commit has lingered for its full bound
// (1 s with a lookahead of 1 s), since a linger never postpones a due message.
func TestEarlierCopyOfAHeldMessageComesRightAfterIt(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithIdlePoll(time.Minute))
		define(t, c, "heldcopy", 1, rmq.FixedTime)
		r := newRecorder()
		require.NoError(t, c.Subscribe("heldcopy", r, rmq.WithLookahead(time.Second)))
		run(t, c)
		awaitHeld(t, c, "heldcopy", 1, 100*time.Millisecond)

		now := time.Now()
		require.NoError(t, c.Producer().SendBatch(ctx,
			rmq.FixedTimeMessage{Topic: "heldcopy", Content: []byte("kick"), FixedTime: now.Add(100 * time.Millisecond)},
			rmq.FixedTimeMessage{Topic: "heldcopy", Content: []byte("order"), FixedTime: now.Add(800 * time.Millisecond)}))
		r.waitCalls(t, 1, 2*time.Second) // the pop at +100 ms took "order" along, held until +800 ms
		eventually(t, 200*time.Millisecond, "order popped ahead", func() bool { return stats(t, c, "heldcopy").Store == 0 })
		earlier := now.Add(400 * time.Millisecond)
		require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "heldcopy", Content: []byte("order"),
			FixedTime: earlier}))

		calls := r.waitCalls(t, 3, 5*time.Second)[1:]
		for _, d := range calls {
			t.Logf("delivered due %v at +%v", d.msg.Due.Sub(now).Round(time.Millisecond), d.at.Sub(now).Round(time.Millisecond))
			assert.False(t, d.at.Before(d.msg.Due), "never early")
		}
		gap := calls[1].at.Sub(calls[0].at)
		assert.Less(t, gap, 400*time.Millisecond,
			"the overdue copy (due +400 ms) came %v after the held one was delivered", gap)
	})
}
