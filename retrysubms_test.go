package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A positive retry backoff below a millisecond is still a wait ("Zero or less
// retries at once"; a retry is "due at the first whole millisecond at least
// its wait after Redis hears of the failure ... so a retry never comes
// early"). The failed message then waits in the retry set, and the cycle
// that carries its rollback pops the slot's other due message first. A wait
// truncated to 0 ms instead makes the retry due at once, ahead of it.
func TestSubMillisecondBackoffIsNotZero(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithRetryBackoff(func(int) time.Duration { return 600 * time.Microsecond }))
		define(t, c, "sub", 1, rmq.FixedTime)
		p := c.Producer()
		now := time.Now()
		require.NoError(t, p.Send(ctx, rmq.FixedTimeMessage{Topic: "sub", Content: []byte("A"), FixedTime: now.Add(10 * time.Millisecond)}))
		require.NoError(t, p.Send(ctx, rmq.FixedTimeMessage{Topic: "sub", Content: []byte("B"), FixedTime: now.Add(20 * time.Millisecond)}))
		time.Sleep(100 * time.Millisecond)
		r := newRecorder()
		r.fail = func(m *rmq.Message) error {
			if string(m.Content) == "A" && m.Attempt == 1 {
				return errBoom
			}
			return nil
		}
		require.NoError(t, c.Subscribe("sub", r))
		run(t, c)
		r.waitCalls(t, 3, 5*time.Second)
		require.Equal(t, []string{"A", "B", "A"}, r.contents(), "A's retry waits 600µs, B is due already")
	})
}
