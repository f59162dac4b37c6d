package rmq_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Close while listeners run, called from several goroutines at once: every
// Close returns nil, every message in flight is finished (committed) or
// handed back to store, none is lost or left in prepare.
func TestConcurrentCloseWhileListenersRun(t *testing.T) {
	testenv.ForEachReal(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "t", 8, rmq.Priority)
		var mu sync.Mutex
		committed := map[string]int{}
		var entered atomic.Int32
		require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
			entered.Add(1)
			time.Sleep(100 * time.Millisecond)
			mu.Lock()
			committed[string(m.Content)]++
			mu.Unlock()
			return nil
		}), rmq.WithThreads(4)))
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		const n = 200
		var msgs []rmq.OutgoingMessage
		for i := range n {
			msgs = append(msgs, rmq.PriorityMessage{Topic: "t", Content: fmt.Appendf(nil, "m%d", i), Priority: 20})
		}
		admin := newClientIn(t, b, c.Namespace())
		require.NoError(t, admin.Producer().SendBatch(ctx, msgs...))
		eventually(t, 10*time.Second, "listeners run", func() bool { return entered.Load() >= 4 })

		closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = c.Close(closeCtx) })
		}
		wg.Wait()
		for i, err := range errs {
			assert.NoError(t, err, "Close %d", i)
		}
		require.NoError(t, <-done)

		st := stats(t, admin, "t")
		mu.Lock()
		defer mu.Unlock()
		assert.Zero(t, st.Prepare, "nothing left in prepare after a graceful Close")
		assert.Zero(t, st.Retry+st.Dead, "nothing failed")
		assert.Equal(t, int64(n), st.Store+int64(len(committed)), "every message committed or back in store")
		for m, k := range committed {
			assert.Equal(t, 1, k, "%s delivered more than once", m)
		}
		for _, p := range mustNextDue(t, admin, "t", 8) {
			assert.Equal(t, 16, p.RetriesLeft, "%s handed back with a retry spent", p.Content)
		}
	})
}

// A closed client writes nothing to Redis: DefineTopic, PauseTopic,
// SetRateLimit and DeleteTopic fail with ErrClosed, as the producer's calls
// do, and change nothing.
func TestClosedClientWritesNothing(t *testing.T) {
	testenv.ForEachReal(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "t", 4, rmq.Priority)
		define(t, c, "gone", 4, rmq.Priority)
		require.NoError(t, c.Close(ctx))
		admin := newClientIn(t, b, c.Namespace())

		assert.ErrorIs(t, c.DefineTopic(ctx, rmq.Topic{Name: "new", SlotAmount: 4, Type: rmq.Priority}), rmq.ErrClosed)
		assert.ErrorIs(t, c.PauseTopic(ctx, "t"), rmq.ErrClosed)
		assert.ErrorIs(t, c.SetRateLimit(ctx, "t", rmq.RateLimit{PerSecond: 5, Burst: 1}), rmq.ErrClosed)
		assert.ErrorIs(t, c.DeleteTopic(ctx, "gone"), rmq.ErrClosed)

		topics, err := admin.Topics(ctx)
		require.NoError(t, err)
		var names []string
		for _, tp := range topics {
			names = append(names, tp.Name)
		}
		assert.Equal(t, []string{"gone", "t"}, names, "a closed client defined or deleted a topic")
		fc, err := admin.FlowControls(ctx)
		require.NoError(t, err)
		assert.Empty(t, fc, "a closed client changed the flow controls")
	})
}

// After Close, and after the caller closed its Redis client as Close's doc
// says it may, Subscribe of a topic the client never looked up fails with
// ErrClosed (not the Redis client's error from a read it had no need for).
func TestSubscribeAfterCloseReadsNothing(t *testing.T) {
	b := testenv.Single(t)
	ctx := context.Background()
	r := redis.NewClient(&redis.Options{Addr: b.Redis.(*redis.Client).Options().Addr})
	admin := newClient(t, b)
	define(t, admin, "t", 1, rmq.Priority)
	c, err := rmq.New(r, rmq.WithNamespace(admin.Namespace()))
	require.NoError(t, err)
	require.NoError(t, c.Close(ctx))
	require.NoError(t, r.Close())
	assert.ErrorIs(t, c.Subscribe("t", newRecorder()), rmq.ErrClosed)
}
