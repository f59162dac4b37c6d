package rmq_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// keyFailHook fails, while down, every command that names key (the cycle
// script of one slot names its store key), at once, as Redis answers a
// script refused for OOM (maxmemory, noeviction) or a READONLY replica.
type keyFailHook struct {
	key   string
	down  *atomic.Bool
	calls *atomic.Int64
}

func (h keyFailHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h keyFailHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.down.Load() {
			for _, a := range cmd.Args() {
				if s, ok := a.(string); ok && s == h.key {
					h.calls.Add(1)
					err := errors.New("OOM command not allowed when used memory > 'maxmemory' (injected)")
					cmd.SetErr(err)
					return err
				}
			}
		}
		return next(ctx, cmd)
	}
}

func (h keyFailHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A held message due while its slot's node fails is handed over without a
// Redis call, and the look that was due too waits for the node's backoff
// (50 ms doubling to 5 s). (pick hands out a slot whose held message is due
// before it looks at the backoff, and serve popped instead: a busy loop of
// failing cycle calls, the held message never delivered meanwhile.)
func TestHeldMessageDueWhileItsNodeFails(t *testing.T) {
	b := testenv.Single(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	var down atomic.Bool
	var calls atomic.Int64
	rc := redis.NewClient(b.Redis.(*redis.Client).Options())
	t.Cleanup(func() { rc.Close() })
	rc.AddHook(keyFailHook{key: ns + ":{hb:0}:store", down: &down, calls: &calls})
	c, err := rmq.New(rc, rmq.WithNamespace(ns), rmq.WithIdlePoll(100*time.Millisecond), rmq.WithLogger(debugLogger()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	define(t, c, "hb", 1, rmq.FixedTime)
	r := newRecorder()
	require.NoError(t, c.Subscribe("hb", r, rmq.WithLookahead(5*time.Second)))
	due := time.Now().Add(2 * time.Second)
	require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "hb", Content: []byte("held"), FixedTime: due}))
	run(t, c)
	eventually(t, 1500*time.Millisecond, "the message popped ahead and held", func() bool { return stats(t, c, "hb").Prepare == 1 })
	require.True(t, time.Now().Before(due.Add(-300*time.Millisecond)), "too slow to set up")
	down.Store(true) // the slot's cycles fail from now on
	downAt := time.Now()
	time.Sleep(time.Until(due))
	before := calls.Load()
	t.Logf("failing cycle calls in the %v before its due time by the local clock (the spin may start a few ms early, by the Redis clock): %d",
		time.Since(downAt).Round(time.Millisecond), before)
	time.Sleep(2 * time.Second)
	during := calls.Load() - before
	down.Store(false)
	t.Logf("failing cycle calls of the slot in the 2 s after the held message fell due: %d (deliveries %v)", during, r.contents())
	require.Less(t, during, int64(40), "the thread spins on a failing Redis while a held message is due")
	r.waitCalls(t, 1, 5*time.Second)
}
