package rmq

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// flakyBroker fails every Cycle while down, counting the calls.
type flakyBroker struct {
	rdb.Broker
	down   atomic.Bool
	cycles atomic.Int64
}

var errRedisDown = errors.New("injected: redis down")

func (b *flakyBroker) Cycle(ctx context.Context, keys rdb.SlotKeys, req *rdb.CycleRequest) (rdb.CycleResult, error) {
	b.cycles.Add(1)
	if b.down.Load() {
		return rdb.CycleResult{}, errRedisDown
	}
	return b.Broker.Cycle(ctx, keys, req)
}

// A failing Redis makes consumers back off (no busy loop) and recover.
func TestConsumersBackOffWhileRedisFailsAndRecover(t *testing.T) {
	b := testenv.Mini(t)
	c, err := New(b.Redis, WithNamespace("faults"))
	require.NoError(t, err)
	flaky := &flakyBroker{Broker: c.broker}
	c.broker = flaky
	ctx := context.Background()
	require.NoError(t, c.DefineTopic(ctx, Topic{Name: "t", SlotAmount: 8, Type: Priority}))
	got := make(chan string, 10)
	require.NoError(t, c.Subscribe("t", ListenerFunc(func(_ context.Context, m *Message) error {
		got <- string(m.Content)
		return nil
	}), WithThreads(2)))

	flaky.down.Store(true)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	time.Sleep(2 * time.Second)
	calls := flaky.cycles.Load()
	t.Logf("%d pop attempts in 2 s while Redis failed", calls)
	// Two threads, each backing off 50 ms, 100 ms, … 800 ms, 1.6 s: a dozen
	// attempts; a busy loop would make thousands.
	assert.Less(t, calls, int64(40), "consumers spin while Redis fails")
	assert.Positive(t, c.Metrics().RedisErrors)

	require.NoError(t, c.Producer().Send(ctx, PriorityMessage{Topic: "t", Content: []byte("after"), Priority: 50}))
	flaky.down.Store(false)
	select {
	case m := <-got:
		assert.Equal(t, "after", m)
	case <-time.After(10 * time.Second):
		t.Fatal("consumers did not recover after Redis came back")
	}
	require.NoError(t, c.Close(ctx))
	require.NoError(t, <-done)
}

// Producers return Redis errors to the caller.
func TestSendReturnsRedisErrors(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	r := redis.NewClient(&redis.Options{Addr: b.Mini.Addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer r.Close()
	c, err := New(r, WithNamespace("faults"))
	require.NoError(t, err)
	defer c.Close(ctx)
	require.NoError(t, c.DefineTopic(ctx, Topic{Name: "t", SlotAmount: 8, Type: Priority}))
	b.Mini.Close()
	err = c.Producer().Send(ctx, PriorityMessage{Topic: "t", Content: []byte("x"), Priority: 50})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topic "t"`)
	err = c.Producer().SendBatch(ctx, PriorityMessage{Topic: "t", Content: []byte("x"), Priority: 50})
	require.Error(t, err)
	_, err = c.Stats(ctx, "t")
	require.Error(t, err)
}
