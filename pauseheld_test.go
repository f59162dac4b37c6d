package rmq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A pause hands the messages a lookahead holds for their due times back when
// it is read, not at those due times: they are in store again, where Cancel
// finds them, and delivered after the resume at their due times.
func TestPauseHandsHeldMessagesBackAtOnce(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c, r, due := holdAhead(t, b, 4*time.Second)

		require.NoError(t, c.PauseTopic(ctx, "ahead"))
		paused := time.Now()
		eventually(t, 2*time.Second, "the held messages back in store", func() bool {
			st := stats(t, c, "ahead")
			return st.Prepare == 0 && st.Store == 5
		})
		require.Less(t, time.Since(paused), 3*time.Second, "handed back before their due time")
		key := c.Namespace() + ":{ahead:0}:store"
		for i := range 5 {
			s, err := b.Redis.ZScore(ctx, key, fmt.Sprintf("m%d", i)).Result()
			require.NoError(t, err)
			assert.Equal(t, float64(due.UnixMilli()), s, "m%d keeps its due time", i)
		}
		n, err := c.Producer().Cancel(ctx, "ahead", []byte("m0"), "")
		require.NoError(t, err)
		assert.True(t, n, "Cancel finds a message handed back")

		require.NoError(t, c.ResumeTopic(ctx, "ahead"))
		calls := r.waitCalls(t, 5, 10*time.Second)
		seen := map[string]bool{}
		for _, d := range calls[1:] {
			seen[d.content] = true
			assert.False(t, d.at.Before(due), "%s delivered early", d.content)
		}
		assert.Equal(t, map[string]bool{"m1": true, "m2": true, "m3": true, "m4": true}, seen)
	})
}

// holdAhead starts a consumer with a 10 s lookahead of topic "ahead" (one
// slot), sends it "first", due at once, and m0..m4, due in dueIn, and returns
// once "first" was delivered and m0..m4 are held (popped ahead, in prepare),
// with their due time.
func holdAhead(t *testing.T, b testenv.Backend, dueIn time.Duration) (*rmq.Client, *recorder, time.Time) {
	t.Helper()
	c := newClient(t, b, rmq.WithIdlePoll(time.Minute))
	define(t, c, "ahead", 1, rmq.FixedTime)
	r := newRecorder()
	require.NoError(t, c.Subscribe("ahead", r, rmq.WithLookahead(10*time.Second)))
	run(t, c)
	awaitHeld(t, c, "ahead", 1, 0)
	now := time.Now().Truncate(time.Millisecond)
	due := now.Add(dueIn)
	msgs := []rmq.OutgoingMessage{rmq.FixedTimeMessage{Topic: "ahead", Content: []byte("first"), FixedTime: now.Add(100 * time.Millisecond)}}
	for i := range 5 {
		msgs = append(msgs, rmq.FixedTimeMessage{Topic: "ahead", Content: fmt.Appendf(nil, "m%d", i), FixedTime: due})
	}
	require.NoError(t, c.Producer().SendBatch(context.Background(), msgs...))
	r.waitCalls(t, 1, 5*time.Second)
	eventually(t, 2*time.Second, "the rest held", func() bool { return stats(t, c, "ahead").Prepare == 5 })
	return c, r, due
}
